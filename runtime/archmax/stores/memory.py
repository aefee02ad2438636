"""``MemoryStore``: the reference store, in one process's memory.

Rule source: BEHAVIOUR.md §9.1 (protocol), §9.3 (checkpoints), DESIGN.md §3 ("memory and
filesystem stores serialize writers with a lock"). The conformance suite treats it as the
reference every other store must match.

Checkpoints are kept as encoded chunk bytes (:mod:`archmax.stores.codec`), exactly as a durable
store keeps them, so a record that survives here survives serialization too, and the codec runs
on every commit and load. Files are bytes in a dict.
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from archmax.errors import CommitConflictError, PathExistsError, SessionStoreCapabilityError
from archmax.session.ids import validate_session_id
from archmax.session.records import Checkpoint
from archmax.stores import common as _common
from archmax.stores.base import Capability, DuePark, OldestPark, ReadGuards, SessionHead
from archmax.stores.codec import (
    chunk_bytes,
    chunk_counts,
    chunk_from_bytes,
    chunk_versions_to_load,
    decode_chunks,
    encode_chunk,
    head_of_chunk,
)
from archmax.stores.fallbacks import StoreFallbacks, local_capabilities


@dataclass
class _Session:
    chunks: builtins.list[bytes] = field(default_factory=list)
    """``chunks[v - 1]`` is version ``v``'s encoded chunk."""
    files: dict[str, bytes] = field(default_factory=dict)


