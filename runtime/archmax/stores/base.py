"""The ``SessionStore`` protocol every store implements, and the records it moves.

Rule source: BEHAVIOUR.md §9.1 (protocol), §9.2 (layout), §9.3 (checkpoints), DESIGN.md §3.
Stores store: what a firing means, leases and the inbox live in ``engine/`` and ``hosting/``.

Conflicts: a commit against a stale version, or under a lease owner other than the one
expected, raises :class:`archmax.errors.CommitConflictError` from every store.
Paths given to file methods are relative to the session folder, use ``/``, and are checked by
:func:`check_relative_path` before they become a path or key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from archmax.errors import InvalidFilePathError
from archmax.session.records import PARKED_STATUSES, Checkpoint, Lease, SessionStatus


@dataclass(frozen=True)
class StoreCapabilities:
    """What a store can do beyond load/commit/get/seed (§9.1). A plain value: every store builds one at start-up."""

    list: bool = True
    """``list()``, ``due()`` and ``stale()`` work."""
    delete: bool = True
    """``delete()`` works."""
    upload_files: bool = True
    """``upload_files()`` exists: raw bytes can be stored."""


class SessionHead(BaseModel):
    """The cheap part of a session: what a store can answer without reading the checkpoint body."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_id: str
    version: int
    workflow: str
    status: SessionStatus
    lease: Lease | None = None
    resume_at: str | None = None
    """Present only while parked with a wake instant: an input park's ``resume_at``, or a park's
    deadline (``timeout_at``) when that comes first (BEHAVIOUR.md §5.11)."""
    updated_at: str


class DuePark(NamedTuple):
    """One due input park: the session, its ``resume_at``, and the committed version it was found at."""

    session_id: str
    resume_at: str
    version: int


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live (§9.1). Every method validates the id (§4.1) before building a path or key."""

    capabilities: StoreCapabilities

    def load(self, session_id: str) -> Checkpoint | None:
        """The latest committed checkpoint, or ``None``. A reader never sees a partial record.

        Every call returns a new object that the caller owns and may change: the engine builds the
        next version on it directly, so a store must never hand out (or keep) a shared instance.
        """

    def head(self, session_id: str) -> SessionHead | None:
        """The latest committed version's head (status, version, lease, resume_at), or ``None``."""

    def commit(self, session_id: str, record: Checkpoint, expected_version: int, *, lease_owner: str | None = None) -> None:
        """Atomically create version ``expected_version + 1`` (``record.version`` must equal it).

        Args:
            session_id: The session.
            record: The whole new record.
            expected_version: The version the writer read (0 for a new session).
            lease_owner: When given, the stored record's lease owner must be this owner.

        Raises:
            CommitConflictError: that version exists already, or the stored lease owner differs.
        """

    def list(self) -> list[str]:
        """Ids of all sessions that have a checkpoint, sorted (needs ``list``)."""

    def due(self, now: str, workflow: str | None = None) -> list[tuple[str, str]]:
        """The due input parks: sessions parked on ``input`` with ``resume_at <= now`` (needs ``list``).

        What ``sweep`` wakes (§11 ``sweep``; DESIGN.md §3 "Due parks": the AWS store answers from a
        sparse index, never a table scan).

        Args:
            now: An instant string ``YYYY-MM-DDTHH:MM:SS.mmmZ``; string order is time order.
            workflow: Only sessions of this workflow slug, when given.

        Returns:
            ``(session_id, resume_at)`` pairs ordered by ``resume_at``, then id.
        """

    def due_parks(self, now: str, workflow: str | None = None) -> list[DuePark]:
        """The due input parks as :meth:`due` lists them, each with the version it was found at.

        The version names the park: a timer delivers ``deliver(..., park_version=version)``, so a
        sweep working from an older listing can never wake a park that was made after it (issue 9).
        """

    def stale(self, now: str, workflow: str | None = None) -> list[str]:
        """Ids of ``running`` sessions whose turn holder is gone, sorted (needs ``list``).

        A session is stale when its lease expired (``lease.expires_at <= now``) or, with no lease
        at all (let go after a crash), when ``updated_at <= now``. The sweep re-drives these
        (DESIGN.md §3 "Inbox": "the sweep re-drives sessions with expired leases").
        """

    def get(self, session_id: str, path: str) -> bytes | None:
        """A session file's bytes, or ``None``."""

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        """Write text files (UTF-8). With ``create_only``, raise ``PathExistsError`` for a path that exists."""

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        """Write raw bytes (only with the ``upload_files`` capability)."""

    def list_files(self, session_id: str, prefix: str = "") -> list[str]:
        """Paths under ``prefix``, relative to the session folder, sorted."""

    def delete(self, session_id: str) -> bool:
        """Remove the folder and checkpoints; return whether anything existed (needs ``delete``)."""

    def get_spec(self, spec_hash: str) -> dict[str, Any] | None:
        """A spec snapshot, or ``None``."""

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        """Write a snapshot create-only; return False when it already existed."""


def load_if(
    store: SessionStore, session_id: str, wanted: Callable[[SessionHead], bool]
) -> tuple[SessionHead | None, Checkpoint | None]:
    """``(head, record)``: the record only when ``wanted(head)`` (else ``None``).

    Uses the store's own ``load_if`` where it has one (``AwsStore``: one read for both), else
    :meth:`SessionStore.head` then :meth:`SessionStore.load`.
    """
    own = getattr(store, "load_if", None)
    if own is not None:
        return own(session_id, wanted)
    head = store.head(session_id)
    if head is None or not wanted(head):
        return head, None
    return head, store.load(session_id)


def head_of(record: Checkpoint) -> SessionHead:
    """The head of a full record."""
    return SessionHead(
        session_id=record.session_id,
        version=record.version,
        workflow=record.workflow,
        status=record.status,
        lease=record.lease,
        # the park's wake instant: its until or its deadline, whichever comes first (§5.11)
        resume_at=record.wake_at if record.status in PARKED_STATUSES else None,
        updated_at=record.updated_at,
    )


def check_relative_path(path: object, *, session_id: str | None = None) -> str:
    """Return a safe relative file path or raise ``InvalidFilePathError``.

    A safe path is a non-empty string of ``/``-separated segments, none empty, ``.`` or ``..``,
    with no backslash, NUL or control character, not absolute.
    """
    if not isinstance(path, str) or not path:
        raise InvalidFilePathError(path, "a path must be a non-empty string", session_id=session_id)
    if path.startswith("/") or "\\" in path:
        raise InvalidFilePathError(path, "a path must be relative and use '/'", session_id=session_id)
    if any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in path):
        raise InvalidFilePathError(path, "a path must not contain control characters", session_id=session_id)
    if any(seg in ("", ".", "..") for seg in path.split("/")):
        raise InvalidFilePathError(path, "a path segment must not be empty, '.' or '..'", session_id=session_id)
    return path
