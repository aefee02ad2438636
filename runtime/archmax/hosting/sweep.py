"""The timer sweep: wake every session whose ``resume_at`` is due, and finish turns whose process died.

Rule source: BEHAVIOUR.md §11 (``sweep``), §3.5 (a delivery to a session that is not parked is
refused) and the seed, "Waiting for a time, not a reply": the SDK schedules nothing; waking a
session is the host's job, and a double-fired timer is safe because ``deliver`` refuses a session
that is no longer parked. DESIGN.md §3 "Inbox": "A lease whose holder died expires; the sweep
re-drives sessions with expired leases" (:func:`recover_stale`; safe to race for the same reason:
one takeover wins, the others are refused). ``archmax sweep`` and the AWS timer handler (through
``Host.sweep``) call both, then :func:`send_outbox`: every committed outbox entry not sent yet is sent
(issue 20 item 2: an entry SMTP refused, or whose process died right after its commit, or whose
stream record ran out of retries), a finished session's too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from archmax.clock import format_instant, parse_instant
from archmax.errors import ArchmaxError, SessionNotResumableError, SessionStoreCapabilityError
from archmax.hosting.timers import (  # re-exported: the kinds and triggers a sweep reports
    ERROR,
    QUEUED,
    SKIPPED,
    TIMEOUT_TRIGGER,
    TIMER_TRIGGER,
    DueTimer,
    InProcess,
    TimerHandOff,
)
from archmax.stores.base import Capability, SessionStore

if TYPE_CHECKING:
    from archmax.agent import Agent
    from archmax.outbound.dispatch import Dispatcher
    from archmax.session.results import Outcome


RECOVERED = "recovered"
"""What ``archmax sweep`` prints for a dead turn :func:`recover_stale` continued (whatever its outcome)."""


def sweep(
    agent: Agent,
    now: str | None = None,
    *,
    on_error: Callable[[str, ArchmaxError], None] | None = None,
    on_outcome: Callable[[str, Outcome], None] | None = None,
    on_due: Callable[[str, str], None] | None = None,
    hand_off: TimerHandOff | None = None,
) -> list[tuple[str, str]]:
    """Find every due input park of the agent's workflow and hand each its timer (issue 24 goal 3).

    Selection: sessions of ``agent.spec.slug`` parked on ``input`` with ``resume_at <= now``,
    ordered by ``resume_at`` then id (``store.due_parks``). Each becomes a
    :class:`~archmax.hosting.timers.DueTimer` naming the version it was listed at, and ``hand_off``
    has it fired (:func:`archmax.hosting.timers.fire`):
    ``deliver(id, trigger="timer", variables={"now": now}, park_version=<that version>)``, or
    ``timeout`` when the park's deadline passed first (§5.11). A session that is no longer at that
    park when its timer is fired (another sweep, or a reply, got there first, even if it parked
    again since) raises ``SessionNotAwaitingInputError``, which is reported as ``skipped`` and is
    not a failure.

    Args:
        agent: An assembled agent; its store needs the ``list`` capability.
        now: The instant to sweep at, ``YYYY-MM-DDTHH:MM:SS.mmmZ``; ``None`` reads the agent's clock.
        on_error: Called with ``(session_id, error)`` for a delivery that raised any other
            :class:`ArchmaxError` (or a timer the queue refused); the sweep then goes on.
        on_outcome: Called with ``(session_id, outcome)`` for each delivery that returned (what
            ``archmax sweep`` prints the reply or handoff message from).
        on_due: Called with ``(session_id, resume_at)`` for each due park just before its delivery
            (hosting measures how late the timer fired).
        hand_off: Where the timers go; default :class:`~archmax.hosting.timers.InProcess` (fired
            here, one after another). On AWS, :class:`~archmax.hosting.timer_queue.SqsTimers`
            queues them for the wake function, which fires them in parallel.

    Returns:
        ``[(session_id, kind), ...]`` in listing order, where ``kind`` is the Outcome's kind
        (``completed``, ``parked``, ``failed``, ``rejected``), ``skipped`` or ``error``; ``queued``
        for a timer handed to the queue.

    Raises:
        SessionStoreCapabilityError: the store cannot list due parks.
        StoreError: the timer queue failed as a whole (``SqsTimers``).

    Example:
        >>> sweep(agent, "2025-01-02T00:00:00.000Z")  # doctest: +SKIP
        [('bank-INV-1042', 'parked')]
    """
    instant = _listing_instant(agent, now)
    # Each timer names the park it found due (its version): a sweep working from this listing after
    # another sweep woke the session and it parked again is refused, never wakes the new park.
    timers = [
        DueTimer(session_id=park.session_id, park_version=park.version, resume_at=park.resume_at, now=instant)
        for park in agent.store.due_parks(instant, workflow=agent.spec.slug)
    ]
    return (hand_off or InProcess()).hand(agent, timers, on_error=on_error, on_outcome=on_outcome, on_due=on_due)


def recover_stale(
    agent: Agent,
    now: str | None = None,
    *,
    exclude: Collection[str] = (),
    on_error: Callable[[str, ArchmaxError], None] | None = None,
    on_outcome: Callable[[str, Outcome], None] | None = None,
) -> list[tuple[str, str]]:
    """Continue every turn of the agent's workflow whose process died (DESIGN.md §3 "Inbox").

    Selection: sessions of ``agent.spec.slug`` whose status is ``running`` and whose lease expired
    (``expires_at <= now``) or is missing (``store.stale``), sorted by id, then the stale children
    whose first caller is of that workflow (issue 22), less ``exclude``. Each is
    handed to ``agent.workflow.recover``, which takes the lease over (§3.12) and continues the turn
    with nothing added. A session another process got to first (its lease live again, or a commit
    lost: ``SessionNotResumableError``), or that is no longer mid-turn (``recover`` answers
    ``None``), is reported ``skipped`` and is not a failure.

    Args:
        agent: An assembled agent; its store needs the ``list`` capability.
        now: The instant to sweep at, ``YYYY-MM-DDTHH:MM:SS.mmmZ``; ``None`` reads the agent's clock.
        exclude: Ids this sweep already drove (a due park, a re-drive): a turn that failed there is
            left to the next sweep rather than retried at once.
        on_error: Called with ``(session_id, error)`` for a recovery that raised any other
            :class:`ArchmaxError` (say a provider still down); the sweep then goes on with the next.
        on_outcome: Called with ``(session_id, outcome)`` for each continued turn.

    Returns:
        ``[(session_id, kind), ...]`` in id order, where ``kind`` is the continued turn's Outcome
        kind (``completed``, ``parked``, ``failed``, ``rejected``), ``skipped`` or ``error``.

    Raises:
        SessionStoreCapabilityError: the store cannot list stale sessions.

    Example:
        >>> recover_stale(agent, "2025-01-02T00:20:00.000Z")  # doctest: +SKIP
        [('bank-INV-1042', 'completed')]
    """
    instant = _listing_instant(agent, now)
    skip = set(exclude)
    own = agent.store.stale(instant, workflow=agent.spec.slug)
    stale = [session_id for session_id in own + _stale_children(agent, instant) if session_id not in skip]
    # SessionNotResumableError covers CommitConflictError: another sweep took the session over first.
    return _drive(stale, agent.workflow.recover, SessionNotResumableError, on_error, on_outcome)


def _stale_children(agent: Agent, instant: str) -> list[str]:
    """Stale children (sub-workflow sessions, §5.10) whose first caller is of the agent's workflow, sorted.

    A child runs another workflow, so the workflow's own listing misses it; its caller's stack
    recovers it (``recover`` on a child's id reaches the pair through its caller while the caller
    runs, else continues the child under its own workflow).
    """
    return _children_of(agent.store, agent.store.stale(instant), agent.spec.slug)


def _children_of(store: SessionStore, session_ids: Iterable[str], workflow: str) -> list[str]:
    """The child ids (``<caller>~...``, §4.1) among ``session_ids`` whose first caller runs ``workflow``, sorted."""
    out = []
    for session_id in session_ids:
        root = session_id.split("~", 1)[0]
        if root == session_id:
            continue
        head = store.head(root)
        if head is not None and head.workflow == workflow:
            out.append(session_id)
    return sorted(out)


def _listing_instant(agent: Agent, now: str | None) -> str:
    """``now``, or the agent's clock; refuses a store that cannot list sessions.

    Raises:
        SessionStoreCapabilityError: the store lacks the ``list`` capability.
    """
    if not agent.store.capabilities.list:
        raise SessionStoreCapabilityError("list")
    return now if now is not None else format_instant(agent.runtime.clock.now())


def _drive(
    session_ids: list[str],
    call: Callable[[str], Outcome | None],
    lost_race: type[ArchmaxError] | tuple[type[ArchmaxError], ...],
    on_error: Callable[[str, ArchmaxError], None] | None,
    on_outcome: Callable[[str, Outcome], None] | None,
) -> list[tuple[str, str]]:
    """Run ``call`` on each id in order; ``[(id, kind)]`` with ``skipped`` for ``lost_race`` or ``None``."""
    results: list[tuple[str, str]] = []
    for session_id in session_ids:
        try:
            outcome = call(session_id)
        except lost_race:
            results.append((session_id, SKIPPED))
        except ArchmaxError as exc:
            if on_error is not None:
                on_error(session_id, exc)
            results.append((session_id, ERROR))
        else:
            if outcome is not None and on_outcome is not None:
                on_outcome(session_id, outcome)
            results.append((session_id, SKIPPED if outcome is None else outcome.kind))
    return results


SENT = "sent"
"""The kind reported for a session whose outbox entries the sweep sent (or found sent)."""


def send_outbox(
    store: Any,
    dispatcher: Dispatcher | None,
    *,
    workflow: str | None = None,
    on_error: Callable[[str, ArchmaxError], None] | None = None,
) -> list[tuple[str, str]]:
    """Send every committed, unsent outbox entry of the workflow's sessions (issue 20 item 2).

    Selection: ``store.outbox_pending(workflow)``, the sessions a commit marked as having entries
    to send and no sender has cleared since (the AWS store reads its sparse ``outbox-pending``
    index, nothing else). Each is loaded and handed to the dispatcher, which sends what is neither
    sent, failed for good, nor claimed by a live sender, and clears the mark once all is sent. A
    claim whose holder died (the documented duplicate window) is taken over once it expired.

    Args:
        store: The session store (``list`` capability).
        dispatcher: The sender; ``None`` (outbound off) sends nothing.
        workflow: Only sessions of this workflow slug, when given.
        on_error: Called with ``(session_id, error)`` for a session some of whose entries could
            not be sent (they stay for the next sweep; the others were sent).

    Returns:
        ``[(session_id, kind)]`` in id order: ``sent``, or ``error``.

    Raises:
        StoreError: the store failed listing the marked sessions.
    """
    if dispatcher is None or Capability.LIST not in store.capabilities:
        return []
    results: list[tuple[str, str]] = []
    pending = list(store.outbox_pending(workflow=workflow))
    if workflow is not None:  # children run other workflows: their caller's stack sends theirs too (issue 22)
        pending += _children_of(store, store.outbox_pending(), workflow)
    for session_id in pending:
        try:
            record = store.load(session_id)
            if record is None:
                store.outbox_settled(session_id, 2**62)  # deleted since: nothing left to send
                continue
            dispatcher.dispatch(record)
        except ArchmaxError as exc:  # an OutboundError (DispatchError) or a StoreError
            if on_error is not None:
                on_error(session_id, exc)
            results.append((session_id, ERROR))
        else:
            results.append((session_id, SENT))
    return results


def oldest_park(agent: Agent, now: str | None = None) -> tuple[str, float] | None:
    """The workflow's oldest open park and its age in seconds, so a wait nobody answers is seen (§5.11).

    One store call, ``store.oldest_park(workflow)``: the AWS store queries its sparse
    ``open-parks`` index (one item per shard, never a scan); no session is read.

    Args:
        agent: An assembled agent; its store needs the ``list`` capability.
        now: The instant to measure at; ``None`` reads the agent's clock.

    Returns:
        ``(session_id, age_s)`` of the park made longest ago, or ``None`` when no session of the
        workflow is parked. A park made after ``now`` has age 0.

    Raises:
        SessionStoreCapabilityError: the store cannot list sessions.
    """
    instant = _listing_instant(agent, now)
    oldest = agent.store.oldest_park(agent.spec.slug)
    if oldest is None:
        return None
    age = (parse_instant(instant) - parse_instant(oldest.parked_at)).total_seconds()
    return oldest.session_id, max(age, 0.0)


def sweep_failed(results: list[tuple[str, str]]) -> bool:
    """Whether a sweep should exit 1: any delivery or recovered turn ended ``failed``/``rejected`` or raised (§11)."""
    return any(kind in ("failed", "rejected", ERROR) for _sid, kind in results)


__all__ = [
    "ERROR",
    "QUEUED",
    "RECOVERED",
    "SENT",
    "SKIPPED",
    "TIMEOUT_TRIGGER",
    "TIMER_TRIGGER",
    "oldest_park",
    "recover_stale",
    "send_outbox",
    "sweep",
    "sweep_failed",
]
