"""One operation's hold on one session: the record being built, the lease, and commits.

Rule source: BEHAVIOUR.md §3.12 (lease, commits), §9.3 (when commits happen) as issue 10 narrows
it: one claim, one commit per turn. A ``Work`` is created by claiming the session (a conditional
commit that takes the lease and records the firing); every later commit is conditional on the
version it read and on still owning the lease; the commit that leaves the session finished or
suspended lets the lease go. Between the two, a step boundary (:meth:`Work.step`) commits only
when the lease needs renewing; the loop forces a commit (:meth:`Work.commit`) after work with
side effects outside the record (a host tool ran, a hook ran, a child session was created), so a
crash repeats at most model calls and control tools, never a side effect.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta

from archmax.clock import Clock, epoch_ms, format_instant
from archmax.errors import CommitConflictError
from archmax.outbound.outbox import record_outbox
from archmax.outbound.settled import settled_in
from archmax.session.records import Checkpoint, Lease, Usage, stamp_park
from archmax.stores.base import SessionStore

_WAITING: ContextVar[tuple[Work, ...]] = ContextVar("archmax_callers_waiting_on_a_child", default=())
"""The operations of the callers whose child runs in this context, outermost first."""

_RELEASED: ContextVar[dict[str, Checkpoint] | None] = ContextVar("archmax_records_released_here", default=None)
"""Session id -> the last record a ``Work`` of this operation let go with outbox entries (:func:`releases`)."""


@contextmanager
def releases() -> Iterator[dict[str, Checkpoint]]:
    """Collect what an operation leaves to send: every session it let go of with outbox entries.

    One operation commits the caller and its child (§5.10): a sub-workflow call, a forwarded
    firing or a sweep's wake of a child's timer. The door answers one record, so the others are
    collected here, session id -> the record (its outbox as committed) of that session's last
    release in this context, for the in-process dispatch to send them all (DESIGN.md §3; issue 20:
    nothing committed is left for a later sweep).

    An operation that raises has let go of them all the same (a child finished, then its caller's
    next model call met an outage): what it collected passes to the enclosing collection, when one
    is open (``Agent.apply``'s), whose dispatch sends it before the error goes on.
    """
    enclosing = _RELEASED.get()
    released: dict[str, Checkpoint] = {}
    token = _RELEASED.set(released)
    try:
        yield released
    except Exception:  # an error, not a process dying (a BaseException): nothing runs after that
        if enclosing is not None:
            enclosing.update(released)  # committed before the error: still the consequences' (issue 20)
        raise
    finally:
        _RELEASED.reset(token)


@contextmanager
def waiting_on_child(caller: Work) -> Iterator[None]:
    """While a caller's child runs, every lease commit of the child renews the caller's lease when due.

    The caller waits inside its ``archmax_workflow_*`` call (or a forwarded firing) for as long as the
    child's turn takes; without this a sweep would take the caller over once its own lease ran out
    (§3.12), and the live operation would lose it. A renewal commits the caller's record as it stands,
    which is what it last committed (the call in flight, or the claim of a forwarded firing).
    """
    token = _WAITING.set((*_WAITING.get(), caller))
    try:
        yield
    finally:
        _WAITING.reset(token)


@dataclass
class Work:
    """The record an operation is building, with the version it last committed.

    Attributes:
        record: The working copy (mutated in place, committed by :meth:`commit`).
        version: The last committed version (0 before the session's first commit).
        owner: This operation's lease owner id.
        start_messages: Transcript length when the operation started (for ``Outcome.reply``); taken
            from ``record`` at construction, so build a ``Work`` before adding the firing's messages.
        start_version: The version the operation loaded (what its artifacts continue from, §9.5).
        usage: What this operation spent.
        warnings: Warnings for ``Outcome.warnings``.
    """

    store: SessionStore
    clock: Clock
    lease_ttl_s: float
    record: Checkpoint
    version: int
    owner: str = field(default_factory=lambda: f"lease-{uuid.uuid4().hex}")
    holds_lease: bool = False
    start_messages: int = field(init=False)
    start_version: int = field(init=False)
    usage: Usage | None = None
    warnings: list[str] = field(default_factory=list)
    recovered: bool = False
    outbox_words: str | None = None
    """The words the turn-ending commit mails when they are not the record's own (a caller answering
    through its child's decision park, issue 20 item 4); ``None`` reads them from the record."""
    lease_in_doubt: bool = False
    """A lease commit of a child this caller waited on raised without saying whether it applied: the
    child may still be leased, so this caller keeps its own lease on an error (issue 22)."""

    def __post_init__(self) -> None:
        self.start_messages = len(self.record.messages)
        self._unstamped = self.start_messages  # messages before this index already carry their commit time
        self.start_version = self.version
        self._renew_at = self.clock.now()  # before the claim: any step boundary commits

    def now(self) -> str:
        """The injected clock's now as an instant string ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (BEHAVIOUR.md conventions)."""
        return format_instant(self.clock.now())

    def claim(self) -> None:
        """Take the lease with a commit conditional on the version read (§3.12).

        Raises:
            CommitConflictError: another writer committed since the load (one writer per session).
        """
        self.holds_lease = False
        self._commit(lease=True, claim=True)

    def commit(self) -> None:
        """Commit the working record now, extending the lease (§3.12, §9.3).

        For step boundaries after side effects outside the record; other boundaries call :meth:`step`.
        """
        self._commit(lease=True, claim=False)

    def step(self) -> None:
        """A step boundary with nothing to protect but the lease: commit only when the lease needs renewing.

        A model call or a control tool repeats harmlessly after a crash (the takeover continues from
        the claim or the last forced commit), so it is not worth a store write of its own (issue 10:
        one claim, one commit per turn). The lease is renewed once half its time (``lease_ttl_s``,
        seconds) has passed since the last commit, so a long turn is never taken over while it runs.
        """
        if self.clock.now() >= self._renew_at:
            self.commit()

    def release(self) -> None:
        """Commit the working record and let the lease go (finished or suspended)."""
        self._commit(lease=False, claim=False)

    def _commit(self, *, lease: bool, claim: bool) -> None:
        now = self.clock.now()
        rec = self.record
        rec.version = self.version + 1
        rec.updated_at = format_instant(now)
        stamp_park(rec)  # a park made since the last commit is named by this version (§5.11)
        ms = epoch_ms(now)
        for message in rec.messages[self._unstamped :]:  # what this operation appended since its last commit
            if message.ts is None:
                message.ts = ms
        rec.lease = (
            Lease(owner=self.owner, expires_at=format_instant(now + timedelta(seconds=self.lease_ttl_s)))
            if lease
            else None
        )
        if not lease:
            # the turn's outbound messages ride its last commit; only entries known sent leave (issue 20 item 1)
            settled = settled_in(self.store, rec.session_id, list(rec.outbox), created_at=rec.created_at)
            record_outbox(rec, self.start_messages, settled=settled, words=self.outbox_words)
        owner = None if claim or not self.holds_lease else self.owner
        try:
            self.store.commit(rec.session_id, rec, self.version, lease_owner=owner)
        except Exception as exc:
            if lease and not isinstance(exc, CommitConflictError):
                # it may have applied: this child may hold a live lease nobody renews, so its callers keep
                # theirs too and the pair's leases run out together (issue 22)
                for caller in _WAITING.get():
                    caller.lease_in_doubt = True
            raise
        self.version = rec.version
        self.holds_lease = lease
        released = _RELEASED.get()
        if not lease and rec.outbox and released is not None:  # its outbox as committed, for the door's caller
            released[rec.session_id] = rec.model_copy(update={"outbox": list(rec.outbox)})
        self._unstamped = len(rec.messages)
        self._renew_at = now + timedelta(seconds=self.lease_ttl_s / 2)
        waiting = _WAITING.get()
        if lease and all(caller is not self for caller in waiting):
            for caller in waiting:  # a child's progress keeps its callers' leases alive (issue 22 item 3)
                if caller.holds_lease:
                    caller.step()

    def spend(self, usage: Usage | None) -> None:
        """Add a model call's usage to the operation's and the session's totals."""
        if usage is None:
            return
        self.usage = usage.model_copy() if self.usage is None else self.usage.plus(usage)
        self.record.usage = self.record.usage.plus(usage)
