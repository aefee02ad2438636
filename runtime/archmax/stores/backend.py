"""A session store over any key-value backend: ``create_backend_session_store(backend)``.

Rule source: seed "Files handed to a session" ("a createBackendSessionStore over a backend that has
uploadFiles"); BEHAVIOUR.md §9.1 (protocol), §9.2 (layout), §9.5 (binary content needs
``upload_files``; refused naming the path). A backend only reads, writes (optionally create-only),
lists and deletes keys; the store puts the layout of §9.2 on top, with the same checkpoint chunks
as the other stores (:mod:`archmax.stores.codec`):

* ``<folder>/checkpoints/<n>.json`` — version ``n``, written create-only: the create-only write is
  the commit's atomic step, so of two writers of one version exactly one succeeds;
* ``<folder>/<path>`` — session files; ``_specs/<hash>.json`` — spec snapshots.

Text goes through ``write``; raw bytes only through a backend that also has ``upload_files``.

Example:
    >>> store = create_backend_session_store(MemoryBackend())
    >>> store.capabilities.upload_files
    False
"""

from __future__ import annotations

import builtins
import json
import threading
from typing import Any, Protocol, runtime_checkable

from archmax.errors import CommitConflictError, PathExistsError, SessionStoreCapabilityError, StoreError
from archmax.session.ids import folder_name
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

__all__ = ["BackendSessionStore", "MemoryBackend", "SessionBackend", "create_backend_session_store"]

_SPECS = "_specs"
_CHECKPOINTS = _common.CHECKPOINTS
_OUTBOX = ".outbox"
"""Key root of the outbox marks: ``.outbox/<folder>/<version>.json`` (issue 20 item 2)."""


@runtime_checkable
class SessionBackend(Protocol):
    """What a store needs from a backend: keys are ``/``-separated strings the store builds.

    A backend may also define ``upload_files(key: str, data: bytes, *, create_only: bool = False) -> bool``
    (same contract as :meth:`write`, for raw bytes); without it the store refuses binary content.
    """

    def read(self, key: str) -> str | bytes | None:
        """The value stored at ``key`` (text as ``str`` or UTF-8 ``bytes``), or ``None``."""

    def write(self, key: str, text: str, *, create_only: bool = False) -> bool:
        """Store ``text`` at ``key``; with ``create_only``, atomically only when ``key`` is free.

        Returns:
            True when written; False when ``create_only`` and the key existed (nothing written).
        """

    def list(self, prefix: str) -> builtins.list[str]:
        """Every key starting with ``prefix`` (``""`` lists all)."""

    def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""


def create_backend_session_store(backend: SessionBackend) -> BackendSessionStore:
    """Turn a backend into a :class:`~archmax.stores.base.SessionStore` (seed; §9.1).

    Args:
        backend: Anything with ``read``, ``write`` (``create_only``), ``list`` and ``delete``; with
            ``upload_files`` as well, the store takes raw bytes (``capabilities.upload_files``).

    Returns:
        A store passing the store-conformance suite: ``list``/``delete`` always, ``upload_files``
        exactly when the backend has it.

    Raises:
        TypeError: ``backend`` lacks one of the four methods.
    """
    missing = [m for m in ("read", "write", "list", "delete") if not callable(getattr(backend, m, None))]
    if missing:
        raise TypeError(f"a session backend needs {', '.join(missing)}")
    return BackendSessionStore(backend)


