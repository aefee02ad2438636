"""``FilesystemInbox``: the inbox beside a filesystem store, safe for threads and processes.

Rule source: DESIGN.md §3 "Inbox" (create-only items per delivery id, drain lease, arrivals
counter), §3 Storage ("a file lock ... so two processes on one machine are safe too").

Layout under ``<root>/.inbox/`` (``root`` is the filesystem store's root; a session folder can
never start with ``.``, so ``.inbox`` never collides with a session), ``<folder>`` being
:func:`archmax.session.ids.portable_folder_name` (distinct on case-folding disks; a file an older
version named by :func:`~archmax.session.ids.folder_name` is renamed on first use when it holds
this very session's inbox)::

    sessions/<folder>.json   the session's whole inbox (items, arrivals counter, drain lease)
    pending/<folder>         a marker holding the session id while any item is pending
    .locks/<folder>.lock     the per-session file lock every read-modify-write holds
    .tmp/                    temporary files of atomic replaces

Nothing is created before the first write (a ``put``, a ``mark``, a drain lease): a firing refused
before it reaches the inbox leaves no ``.inbox/`` behind (BEHAVIOUR.md §3.3, "validate every input
before writing anything"), and reads of an inbox never written find nothing.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from archmax.errors import SessionIdMismatchError, StoreError
from archmax.hosting.inbox_base import DrainView, InboxItem, InboxState, ItemStatus, LocalInbox
from archmax.session.ids import folder_name, portable_folder_name, validate_delivery_id


class FilesystemInbox(LocalInbox):
    """An :class:`~archmax.hosting.inbox_base.Inbox` in files under ``<root>/.inbox/``.

    Args:
        root: The filesystem store's root folder (it and ``.inbox/`` are created by the first write).
        lock_timeout_s: Seconds to wait for a session's lock before ``StoreError``.

    Raises:
        StoreError: on any I/O failure (every method).
    """

    def __init__(self, root: str | os.PathLike[str], *, lock_timeout_s: float = 30.0) -> None:
        self.base = Path(root).absolute() / ".inbox"
        self._lock_timeout_s = lock_timeout_s

    def _folders(self) -> None:
        """Make ``.inbox/`` and its four folders where missing, before every write's lock.

        Not remembered: ``.inbox/`` removed by hand while ``archmax serve`` runs is made again by
        the next write instead of failing every write until a restart (attack32).
        """
        with _io_errors():
            for sub in ("sessions", "pending", ".locks", ".tmp"):
                (self.base / sub).mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ plumbing

    @contextlib.contextmanager
    def _session(self, session_id: str, *, write: bool) -> Iterator[InboxState]:
        folder = portable_folder_name(session_id)  # validates the id before it becomes a path
        if not write and not self._any_file(session_id, folder):
            # nothing was ever put: a read leaves no lock file behind (a direct firing's check of its
            # delivery id must change no byte when it is refused; files are replaced atomically)
            yield InboxState(session_id=session_id)
            return
        self._folders()
        lock = FileLock(str(self.base / ".locks" / f"{folder}.lock"), timeout=self._lock_timeout_s)
        try:
            with lock, _io_errors():
                path = self.base / "sessions" / f"{folder}.json"
                legacy = self.base / "sessions" / f"{folder_name(session_id)}.json"
                if not path.exists() and legacy != path and legacy.is_file():
                    state = InboxState.model_validate_json(legacy.read_bytes())
                    if state.session_id == session_id:  # on a case-folding disk it may be another's
                        os.replace(legacy, path)
                        old_marker = self.base / "pending" / folder_name(session_id)
                        if old_marker.is_file() and old_marker.read_text(encoding="utf-8") == session_id:
                            old_marker.unlink()
                        if state.pending():
                            self._atomic_write(self.base / "pending" / folder, session_id.encode("utf-8"))
                if path.exists():
                    state = InboxState.model_validate_json(path.read_bytes())
                    if state.session_id != session_id:
                        raise SessionIdMismatchError(session_id, state.session_id)
                else:
                    state = InboxState(session_id=session_id)
                yield state
                if write:
                    self._atomic_write(path, state.model_dump_json().encode("utf-8"))
                    marker = self.base / "pending" / folder
                    if state.pending():
                        if not marker.exists():
                            self._atomic_write(marker, session_id.encode("utf-8"))
                    else:
                        marker.unlink(missing_ok=True)
        except Timeout as exc:
            raise StoreError(f"inbox of session '{session_id}' stayed locked for {self._lock_timeout_s}s") from exc

    def _any_file(self, session_id: str, folder: str) -> bool:
        """Whether the session's inbox file exists (under its portable name, or the older one)."""
        sessions = self.base / "sessions"
        with _io_errors():
            return (sessions / f"{folder}.json").exists() or (sessions / f"{folder_name(session_id)}.json").is_file()

    def _atomic_write(self, path: Path, data: bytes) -> None:
        """Replace ``path`` with ``data`` at once (its folders were made by :meth:`_folders`)."""
        tmp = self.base / ".tmp" / uuid.uuid4().hex
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()  # a partial write leaves nothing behind
            raise

    # ------------------------------------------------------------------ protocol

    def put(self, item: InboxItem, *, new_session: bool = False) -> bool:
        """See :meth:`Inbox.put`. Raises InvalidSessionIdError, InvalidDeliveryIdError, StoreError."""
        validate_delivery_id(item.delivery_id, session_id=item.session_id)
        with self._session(item.session_id, write=True) as state:
            return state.put(item)

    def pending(self, session_id: str) -> list[InboxItem]:
        """See :meth:`Inbox.pending`."""
        with self._session(session_id, write=False) as state:
            return state.pending()

    def get(self, session_id: str, delivery_id: str) -> InboxItem | None:
        """See :meth:`Inbox.get`."""
        with self._session(session_id, write=False) as state:
            return state.items.get(delivery_id)

    def mark(self, session_id: str, delivery_id: str, status: ItemStatus, error: str | None = None) -> None:
        """See :meth:`Inbox.mark`. Raises KeyError for an unknown item (a host bug)."""
        with self._session(session_id, write=True) as state:
            state.mark(delivery_id, status, error)

    def sessions_with_pending(self) -> list[str]:
        """See :meth:`Inbox.sessions_with_pending`: reads the markers only, never the item files."""
        pending = self.base / "pending"
        with _io_errors():
            ids = []
            for marker in pending.iterdir() if pending.is_dir() else ():
                with contextlib.suppress(FileNotFoundError):  # drained meanwhile
                    ids.append(marker.read_text(encoding="utf-8"))
            return sorted(ids)

    def try_acquire(self, session_id: str, owner: str, now: str, ttl_s: float) -> bool:
        """See :meth:`Inbox.try_acquire`."""
        with self._session(session_id, write=True) as state:
            return state.try_acquire(owner, now, ttl_s)

    def arrivals(self, session_id: str) -> int:
        """See :meth:`Inbox.arrivals`."""
        with self._session(session_id, write=False) as state:
            return state.arrivals

    def release(self, session_id: str, owner: str, seen_arrivals: int) -> bool:
        """See :meth:`Inbox.release`."""
        with self._session(session_id, write=True) as state:
            return state.release(owner, seen_arrivals)

    def drain_view(self, session_id: str) -> DrainView:
        """See :meth:`Inbox.drain_view`: one read of the session's inbox file."""
        with self._session(session_id, write=False) as state:
            return state.drain_view()


@contextlib.contextmanager
def _io_errors() -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise StoreError(f"inbox I/O failed: {exc}") from exc
