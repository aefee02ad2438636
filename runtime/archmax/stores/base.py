"""The store port: the ``SessionStore`` protocol, its declared capabilities, and the records it moves.

Rule source: BEHAVIOUR.md §9.1 (protocol), §9.2 (layout), §9.3 (checkpoints), DESIGN.md §3;
issue 23 "The port" (everything a caller needs is here, nothing is found by ``getattr``).

This module is the whole contract between the engine/hosting layers and a store:

* every operation a caller makes is a method of :class:`SessionStore`, with explicit parameters
  (the store's place is ``location``);
* every optional behaviour is a declared :class:`Capability` in ``store.capabilities``, tested as
  ``Capability.X in store.capabilities`` and never sniffed. A store that lacks a capability still
  has the method: it either refuses (``SessionStoreCapabilityError``: ``list``, ``delete``,
  ``upload_files``) or has a default that is correct without the fast path
  (:class:`~archmax.stores.fallbacks.StoreFallbacks`).

So a wrapper that forwards exactly the protocol's members (tracing, metrics, tenancy; the test
suite's ``tests/stores/protocol_only.py``) takes the same code paths, with the same AWS calls, as
the store it wraps.

Conflicts: a commit against a stale version, or under a lease owner other than the one
expected, raises :class:`archmax.errors.CommitConflictError` from every store.
Paths given to file methods are relative to the session folder, use ``/``, and are checked by
:func:`check_relative_path` before they become a path or key.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from archmax.errors import InvalidFilePathError
from archmax.session.records import PARKED_STATUSES, Checkpoint, Lease, SessionStatus


class Capability(StrEnum):
    """What a store declares it does beyond the core (load, head, commit, get, seed, specs).

    A caller tests ``Capability.X in store.capabilities``; the conformance suite has one module per
    capability (``tests/stores/conformance/test_<capability>.py``) and skips a store that lacks it
    with the reason the store declares (:meth:`Capabilities.reason`).
    """

    LIST = "list"
    """``list()``, ``due()``, ``due_parks()``, ``stale()``, ``outbox_pending()`` and ``oldest_park()`` answer (else they raise
    ``SessionStoreCapabilityError``). Callers: ``sessions.list``, ``sweep``, the CLI."""
    DELETE = "delete"
    """``delete()`` works (else ``SessionStoreCapabilityError``). Caller: ``sessions.delete``."""
    UPLOAD_FILES = "upload_files"
    """``upload_files()`` stores raw bytes (else ``SessionStoreCapabilityError``). Callers: firing
    file placement (engine/placement.py), the quarantine's raw mail (inbound/quarantine.py)."""
    APPEND_TEXT = "append_text"
    """``append_text()`` appends in place; without it, it rewrites the file (a read and a write).
    Caller: the artifacts writer (engine/artifacts.py) appends trajectory lines only with it."""
    GUARDED_READS = "guarded_reads"
    """Inside ``guarded_reads()``, reads may be answered from this instance's memory and every such
    read is checked by the operation's claim (a commit conditional on the version read, which fails
    when the view was old; ``prime`` remembers what the failed condition found), and
    ``reads.committed`` names the sessions a commit made inside the block wrote. Without it the
    block serves nothing from memory (every read is real, ``reads.versions`` is empty). Caller:
    the engine's door (issue 24: the claim is the read, engine/remembered.py)."""
    HELD_MAIL_HINT = "held_mail_hint"
    """``note_held_mail`` keeps a per-session hint of possibly-held mail and ``held_mail_hint``
    answers from the last read, so a summary needs no quarantine listing. Without it the note is a
    no-op and the hint is ``None`` (unknown: list the folder). Caller: inbound/quarantine.py."""
    ARTIFACTS_ON_READ = "artifacts_on_read"
    """Artifacts are materialised when read (``sessions.artifact``), so the engine writes none per
    operation (§9.5; the AWS store). Caller: engine/artifacts.py."""
    OUTBOX_STREAM = "outbox_stream"
    """Committed outbox entries are sent by the store's own change stream (the outbound function,
    DESIGN.md §3), so ``create_agent`` builds no in-process dispatcher unless given one. Caller: agent.py."""