class BackendSessionStore(StoreFallbacks):
    """A :class:`~archmax.stores.base.SessionStore` over a :class:`SessionBackend` (see module docstring)."""

    def __init__(self, backend: SessionBackend) -> None:
        self.backend = backend
        raw = callable(getattr(backend, "upload_files", None))  # the backend's own optional member
        self.capabilities = local_capabilities(
            [Capability.LIST, Capability.DELETE, *([Capability.UPLOAD_FILES] if raw else [])]
        )

    # ------------------------------------------------------------------ checkpoints

    def load(self, session_id: str, *, reads: ReadGuards | None = None) -> Checkpoint | None:
        """The latest committed checkpoint (a fresh object), or ``None`` (§9.1).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            SessionIdMismatchError: the folder holds another session's record (ids the backend folds together).
            StoreError: a chunk of the chain is missing (deleted while read) or corrupt.
        """
        folder = folder_name(session_id)
        latest = self._latest_chunk(folder)
        if latest is None:
            return None
        versions = chunk_versions_to_load(latest)
        chunks = [latest if v == latest["version"] else self._chunk(folder, v, session_id) for v in versions]
        return _common.same_session(session_id, decode_chunks(chunks))

    def head(self, session_id: str, *, reads: ReadGuards | None = None) -> SessionHead | None:
        """The latest version's head, or ``None``.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
        """
        latest = self._latest_chunk(folder_name(session_id))
        return _common.same_session(session_id, head_of_chunk(latest) if latest is not None else None)

    def commit(
        self,
        session_id: str,
        record: Checkpoint,
        expected_version: int,
        *,
        lease_owner: str | None = None,
    ) -> None:
        """Create version ``expected_version + 1`` with one create-only write (§9.1, §3.12).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: a record that does not fit ``session_id`` / ``expected_version``.
            CommitConflictError: the latest version is not ``expected_version`` (or another writer
                created the version first), or the stored lease owner differs.
        """
        folder = folder_name(session_id)
        _common.check_record_fits(session_id, record, expected_version)
        previous = self._latest_chunk(folder)
        found = previous["version"] if previous is not None else 0
        if found != expected_version:
            raise CommitConflictError(session_id, expected_version, found)
        if lease_owner is not None:
            stored = head_of_chunk(previous) if previous is not None else None
            _common.check_lease_owner(session_id, expected_version, stored, lease_owner)
        chunk = encode_chunk(record, chunk_counts(previous) if previous is not None else None)
        mark = _common.outbox_mark(record)
        if mark is not None:  # before the commit point: a committed entry is never unmarked (issue 20 item 2)
            doc = {"session_id": session_id, "workflow": record.workflow, "version": mark}
            self.backend.write(f"{_OUTBOX}/{folder}/{mark:010d}.json", json.dumps(doc))
        key = _checkpoint_key(folder, record.version)
        if not self.backend.write(key, chunk_bytes(chunk).decode("utf-8"), create_only=True):
            raise CommitConflictError(session_id, expected_version, record.version)

    def outbox_pending(self, workflow: str | None = None) -> builtins.list[str]:
        """Ids of sessions with an outbox mark (entries a commit recorded, not all sent yet), sorted."""
        newest: dict[str, str] = {}
        for key in self.backend.list(f"{_OUTBOX}/"):
            folder = key[len(_OUTBOX) + 1 :].split("/", 1)[0]
            newest[folder] = max(newest.get(folder, key), key)
        found = set()
        for key in newest.values():
            value = self.backend.read(key)
            if value is None:
                continue
            doc = json.loads(value)
            if workflow is None or doc.get("workflow") == workflow:
                found.add(doc["session_id"])
        return sorted(found)

    def outbox_settled(self, session_id: str, version: int, *, created_at: str | None = None) -> None:
        """Delete the session's outbox marks of ``version`` and before (a later commit's mark stays; ``created_at``: see the port)."""
        prefix = f"{_OUTBOX}/{folder_name(session_id)}/"
        for key in self.backend.list(prefix):
            stem = key[len(prefix) :].removesuffix(".json")
            if stem.isdigit() and int(stem) <= version:
                self.backend.delete(key)

    def list(self) -> builtins.list[str]:
        """Ids of every session with a checkpoint, sorted (the ids stored in the checkpoints)."""
        return sorted(h.session_id for h in self._heads())

    def due(self, now: str, workflow: str | None = None) -> builtins.list[tuple[str, str]]:
        """``(session_id, resume_at)`` of due input parks, by ``resume_at`` then id (§11 ``sweep``)."""
        return _common.due_of(self._heads(), now, workflow)

    def due_parks(self, now: str, workflow: str | None = None) -> builtins.list[DuePark]:
        """:meth:`due` with the version each park was found at (what a timer delivery names)."""
        return _common.due_parks_of(self._heads(), now, workflow)

    def oldest_park(self, workflow: str) -> OldestPark | None:
        """The workflow's park made longest ago, from every session's latest checkpoint (§5.11)."""
        return _common.oldest_park_of(self._heads(), workflow)

    def stale(self, now: str, workflow: str | None = None) -> builtins.list[str]:
        """Ids of ``running`` sessions whose lease expired or is missing, sorted."""
        return _common.stale_of(self._heads(), now, workflow)

    # ------------------------------------------------------------------ files

    def get(self, session_id: str, path: str) -> bytes | None:
        """A session file's bytes, or ``None``.

        Raises:
            InvalidSessionIdError / InvalidFilePathError: for a bad id or an unsafe path.
        """
        folder = folder_name(session_id)
        path = _common.check_file_path(path, session_id)
        value = self.backend.read(f"{folder}/{path}")
        return value.encode("utf-8") if isinstance(value, str) else value

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        """Write text files through ``backend.write``; all paths are checked before any is written.

        Raises:
            InvalidSessionIdError / InvalidFilePathError: for a bad id or an unsafe path (nothing written).
            PathExistsError: with ``create_only``, for a path that exists.
        """
        folder = folder_name(session_id)
        texts = {path: data.decode("utf-8") for path, data in _common.encode_texts(session_id, files).items()}
        self._write(session_id, folder, texts, create_only)

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        """Write raw bytes through ``backend.upload_files`` (§9.5).

        Raises:
            SessionStoreCapabilityError: the backend has no ``upload_files``; names the first path.
            InvalidSessionIdError / InvalidFilePathError / PathExistsError: as :meth:`seed`.
        """
        folder = folder_name(session_id)
        if Capability.UPLOAD_FILES not in self.capabilities:
            raise SessionStoreCapabilityError("upload_files", next(iter(files), None), session_id=session_id)
        self._write(session_id, folder, _common.check_bytes(session_id, files), create_only)

    def _write(self, session_id: str, folder: str, files: dict[str, Any], create_only: bool) -> None:
        existing = self.backend.list(f"{folder}/") if create_only else []
        taken = {key[len(folder) + 1 :] for key in existing}
        if create_only:
            for path in files:
                if path in taken or _common.is_folder_of(path, taken):
                    raise PathExistsError(path, session_id=session_id)
        for path, value in files.items():
            key = f"{folder}/{path}"
            if isinstance(value, str):
                written = self.backend.write(key, value, create_only=create_only)
            else:
                written = self.backend.upload_files(key, value, create_only=create_only)  # type: ignore[attr-defined]
            if not written:
                raise PathExistsError(path, session_id=session_id)

    def list_files(self, session_id: str, prefix: str = "") -> builtins.list[str]:
        """Paths of the session's files under the folder ``prefix`` (checkpoints excluded), sorted."""
        folder = folder_name(session_id)
        under = _common.check_prefix(prefix, session_id)
        paths = [key[len(folder) + 1 :] for key in self.backend.list(f"{folder}/")]
        return sorted(p for p in paths if p.split("/", 1)[0] != _CHECKPOINTS and _common.is_under(p, under))

    def remove_files(self, session_id: str, paths: builtins.list[str]) -> None:
        """Remove session files (not checkpoints); a path that is absent is skipped.

        The engine uses it to take back the files a firing placed before its claim failed
        (BEHAVIOUR.md §9.5; issue 9 item 7).

        Raises:
            InvalidSessionIdError / InvalidFilePathError: for a bad id or an unsafe path (nothing removed).
        """
        folder = folder_name(session_id)
        for path in [_common.check_file_path(path, session_id) for path in paths]:
            self.backend.delete(f"{folder}/{path}")

    # ------------------------------------------------------------------ delete, specs

    def delete(self, session_id: str) -> bool:
        """Remove every key of the session (files first, checkpoints last); True when anything existed."""
        folder = folder_name(session_id)
        keys = sorted(self.backend.list(f"{folder}/"), key=lambda k: k.startswith(f"{folder}/{_CHECKPOINTS}/"))
        for key in keys:
            self.backend.delete(key)
        for key in self.backend.list(f"{_OUTBOX}/{folder}/"):
            self.backend.delete(key)
        return bool(keys)

    def get_spec(self, spec_hash: str) -> dict[str, Any] | None:
        """A spec snapshot, or ``None`` (§9.4)."""
        value = self.backend.read(f"{_SPECS}/{_common.check_spec_hash(spec_hash)}.json")
        return None if value is None else json.loads(value)

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        """Write a spec snapshot create-only; False when one already existed (§9.4)."""
        key = f"{_SPECS}/{_common.check_spec_hash(spec_hash)}.json"
        return self.backend.write(key, _common.spec_bytes(doc).decode("utf-8"), create_only=True)

    # ------------------------------------------------------------------ internals

    def _versions(self, folder: str) -> builtins.list[int]:
        prefix = f"{folder}/{_CHECKPOINTS}/"
        names = (key[len(prefix) :] for key in self.backend.list(prefix))
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def _latest_chunk(self, folder: str) -> dict[str, Any] | None:
        for _attempt in range(3):
            versions = self._versions(folder)
            if not versions:
                return None
            value = self.backend.read(_checkpoint_key(folder, versions[-1]))
            if value is not None:
                return chunk_from_bytes(value.encode("utf-8") if isinstance(value, str) else value)
        raise StoreError(f"session folder '{folder}' kept changing under a read")

    def _chunk(self, folder: str, version: int, session_id: str) -> dict[str, Any]:
        value = self.backend.read(_checkpoint_key(folder, version))
        if value is None:
            raise StoreError(f"checkpoint {version} of session '{session_id}' is missing", session_id=session_id)
        return chunk_from_bytes(value.encode("utf-8") if isinstance(value, str) else value)

    def _heads(self) -> builtins.list[SessionHead]:
        folders = sorted({key.split("/", 1)[0] for key in self.backend.list("") if f"/{_CHECKPOINTS}/" in key})
        heads = []
        for folder in folders:
            if folder == _SPECS:
                continue
            latest = self._latest_chunk(folder)
            if latest is not None:
                heads.append(head_of_chunk(latest))
        return heads