class MemoryStore(StoreFallbacks):
    """A threadsafe in-memory :class:`~archmax.stores.base.SessionStore` (§9.1).

    Args:
        capabilities: Which of ``LIST``, ``DELETE``, ``UPLOAD_FILES`` it has; default all three
            (``APPEND_TEXT`` always). Tests pass a reduced set (e.g. ``StoreCapabilities(list=False)``)
            to exercise callers against a store lacking one. The AWS fast paths are declared absent.

    Example:
        >>> store = MemoryStore()
        >>> store.load("chat-42") is None
        True
    """

    def __init__(self, capabilities: Iterable[Capability] | None = None) -> None:
        self.capabilities = local_capabilities(capabilities, Capability.APPEND_TEXT)
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}
        self._specs: dict[str, bytes] = {}
        self._outbox: dict[str, tuple[int, str]] = {}
        """Session id -> (the version of its newest outbox mark, its workflow): sessions with entries to send."""

    # ------------------------------------------------------------------ checkpoints

    def load(self, session_id: str, *, reads: ReadGuards | None = None) -> Checkpoint | None:
        """The latest committed checkpoint (a fresh object), or ``None`` (§9.1).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
        """
        validate_session_id(session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or not session.chunks:
                return None
            latest = chunk_from_bytes(session.chunks[-1])
            raw = [session.chunks[v - 1] for v in chunk_versions_to_load(latest)]
        return _common.same_session(session_id, decode_chunks([chunk_from_bytes(b) for b in raw]))

    def head(self, session_id: str, *, reads: ReadGuards | None = None) -> SessionHead | None:
        """The latest version's head, read from its chunk alone, or ``None``.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
        """
        validate_session_id(session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or not session.chunks:
                return None
            latest = session.chunks[-1]
        return _common.same_session(session_id, head_of_chunk(chunk_from_bytes(latest)))

    def commit(
        self,
        session_id: str,
        record: Checkpoint,
        expected_version: int,
        *,
        lease_owner: str | None = None,
    ) -> None:
        """Create version ``expected_version + 1`` if nobody committed since it was read (§9.1, §3.12).

        Args:
            session_id: The session.
            record: The whole new record; ``record.session_id`` must be ``session_id`` and
                ``record.version`` must be ``expected_version + 1``.
            expected_version: The version the writer read (0 for a new session).
            lease_owner: When given, the stored latest record must hold a lease with this owner (a
                session with no stored record, or no lease, does not match).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: if the record does not fit ``session_id`` / ``expected_version``.
            CommitConflictError: the stored version is not ``expected_version``, or the lease owner differs.
        """
        validate_session_id(session_id)
        _common.check_record_fits(session_id, record, expected_version)
        with self._lock:
            session = self._sessions.setdefault(session_id, _Session())
            found = len(session.chunks)
            if found != expected_version:
                raise CommitConflictError(session_id, expected_version, found)
            previous = chunk_from_bytes(session.chunks[-1]) if session.chunks else None
            if lease_owner is not None:
                stored = head_of_chunk(previous) if previous is not None else None
                _common.check_lease_owner(session_id, expected_version, stored, lease_owner)
            chunk = encode_chunk(record, chunk_counts(previous) if previous is not None else None)
            mark = _common.outbox_mark(record)
            if mark is not None:
                self._outbox[session_id] = (mark, record.workflow)
            session.chunks.append(chunk_bytes(chunk))

    def outbox_pending(self, workflow: str | None = None) -> builtins.list[str]:
        """Ids of sessions a commit marked as having outbox entries to send, sorted (issue 20 item 2).

        Raises:
            SessionStoreCapabilityError: without the ``list`` capability.
        """
        if Capability.LIST not in self.capabilities:
            raise SessionStoreCapabilityError("list")
        with self._lock:
            return sorted(sid for sid, (_v, wf) in self._outbox.items() if workflow is None or wf == workflow)

    def outbox_settled(self, session_id: str, version: int, *, created_at: str | None = None) -> None:
        """Clear the session's outbox mark unless a commit after ``version`` made it (``created_at``: see the port)."""
        validate_session_id(session_id)
        with self._lock:
            mark = self._outbox.get(session_id)
            if mark is not None and mark[0] <= version:
                del self._outbox[session_id]

    def list(self) -> builtins.list[str]:
        """Ids of every session with a checkpoint, sorted (§9.1, needs ``list``).

        Raises:
            SessionStoreCapabilityError: without the ``list`` capability.
        """
        if Capability.LIST not in self.capabilities:
            raise SessionStoreCapabilityError("list")
        with self._lock:
            return sorted(sid for sid, s in self._sessions.items() if s.chunks)

    def due(self, now: str, workflow: str | None = None) -> builtins.list[tuple[str, str]]:
        """``(session_id, resume_at)`` of sessions parked on ``input`` with ``resume_at <= now``.

        Args:
            now: An instant string (§ conventions: string order is time order).
            workflow: Only sessions of this workflow, when given.

        Returns:
            Pairs ordered by ``resume_at``, then id (BEHAVIOUR.md §11 ``sweep``).

        Raises:
            SessionStoreCapabilityError: without the ``list`` capability.
        """
        if Capability.LIST not in self.capabilities:
            raise SessionStoreCapabilityError("list")
        return _common.due_pairs(self.due_parks(now, workflow))

    def due_parks(self, now: str, workflow: str | None = None) -> builtins.list[DuePark]:
        """:meth:`due` with the version each park was found at (what a timer delivery names).

        Raises:
            SessionStoreCapabilityError: without the ``list`` capability.
        """
        if Capability.LIST not in self.capabilities:
            raise SessionStoreCapabilityError("list")
        with self._lock:
            latest = [s.chunks[-1] for s in self._sessions.values() if s.chunks]
        heads = [head_of_chunk(chunk_from_bytes(b)) for b in latest]
        return _common.due_parks_of(heads, now, workflow)

    def oldest_park(self, workflow: str) -> OldestPark | None:
        """The workflow's park made longest ago, from each session's latest chunk (BEHAVIOUR.md §5.11).

        Raises:
            SessionStoreCapabilityError: without the ``list`` capability.
        """
        if Capability.LIST not in self.capabilities:
            raise SessionStoreCapabilityError("list")
        with self._lock:
            latest = [s.chunks[-1] for s in self._sessions.values() if s.chunks]
        return _common.oldest_park_of((head_of_chunk(chunk_from_bytes(b)) for b in latest), workflow)

    def stale(self, now: str, workflow: str | None = None) -> builtins.list[str]:
        """Ids of ``running`` sessions whose lease expired or is missing, sorted (DESIGN.md §3 "Inbox").

        Args:
            now: An instant string; a lease with ``expires_at <= now`` has expired, and a
                ``running`` session with no lease counts as expired at its ``updated_at``.
            workflow: Only sessions of this workflow, when given.

        Raises:
            SessionStoreCapabilityError: without the ``list`` capability.
        """
        if Capability.LIST not in self.capabilities:
            raise SessionStoreCapabilityError("list")
        with self._lock:
            latest = [s.chunks[-1] for s in self._sessions.values() if s.chunks]
        heads = [head_of_chunk(chunk_from_bytes(b)) for b in latest]
        return _common.stale_of(heads, now, workflow)

    # ------------------------------------------------------------------ files

    def get(self, session_id: str, path: str) -> bytes | None:
        """A session file's bytes, or ``None``.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path or one inside ``checkpoints/``.
        """
        validate_session_id(session_id)
        path = _common.check_file_path(path, session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            return None if session is None else session.files.get(path)

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        """Write text files as UTF-8; all paths are checked before any is written.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path (nothing is written).
            PathExistsError: with ``create_only``, for a path that exists (nothing is written).
        """
        validate_session_id(session_id)
        self._write(session_id, _common.encode_texts(session_id, files), create_only)

    def append_text(self, session_id: str, path: str, text: str) -> None:
        """Append UTF-8 text to one file (created when absent), as ``FilesystemStore.append_text``.

        Raises:
            InvalidSessionIdError / InvalidFilePathError: as :meth:`seed`.
        """
        validate_session_id(session_id)
        ((path, chunk),) = _common.encode_texts(session_id, {path: text}).items()
        with self._lock:
            files = self._sessions.setdefault(session_id, _Session()).files
            files[path] = files.get(path, b"") + chunk

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        """Write raw bytes (needs ``upload_files``); all paths are checked before any is written.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            SessionStoreCapabilityError: without ``upload_files`` (naming the first path).
            InvalidFilePathError / PathExistsError: as :meth:`seed`.
        """
        validate_session_id(session_id)
        if Capability.UPLOAD_FILES not in self.capabilities:
            raise SessionStoreCapabilityError("upload_files", next(iter(files), None), session_id=session_id)
        self._write(session_id, _common.check_bytes(session_id, files), create_only)

    def _write(self, session_id: str, files: dict[str, bytes], create_only: bool) -> None:
        with self._lock:
            session = self._sessions.setdefault(session_id, _Session())
            if create_only:
                for path in files:
                    if path in session.files or _common.is_folder_of(path, session.files):
                        raise PathExistsError(path, session_id=session_id)
            session.files.update(files)

    def list_files(self, session_id: str, prefix: str = "") -> builtins.list[str]:
        """Paths of the session's files under the folder ``prefix`` (all files for ``""``), sorted.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe prefix.
        """
        validate_session_id(session_id)
        folder = _common.check_prefix(prefix, session_id)
        with self._lock:
            session = self._sessions.get(session_id)
            paths = list(session.files) if session else []
        return sorted(p for p in paths if _common.is_under(p, folder))

    def remove_files(self, session_id: str, paths: builtins.list[str]) -> None:
        """Remove session files (not checkpoints); a path that is absent is skipped.

        The engine uses it to take back the files a firing placed before its claim failed
        (BEHAVIOUR.md §9.5; issue 9 item 7).

        Raises:
            InvalidSessionIdError / InvalidFilePathError: for a bad id or an unsafe path (nothing removed).
        """
        validate_session_id(session_id)
        checked = [_common.check_file_path(path, session_id) for path in paths]
        with self._lock:
            session = self._sessions.get(session_id)
            files = session.files if session is not None else {}
            for path in checked:
                files.pop(path, None)

    # ------------------------------------------------------------------ delete, specs

    def delete(self, session_id: str) -> bool:
        """Remove the session's checkpoints and files; True when anything existed (needs ``delete``).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            SessionStoreCapabilityError: without the ``delete`` capability.
        """
        validate_session_id(session_id)
        if Capability.DELETE not in self.capabilities:
            raise SessionStoreCapabilityError("delete", session_id=session_id)
        with self._lock:
            session = self._sessions.pop(session_id, None)
            self._outbox.pop(session_id, None)
        return session is not None and bool(session.chunks or session.files)

    def get_spec(self, spec_hash: str) -> dict[str, Any] | None:
        """A spec snapshot written by :meth:`put_spec`, or ``None`` (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
        """
        _common.check_spec_hash(spec_hash)
        with self._lock:
            data = self._specs.get(spec_hash)
        return None if data is None else json.loads(data)

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        """Write a spec snapshot create-only; False when one already existed (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
        """
        _common.check_spec_hash(spec_hash)
        data = _common.spec_bytes(doc)
        with self._lock:
            if spec_hash in self._specs:
                return False
            self._specs[spec_hash] = data
            return True