class Capabilities(frozenset[Capability]):
    """A store's declared capabilities: a frozen set of :class:`Capability`, with why each absent one is.

    Compares as a plain set. ``list``/``delete``/``upload_files`` are read-only booleans kept for
    callers written before the enum (``store.capabilities.list``); new code tests membership.
    """

    _reasons: Mapping[Capability, str]

    def __new__(
        cls, members: Iterable[Capability | str] = (), reasons: Mapping[Capability, str] | None = None
    ) -> Capabilities:
        """The set of ``members``, with ``reasons``: capability -> why this store lacks it."""
        made = super().__new__(cls, (Capability(m) for m in members))
        made._reasons = dict(reasons or {})
        return made

    def reason(self, capability: Capability) -> str:
        """Why ``capability`` is absent, as the store declared it (a generic sentence when it gave none)."""
        return self._reasons.get(capability) or f"the store does not declare the '{capability}' capability"

    @property
    def list(self) -> bool:
        """``Capability.LIST in self`` (compatibility)."""
        return Capability.LIST in self

    @property
    def delete(self) -> bool:
        """``Capability.DELETE in self`` (compatibility)."""
        return Capability.DELETE in self

    @property
    def upload_files(self) -> bool:
        """``Capability.UPLOAD_FILES in self`` (compatibility)."""
        return Capability.UPLOAD_FILES in self


CORE_FLAGS = frozenset({Capability.LIST, Capability.DELETE, Capability.UPLOAD_FILES})
"""The capabilities :class:`StoreCapabilities` switches (what tests reduce on a ``MemoryStore``)."""


class StoreCapabilities(Capabilities):
    """The three switchable capabilities as booleans (compatibility constructor, §9.1).

    ``StoreCapabilities(list=False)`` is ``Capabilities({DELETE, UPLOAD_FILES})``; a store given one
    adds the capabilities it always has (e.g. ``APPEND_TEXT`` on the memory store).
    """

    def __new__(cls, list: bool = True, delete: bool = True, upload_files: bool = True) -> StoreCapabilities:  # noqa: A002
        """The switched-on members of ``LIST``, ``DELETE``, ``UPLOAD_FILES``."""
        on = {Capability.LIST: list, Capability.DELETE: delete, Capability.UPLOAD_FILES: upload_files}
        made = super().__new__(cls, [c for c, yes in on.items() if yes])
        return made  # type: ignore[return-value]


@dataclass(frozen=True)
class StoreLocation:
    """Where a store keeps sessions, for the edges that name that place (aliases, file paths).

    Attributes:
        root: A filesystem store's folder of session folders (``None`` elsewhere). Callers: the
            alias index beside the sessions (outbound/aliases.py), absolute file paths in mail
            (outbound/transports.py), the CLI's filesystem inbox (cli_quarantine.py).
        bucket: The S3 bucket holding session objects (``None`` elsewhere).
        key_root: The key prefix inside ``bucket`` (``""`` for the bucket root).
    """

    root: Path | None = None
    bucket: str | None = None
    key_root: str = ""


class ReadGuards(Protocol):
    """The reads made inside :meth:`SessionStore.guarded_reads`, each checked by the operation's claim.

    Attributes:
        versions: Session id -> the version a read was answered at from memory (0: read as absent).
        committed: See below (what tells a caller whether its operation wrote anything, issue 24).
    """

    versions: dict[str, int]
    committed: set[str]
    """Session ids a commit of this store made inside the block wrote, or may have written (it failed
    without saying whether it applied); a commit refused as a conflict wrote nothing and adds nothing.
    Kept by a store with ``GUARDED_READS``; always empty without it (nothing was served from memory,
    so no caller asks)."""


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
    parked_at: str | None = None
    """Present only while parked: when the current park was made (``Checkpoint.parked_since``),
    what the oldest-park metric ages (BEHAVIOUR.md §5.11)."""
    updated_at: str


class OldestPark(NamedTuple):
    """The longest-open park of a workflow: the session and when its park was made (an instant string)."""

    session_id: str
    parked_at: str


class DuePark(NamedTuple):
    """One due input park: the session, its ``resume_at``, and the committed version it was found at."""

    session_id: str
    resume_at: str
    version: int


