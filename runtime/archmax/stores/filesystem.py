"""``FilesystemStore``: sessions in a local folder, safe for threads and for processes (the embedded default).

Rule source: BEHAVIOUR.md §9.1 (protocol), §9.2 (layout), §9.3 (checkpoints), §3.12 (lease owner
on commit), DESIGN.md §3 ("a file lock for the filesystem store, so two processes on one machine
are safe too").

Layout under ``root`` (§9.2), ``<folder>`` being :func:`archmax.session.ids.folder_name`::

    _specs/<spec_hash>.json                 spec snapshots, create-only, pretty JSON
    <folder>/checkpoints/0000000001.json    one immutable chunk per version (archmax.stores.codec)
    <folder>/checkpoints/head.json          cache of the latest version's head and counts
    <folder>/artifacts/... scratchpad/...   session files, and seeded root-level files
    .locks/<folder>.lock                    the per-session file lock
    .tmp/                                   temporary files of atomic writes
    .outbox/<folder>/<version>.json         outbox marks: a commit that recorded outbox entries
                                            (issue 20 item 2), until every entry is sent

Nothing is created before the first write: ``root``, ``.locks`` and ``.tmp`` appear on the first
operation that takes a lock or writes a file, so a refused operation (a bad id, an unknown session,
a CLI refusal) leaves no folder behind (BEHAVIOUR.md §3.3 "validate every input before writing
anything"). Reads of a store that does not exist yet find nothing.

Names starting with ``.`` can never be a session folder (a leading ``.`` of an id is escaped
as ``%2E``), so ``.locks`` and ``.tmp`` cannot collide with a session. The lock lives outside
the session folder so that ``delete`` (which removes the folder) never unlinks a lock another
process is waiting on (lock files are tiny and are left behind). ``head.json`` lives in ``checkpoints/`` so it cannot collide with a
seeded root-level file.

The commit point is the create-only link of ``checkpoints/<n>.json``: two writers can never both
create version ``n``. ``head.json`` is written after it and is only a cache: readers probe for a
newer chunk, so a crash between the two loses nothing.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archmax.errors import CommitConflictError, InvalidFilePathError, PathExistsError, StoreError
from archmax.session.ids import folder_name, portable_folder_name
from archmax.session.records import PARKED_STATUSES, Checkpoint
from archmax.stores import common as _common
from archmax.stores.base import Capability, DuePark, OldestPark, ReadGuards, SessionHead, StoreLocation
from archmax.stores.fallbacks import StoreFallbacks, local_capabilities
from archmax.stores.fs_io import acquired, head_doc, io_errors, scan_latest, write_file
from archmax.stores.fs_outbox import FsOutboxMarks

if TYPE_CHECKING:
    pass

from archmax.stores.codec import (
    checkpoint_name,
    chunk_bytes,
    chunk_from_bytes,
    decode_chunks,
    encode_chunk,
)

_HEAD = "head.json"
_SPECS = "_specs"


class FilesystemStore(FsOutboxMarks, StoreFallbacks):
    """A :class:`~archmax.stores.base.SessionStore` in a local folder, every capability (§9.1).

    Args:
        root: The store folder (created by the first write, not here). The CLI's default is
            ``<workspace>/sessions``.
        lock_timeout_s: Seconds to wait for a session's file lock before giving up with ``StoreError``.

    Example:
        >>> store = FilesystemStore(tmp_path / "sessions")  # doctest: +SKIP
        >>> store.seed("chat-42", {"scratchpad/notes.md": "hello"})  # doctest: +SKIP
    """

    def __init__(self, root: str | os.PathLike[str] = "sessions", *, lock_timeout_s: float = 30.0) -> None:
        self.capabilities = local_capabilities(None, Capability.APPEND_TEXT)
        self.root = Path(root).absolute()
        self._lock_timeout_s = lock_timeout_s

    # ------------------------------------------------------------------ checkpoints

    @property
    def location(self) -> StoreLocation:
        """The folder the sessions live in."""
        return StoreLocation(root=self.root)

    def load(self, session_id: str, *, reads: ReadGuards | None = None) -> Checkpoint | None:
        """The latest committed checkpoint, or ``None`` (§9.1). Never a partial record.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on I/O failure or a corrupt chunk chain.
        """
        folder = self._folder(session_id)
        for _attempt in range(3):
            version, doc = self._latest(folder, session_id)
            if version == 0:
                return None
            try:
                chunks = [self._read_chunk(folder, v) for v in range(int(doc["base"]), version + 1)]
            except FileNotFoundError:
                continue  # deleted (or recreated) while we read: look again
            except OSError as exc:
                raise StoreError(f"cannot read session '{session_id}': {exc}", session_id=session_id) from exc
            return _common.same_session(session_id, decode_chunks(chunks))
        raise StoreError(f"session '{session_id}' kept changing under a load", session_id=session_id)

    def head(self, session_id: str, *, reads: ReadGuards | None = None) -> SessionHead | None:
        """The latest version's head from ``head.json`` (plus one probe for a newer chunk), or ``None``.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
        """
        folder = self._folder(session_id)
        version, doc = self._latest(folder, session_id)
        return _common.same_session(session_id, SessionHead.model_validate(doc["head"]) if version else None)

    def commit(
        self,
        session_id: str,
        record: Checkpoint,
        expected_version: int,
        *,
        lease_owner: str | None = None,
    ) -> None:
        """Create version ``expected_version + 1`` under the session's file lock (§9.1, §3.12).

        Args:
            session_id: The session.
            record: The whole new record; ``record.session_id`` must be ``session_id`` and
                ``record.version`` must be ``expected_version + 1``.
            expected_version: The version the writer read (0 for a new session).
            lease_owner: When given, the stored latest record must hold a lease with this owner.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: a record that does not fit, a lock timeout, or an I/O failure.
            CommitConflictError: the latest version on disk is not ``expected_version``, or the lease
                owner differs.
        """
        folder = self._folder(session_id)
        _common.check_record_fits(session_id, record, expected_version)
        with self._locked(folder, session_id), io_errors(session_id):
            version, doc = self._latest(folder, session_id)
            if version:
                _common.same_session(session_id, SessionHead.model_validate(doc["head"]))
            if version != expected_version:
                raise CommitConflictError(session_id, expected_version, version)
            if lease_owner is not None:
                stored = SessionHead.model_validate(doc["head"]) if version else None
                _common.check_lease_owner(session_id, expected_version, stored, lease_owner)
            previous = (int(doc["message_count"]), int(doc["trail_count"])) if version else None
            chunk = encode_chunk(record, previous)
            self._mark_outbox(folder, record)  # before the commit point: a committed entry is never unmarked
            target = folder / checkpoint_name(record.version)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._create(target, chunk_bytes(chunk), fsync=True)
            except FileExistsError:
                raise CommitConflictError(session_id, expected_version, record.version) from None
            with contextlib.suppress(OSError):
                # Only a cache: if this write fails, readers find the new chunk by probing.
                self._replace(folder / "checkpoints" / _HEAD, json.dumps(head_doc(chunk)).encode("utf-8"))

    def list(self) -> builtins.list[str]:
        """Ids stored in the latest checkpoint of every session folder, sorted (§9.2).

        Raises:
            StoreError: on I/O failure.
        """
        return sorted(head.session_id for head in self._heads())

    def due(self, now: str, workflow: str | None = None) -> builtins.list[tuple[str, str]]:
        """``(session_id, resume_at)`` of input parks with ``resume_at <= now``, by ``resume_at`` then id.

        Walks every session's ``head.json`` (a local store; the AWS store uses an index instead).

        Raises:
            StoreError: on I/O failure.
        """
        return _common.due_of(self._heads(), now, workflow)

    def due_parks(self, now: str, workflow: str | None = None) -> builtins.list[DuePark]:
        """:meth:`due` with the version each park was found at (what a timer delivery names).

        Raises:
            StoreError: on I/O failure.
        """
        return _common.due_parks_of(self._heads(), now, workflow)

    def oldest_park(self, workflow: str) -> OldestPark | None:
        """The workflow's park made longest ago, from every session's ``head.json`` (BEHAVIOUR.md §5.11).

        Raises:
            StoreError: on I/O failure.
        """
        return _common.oldest_park_of(self._heads(), workflow)

    def stale(self, now: str, workflow: str | None = None) -> builtins.list[str]:
        """Ids of ``running`` sessions whose lease expired or is missing, sorted (DESIGN.md §3 "Inbox").

        Walks every session's ``head.json``, as :meth:`due` does. A ``running`` session with no
        lease counts as expired at its ``updated_at``.

        Args:
            now: An instant string; a lease with ``expires_at <= now`` has expired.
            workflow: Only sessions of this workflow, when given.

        Raises:
            StoreError: on I/O failure.
        """
        return _common.stale_of(self._heads(), now, workflow)

    # ------------------------------------------------------------------ files

    def get(self, session_id: str, path: str) -> bytes | None:
        """A session file's bytes, or ``None`` when absent (or a folder).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path, one inside ``checkpoints/``, or one escaping the folder.
        """
        folder = self._folder(session_id)
        target = self._file(folder, session_id, path)
        try:
            return target.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StoreError(f"cannot read {path!r} of session '{session_id}': {exc}", session_id=session_id) from exc

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        """Write text files as UTF-8, each atomically; every path is checked before any is written.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path (nothing is written).
            PathExistsError: with ``create_only``, for a path that exists (nothing is written).
            StoreError: on I/O failure.
        """
        folder = self._folder(session_id)
        self._write(folder, session_id, _common.encode_texts(session_id, files), create_only)

    def append_text(self, session_id: str, path: str, text: str) -> None:
        """Append UTF-8 text to one file (created when absent): what an append-only artifact needs (§9.5).

        In place (``APPEND_TEXT``): a long conversation's trajectory costs its new lines, not a rewrite.

        Raises:
            InvalidSessionIdError / InvalidFilePathError / StoreError: as :meth:`seed`.
        """
        folder = self._folder(session_id)
        data = _common.encode_texts(session_id, {path: text})
        ((path, chunk),) = data.items()
        target = self._file(folder, session_id, path)
        with self._locked(folder, session_id), io_errors(session_id):
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "ab") as fh:
                fh.write(chunk)

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        """Write raw bytes, each atomically; every path is checked before any is written.

        Raises:
            InvalidSessionIdError / InvalidFilePathError / PathExistsError / StoreError: as :meth:`seed`.
        """
        folder = self._folder(session_id)
        self._write(folder, session_id, _common.check_bytes(session_id, files), create_only)

    def list_files(self, session_id: str, prefix: str = "") -> builtins.list[str]:
        """Paths of the session's files under the folder ``prefix`` (all files for ``""``), sorted.

        ``checkpoints/`` is the store's own and never listed.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe prefix.
        """
        folder = self._folder(session_id)
        sub = _common.check_prefix(prefix, session_id)
        start = self._inside(folder, session_id, sub) if sub else folder
        found: builtins.list[str] = []
        with io_errors(session_id):
            for dirpath, dirnames, filenames in os.walk(start):
                rel_dir = Path(dirpath).relative_to(folder).as_posix()
                if rel_dir == ".":
                    dirnames[:] = [d for d in dirnames if d != _common.CHECKPOINTS]
                    rel_dir = ""
                found.extend(f"{rel_dir}/{name}" if rel_dir else name for name in filenames)
        return sorted(p for p in found if _common.is_under(p, sub))

    def remove_files(self, session_id: str, paths: builtins.list[str]) -> None:
        """Remove session files (not checkpoints); a path that is absent is skipped.

        The engine uses it to take back the files a firing placed before its claim failed
        (BEHAVIOUR.md §9.5; issue 9 item 7).

        Raises:
            InvalidSessionIdError / InvalidFilePathError: for a bad id or an unsafe path (nothing removed).
            StoreError: on I/O failure.
        """
        folder = self._folder(session_id)
        targets = [self._file(folder, session_id, path) for path in paths]
        with self._locked(folder, session_id), io_errors(session_id):
            for target in targets:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()

    # ------------------------------------------------------------------ delete, specs

    def delete(self, session_id: str) -> bool:
        """Remove the session folder (checkpoints and files); True when it held anything.

        The folder is first renamed away in one step, so readers see all of it or none of it.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on I/O failure.
        """
        folder = self._folder(session_id)
        with io_errors(session_id):
            if not folder.is_dir():
                return False  # nothing to delete: no lock taken, so no folder or lock file made (§3.3)
        with self._locked(folder, session_id), io_errors(session_id):
            if not folder.is_dir():
                return False
            existed = any(folder.iterdir())
            trash = self._own(".tmp", session_id) / f"deleted-{uuid.uuid4().hex}"
            os.rename(folder, trash)
            shutil.rmtree(trash, ignore_errors=True)
            shutil.rmtree(self.root / ".outbox" / folder.name, ignore_errors=True)
            return existed

    def get_spec(self, spec_hash: str) -> dict[str, Any] | None:
        """The snapshot at ``_specs/<hash>.json``, or ``None`` (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
            StoreError: on I/O failure or a file that is not JSON.
        """
        path = self.root / _SPECS / f"{_common.check_spec_hash(spec_hash)}.json"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read spec snapshot {spec_hash!r}: {exc}") from exc
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise StoreError(f"spec snapshot {spec_hash!r} is not JSON: {exc}") from exc

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        """Write ``_specs/<hash>.json`` create-only as pretty JSON; False when it already existed (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
            StoreError: on I/O failure.
        """
        path = self.root / _SPECS / f"{_common.check_spec_hash(spec_hash)}.json"
        with io_errors(None):
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._create(path, _common.spec_bytes(doc))
            except FileExistsError:
                return False
        return True

    # ------------------------------------------------------------------ internals

    def _folder(self, session_id: str) -> Path:
        # portable_folder_name validates the id (§4.1) before any path exists.
        folder = self.root / portable_folder_name(session_id)
        legacy = folder_name(session_id)
        if legacy != folder.name and not os.path.lexists(folder):
            self._migrate(self.root / legacy, folder, session_id)
        return folder

    def _migrate(self, legacy: Path, folder: Path, session_id: str) -> None:
        """Rename a folder an older version named by §9.2 alone to its portable name (issue 13 item 4).

        Only a folder whose checkpoint names this very id moves: on a case-insensitive disk the old
        name may be another session's folder, which stays where it is (its own next access moves it).
        """
        if not legacy.is_dir() or legacy.is_symlink():
            return
        with self._locked(folder, session_id), io_errors(session_id):
            if os.path.lexists(folder) or not legacy.is_dir():
                return  # another process migrated it meanwhile
            version, doc = self._latest(legacy, session_id)
            if version and doc["head"].get("session_id") == session_id:
                os.rename(legacy, folder)

    def _locked(self, folder: Path, session_id: str) -> contextlib.AbstractContextManager[Any]:
        from filelock import FileLock  # imported on first lock: a Lambda handler on AWS never needs it

        lock = FileLock(str(self._own(".locks", session_id) / f"{folder.name}.lock"), timeout=self._lock_timeout_s)
        return acquired(lock, session_id)

    def _own(self, name: str, session_id: str | None) -> Path:
        """``root/<name>`` (``.locks`` or ``.tmp``), made (with ``root``) whenever it is missing.

        Made on use, not remembered: a folder removed by hand under a live instance (``rm -rf
        sessions`` while ``archmax serve`` runs) is made again by the next write (attack32).

        Raises:
            StoreError: the folder cannot be created.
        """
        path = self.root / name
        with io_errors(session_id):
            path.mkdir(parents=True, exist_ok=True)
        return path

    def _inside(self, folder: Path, session_id: str, rel: str) -> Path:
        """``folder/rel``, refusing a path that resolves (through symlinks) outside the folder."""
        target = folder / rel
        real_folder = os.path.realpath(folder)
        if os.path.commonpath([real_folder, os.path.realpath(target)]) != real_folder:
            raise InvalidFilePathError(rel, "the path leaves the session folder", session_id=session_id)
        return target

    def _file(self, folder: Path, session_id: str, path: object) -> Path:
        return self._inside(folder, session_id, _common.check_file_path(path, session_id))

    def _write(self, folder: Path, session_id: str, files: dict[str, bytes], create_only: bool) -> None:
        targets = {path: self._file(folder, session_id, path) for path in files}
        with self._locked(folder, session_id), io_errors(session_id):
            if create_only:
                for path, target in targets.items():
                    if os.path.lexists(target):
                        raise PathExistsError(path, session_id=session_id)
            for path, target in targets.items():
                target.parent.mkdir(parents=True, exist_ok=True)
                if create_only:
                    try:
                        self._create(target, files[path])
                    except FileExistsError:
                        raise PathExistsError(path, session_id=session_id) from None
                else:
                    self._replace(target, files[path])

    def _latest(self, folder: Path, session_id: str) -> tuple[int, dict[str, Any]]:
        """The latest committed version and its head document (``(0, {})`` when none)."""
        checkpoints = folder / _common.CHECKPOINTS
        with io_errors(session_id):
            try:
                doc = json.loads((checkpoints / _HEAD).read_bytes())
                version = int(doc["version"])
                if _predates_parked_at(doc):
                    doc = None  # a head.json written before heads carried parked_at: read its chunk
            except (FileNotFoundError, NotADirectoryError, ValueError, KeyError):
                doc, version = None, scan_latest(checkpoints)
            # head.json is written after the chunk it describes: probe for chunks it has not caught up with.
            while (folder / checkpoint_name(version + 1)).exists():
                version, doc = version + 1, None
            if version == 0:
                return 0, {}
            if doc is None:
                try:
                    doc = head_doc(self._read_chunk(folder, version))
                except FileNotFoundError:
                    return 0, {}  # deleted while we looked
        return version, doc

    def _read_chunk(self, folder: Path, version: int) -> dict[str, Any]:
        return chunk_from_bytes((folder / checkpoint_name(version)).read_bytes())

    def _heads(self) -> builtins.list[SessionHead]:
        heads: builtins.list[SessionHead] = []
        with io_errors(None):
            try:
                entries = sorted(os.scandir(self.root), key=lambda e: e.name)
            except FileNotFoundError:
                return heads  # nothing was ever written
        for entry in entries:
            if entry.name.startswith(".") or entry.name == _SPECS or not entry.is_dir(follow_symlinks=False):
                continue
            version, doc = self._latest(Path(entry.path), entry.name)
            if version:
                heads.append(SessionHead.model_validate(doc["head"]))
        return heads

    def _temp(self) -> Path:
        return self._own(".tmp", None) / uuid.uuid4().hex

    def _write_temp(self, data: bytes, *, fsync: bool = False) -> Path:
        """A new temporary file under ``.tmp`` (made if missing, :meth:`_own`) holding ``data``."""
        tmp = self._temp()
        try:
            write_file(tmp, data, fsync=fsync)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)  # a partial write leaves nothing behind
            raise
        return tmp

    def _create(self, target: Path, data: bytes, *, fsync: bool = False) -> None:
        """Create ``target`` holding ``data`` all at once; ``FileExistsError`` if it exists."""
        tmp = self._write_temp(data, fsync=fsync)
        try:
            os.link(tmp, target)  # atomic create-only: the full content appears, or nothing
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _replace(self, target: Path, data: bytes) -> None:
        tmp = self._write_temp(data)
        try:
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def _predates_parked_at(doc: dict[str, Any]) -> bool:
    """Whether a ``head.json`` of a parked session was written before heads carried ``parked_at`` (§5.11)."""
    head = doc.get("head") or {}
    return head.get("status") in PARKED_STATUSES and "parked_at" not in head