def _checkpoint_key(folder: str, version: int) -> str:
    return f"{folder}/{_CHECKPOINTS}/{version:010d}.json"


class MemoryBackend:
    """A dict as a :class:`SessionBackend`: text only, so binary content is refused (the reference backend).

    Pass ``binary=True`` to also get ``upload_files``. Thread-safe; create-only writes are atomic.
    """

    def __init__(self, *, binary: bool = False) -> None:
        self._items: dict[str, str | bytes] = {}
        self._lock = threading.Lock()
        if binary:
            self.upload_files = self._upload_files

    def read(self, key: str) -> str | bytes | None:
        """The value at ``key``, or ``None``."""
        with self._lock:
            return self._items.get(key)

    def write(self, key: str, text: str, *, create_only: bool = False) -> bool:
        """Store text; with ``create_only`` only when the key is free."""
        if not isinstance(text, str):
            raise TypeError(f"write takes text; {key!r} got {type(text).__name__}")
        return self._put(key, text, create_only)

    def _upload_files(self, key: str, data: bytes, *, create_only: bool = False) -> bool:
        return self._put(key, bytes(data), create_only)

    def _put(self, key: str, value: str | bytes, create_only: bool) -> bool:
        with self._lock:
            if create_only and key in self._items:
                return False
            self._items[key] = value
            return True

    def list(self, prefix: str) -> builtins.list[str]:
        """Keys starting with ``prefix``, sorted."""
        with self._lock:
            return sorted(k for k in self._items if k.startswith(prefix))

    def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""
        with self._lock:
            return self._items.pop(key, None) is not None