class OutboxOutcome(StrEnum):
    """How an outbox entry was settled: sent, or failed for good (issue 20 items 1 and 5)."""

    SENT = "sent"
    FAILED = "failed"


class OutboxClaim(StrEnum):
    """What :meth:`SessionStore.outbox_claim` found (issue 20 item 3)."""

    CLAIMED = "claimed"
    """This sender holds the entry: it sends, then records the outcome."""
    SENT = "sent"
    FAILED = "failed"
    HELD = "held"
    """Another sender holds a live claim: it sends and records, or its claim expires for the sweep."""


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live (§9.1). Every method validates the id (§4.1) before building a path or key.

    Attributes:
        capabilities: The declared :class:`Capability` set (see each member for what it promises).
    """

    capabilities: Capabilities

    @property
    def location(self) -> StoreLocation:
        """Where the sessions are (:class:`StoreLocation`): a folder, or a bucket and key root."""
        ...

    # ------------------------------------------------------------------ checkpoints

    def load(self, session_id: str, *, reads: ReadGuards | None = None) -> Checkpoint | None:
        """The latest committed checkpoint, or ``None``. A reader never sees a partial record.

        Every call returns a new object that the caller owns and may change: the engine builds the
        next version on it directly, so a store must never hand out (or keep) a shared instance.

        ``reads`` is the read hint: guards from this store's :meth:`guarded_reads` that may answer
        this read from memory and note it for the caller's write (``GUARDED_READS``; ignored
        without it). Inside a ``guarded_reads()`` block the block's guards apply when none is given.
        """
        ...

    def load_if(
        self, session_id: str, wanted: Callable[[SessionHead], bool], *, reads: ReadGuards | None = None
    ) -> tuple[SessionHead | None, Checkpoint | None]:
        """``(head, record)``: the record only when ``wanted(head)`` (else ``None``).

        The AWS store answers both from one item read; the default is :meth:`head`, then
        :meth:`load` when wanted. Caller: the engine's resume of a parked session (a refusal such as
        a timer into a finished session needs only the head). ``reads``: as :meth:`load`.
        """
        ...

    def head(self, session_id: str, *, reads: ReadGuards | None = None) -> SessionHead | None:
        """The latest committed version's head (status, version, lease, resume_at), or ``None``.

        ``reads``: as :meth:`load`.
        """
        ...

    def commit(
        self,
        session_id: str,
        record: Checkpoint,
        expected_version: int,
        *,
        lease_owner: str | None = None,
    ) -> None:
        """Atomically create version ``expected_version + 1`` (``record.version`` must equal it).

        Args:
            session_id: The session.
            record: The whole new record.
            expected_version: The version the writer read (0 for a new session).
            lease_owner: When given, the stored record's lease owner must be this owner.

        Raises:
            CommitConflictError: that version exists already, or the stored lease owner differs.
        """
        ...

    # ------------------------------------------------------------------ listings (Capability.LIST)

    def list(self) -> builtins.list[str]:
        """Ids of all sessions that have a checkpoint, sorted (needs ``LIST``)."""
        ...

    def due(self, now: str, workflow: str | None = None) -> builtins.list[tuple[str, str]]:
        """The due input parks: sessions parked on ``input`` with ``resume_at <= now`` (needs ``LIST``).

        What ``sweep`` wakes (§11 ``sweep``; DESIGN.md §3 "Due parks": the AWS store answers from a
        sparse index, never a table scan).

        Args:
            now: An instant string ``YYYY-MM-DDTHH:MM:SS.mmmZ``; string order is time order.
            workflow: Only sessions of this workflow slug, when given.

        Returns:
            ``(session_id, resume_at)`` pairs ordered by ``resume_at``, then id.
        """
        ...

    def due_parks(self, now: str, workflow: str | None = None) -> builtins.list[DuePark]:
        """The due input parks as :meth:`due` lists them, each with the version it was found at.

        The version names the park: a timer delivers ``deliver(..., park_version=version)``, so a
        sweep working from an older listing can never wake a park that was made after it (issue 9).
        """
        ...

    def stale(self, now: str, workflow: str | None = None) -> builtins.list[str]:
        """Ids of ``running`` sessions whose turn holder is gone, sorted (needs ``LIST``).

        A session is stale when its lease expired (``lease.expires_at <= now``) or, with no lease
        at all (let go after a crash), when ``updated_at <= now``. The sweep re-drives these
        (DESIGN.md §3 "Inbox": "the sweep re-drives sessions with expired leases").
        """
        ...

    def oldest_park(self, workflow: str) -> OldestPark | None:
        """The workflow's park made longest ago, or ``None`` when none of its sessions is parked (needs ``LIST``).

        What hosts report as the oldest park's age per workflow (BEHAVIOUR.md §5.11, issue 21 item 7),
        at every sweep: so it reads no session but the answer (the AWS store queries its sparse
        ``open-parks`` index, one item per shard, never a table scan). A parked child session
        (§5.10) counts under its own workflow; its caller is parked too and counts under its own.

        Args:
            workflow: The workflow slug.

        Returns:
            ``(session_id, parked_at)`` of the park with the smallest ``parked_at`` (ties: the lowest
            id), where ``parked_at`` is ``SessionHead.parked_at``.
        """
        ...

    # ------------------------------------------------------------------ the outbox marks (issue 20)

    def outbox_pending(self, workflow: str | None = None) -> builtins.list[str]:
        """Ids of sessions whose outbox may hold an entry not yet sent, sorted (needs ``LIST``).

        A commit that records outbox entries marks its session, in the same write path, before the
        commit point (issue 20 item 2); :meth:`outbox_settled` clears the mark. What the sweep sends
        from, without reading any other session (the AWS store answers from a sparse index).

        Args:
            workflow: Only sessions of this workflow slug, when given.
        """
        ...

    def outbox_settled(self, session_id: str, version: int, *, created_at: str | None = None) -> None:
        """Clear the session's outbox mark: every entry recorded up to ``version`` is sent (or failed for good).

        A mark a later commit made (a version above ``version``) stays. ``created_at``: the life of
        the session the settled record belongs to (its ``created_at``); when given, a mark of another
        life stays too (a session deleted and started again under its id counts versions afresh, so a
        sender holding the old life's record must not clear the new life's mark). The AWS store
        checks it in the same conditional write; the local stores' marks go with ``delete``.
        """
        ...

    # ------------------------------------------------------------------ outbox entry state (issue 20 items 3, 5; issue 24)

    def outbox_claim(
        self, session_id: str, entry_id: str, *, created_at: str, owner: str, now: str, until: str
    ) -> OutboxClaim:
        """Claim outbox entry ``entry_id`` for sending, unless it is settled or another sender holds it.

        One sender at a time: a claim holds the entry until ``until`` or until its owner releases it;
        of racing claimers exactly one gets ``CLAIMED``. An entry with a sent or failed record is
        never claimed again. Rule source: issue 20 item 3 (:mod:`archmax.outbound.dispatch`).

        Args:
            session_id: The session.
            entry_id: The entry's id (``OutboxEntry.id``, ``<version, 10 digits>-<index>``).
            created_at: The session's ``created_at`` (every ``outbox_*`` member takes it): entry ids
                repeat in a session deleted and started again under the same id, so state a store
                keeps beyond ``delete`` is the state of one session's life only.
            owner: The claimer's unique token.
            now: The current instant; a claim whose ``until`` is at or before it holds nothing.
            until: The instant this claim stops holding the entry.

        Returns:
            ``CLAIMED`` (send it now), ``SENT`` / ``FAILED`` (settled: nothing to do), ``HELD``
            (another sender holds a live claim).

        Raises:
            StoreError: the store failed.
        """
        ...

    def outbox_release(self, session_id: str, entry_id: str, *, created_at: str, owner: str, now: str) -> None:
        """Let ``owner``'s claim on the entry go at once (a failed send): the next claim may be made now.

        Nothing happens when ``owner`` no longer holds the entry or it is settled.

        Raises:
            StoreError: the store failed (the claim then expires on its own).
        """
        ...

    def outbox_record(
        self, session_id: str, entry_id: str, outcome: OutboxOutcome, body: str, *, created_at: str
    ) -> bool:
        """Record the entry ``SENT`` or ``FAILED`` for good, once; ``body`` is the result's JSON text.

        Returns:
            True when this call recorded it; False when that outcome was recorded already (the
            first record stands).

        Raises:
            StoreError: the store failed.
        """
        ...

    def outbox_outcomes(
        self, session_id: str, entry_ids: Iterable[str], *, created_at: str
    ) -> dict[str, OutboxOutcome]:
        """``entry id -> SENT | FAILED`` for the entries among ``entry_ids`` that are settled.

        An entry missing from the answer is not known settled (it may have been settled a moment
        ago: callers treat "unknown" as "keep it"). What the committer asks before it drops entries
        from the record (:func:`archmax.outbound.settled.settled_in`) and the sender before it clears
        the session's outbox mark.

        Raises:
            StoreError: the store failed.
        """
        ...

    def outbox_result(self, session_id: str, entry_id: str, *, created_at: str) -> str | None:
        """The JSON text recorded for a ``SENT`` entry (``outbound.dispatch.Sent``), or ``None`` while unsent.

        Raises:
            StoreError: the store failed.
        """
        ...

    # ------------------------------------------------------------------ files

    def get(self, session_id: str, path: str) -> bytes | None:
        """A session file's bytes, or ``None``."""
        ...

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        """Write text files (UTF-8). With ``create_only``, raise ``PathExistsError`` for a path that exists."""
        ...

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        """Write raw bytes (needs ``UPLOAD_FILES``, else ``SessionStoreCapabilityError``)."""
        ...

    def append_text(self, session_id: str, path: str, text: str) -> None:
        """Append UTF-8 text to one file, created when absent (in place with ``APPEND_TEXT``)."""
        ...

    def list_files(self, session_id: str, prefix: str = "") -> builtins.list[str]:
        """Paths under ``prefix``, relative to the session folder, sorted."""
        ...

    def remove_files(self, session_id: str, paths: builtins.list[str]) -> None:
        """Remove session files (never checkpoints); an absent path is skipped.

        Caller: engine/placement.py takes back the files a firing placed before its claim failed
        (BEHAVIOUR.md §9.5; issue 9 item 7).
        """
        ...

    def delete(self, session_id: str) -> bool:
        """Remove the folder and checkpoints; return whether anything existed (needs ``DELETE``)."""
        ...

    # ------------------------------------------------------------------ specs

    def get_spec(self, spec_hash: str) -> dict[str, Any] | None:
        """A spec snapshot, or ``None``."""
        ...

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        """Write a snapshot create-only; return False when it already existed."""
        ...

    # ------------------------------------------------------------------ held mail (Capability.HELD_MAIL_HINT)

    def note_held_mail(self, session_id: str, delivery_id: str, *, held: bool) -> None:
        """Add ``delivery_id`` to the session's hint of possibly-held mail (``held``), or take it out.

        The quarantine notes an id before writing the held mail and takes it out after the release,
        so the hint is a superset of what is held. A no-op without ``HELD_MAIL_HINT``.
        """
        ...

    def held_mail_hint(self, session_id: str, version: int) -> frozenset[str] | None:
        """The ids that may be held for ``session_id``, if known from the read of ``version`` just made.

        ``None`` means unknown (list the quarantine folder); an empty set means nothing is held.
        Always ``None`` without ``HELD_MAIL_HINT``.
        """
        ...

    # ------------------------------------------------------------------ guarded reads (Capability.GUARDED_READS)

    def guarded_reads(self, *, only: str | None = None, once: bool = False) -> AbstractContextManager[ReadGuards]:
        """A block whose session reads may be answered from this instance's memory, each noted for a check.

        Args:
            only: Serve only reads of this session from memory (others are real).
            once: Serve only the first read of each session, and only of a session this instance
                holds a version of (or was primed as absent).

        Yields:
            The :class:`ReadGuards` noting each read served from memory (its version is what the
            operation's claim must find). Without ``GUARDED_READS`` every read is real and nothing is noted.
        """
        ...

    def prime(self, session_id: str, item: dict[str, Any] | None) -> None:
        """Remember a session as a refused commit's condition found it (its stored item; ``None``: there is none)."""
        ...


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
        parked_at=record.parked_since if record.status in PARKED_STATUSES else None,
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
