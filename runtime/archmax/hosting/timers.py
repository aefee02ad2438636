"""Firing one due timer, and the one interface a sweep hands its due timers to.

Rule source: BEHAVIOUR.md §11 (``sweep``), §5.11 (``until`` and ``timeout``: whichever comes first
wakes the session, the trigger names which), §3.12 (a timer names its park: a stale one changes
nothing) and issue 24 goal 3 (the sweep fans out: due parks are handed to workers in parallel).

The sweep (:func:`archmax.hosting.sweep.sweep`) only finds due parks; what wakes each is a
:class:`TimerHandOff`:

* :class:`InProcess` fires them one after another in the sweeping process (``archmax sweep``,
  ``archmax serve``, the filesystem and memory stores);
* :class:`archmax.hosting.timer_queue.SqsTimers` sends each as a message to the timer queue, and
  the wake function fires it (:mod:`archmax.handlers.wake`), many in parallel.

Either way each timer is fired by :func:`fire`, the one rule: a :class:`DueTimer` names the park
(its version) it found due, so a duplicate, or a timer for a park no longer current, is refused by
the engine and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict, Field

from archmax.errors import ArchmaxError, SessionNotAwaitingInputError, SessionNotParkedError

if TYPE_CHECKING:
    from archmax.agent import Agent
    from archmax.session.records import Checkpoint
    from archmax.session.results import Outcome

TIMER_TRIGGER = "timer"
"""The trigger id a sweep delivery carries when a park's ``until`` came due."""

TIMEOUT_TRIGGER = "timeout"
"""The trigger id a sweep fires when a park's deadline (``timeout``) passed first (BEHAVIOUR.md §5.11)."""

SKIPPED = "skipped"
"""The kind reported for a session another process resumed (or recovered) first."""

ERROR = "error"
"""The kind reported for a delivery that raised an error other than :data:`SKIPPED`'s."""

QUEUED = "queued"
"""The kind a sweep reports for a due timer handed to the queue (fired later by a worker)."""

LOST_RACE = (SessionNotAwaitingInputError, SessionNotParkedError)
"""What a timer for a park no longer current raises: reported ``skipped``, never a failure."""


class DueTimer(BaseModel):
    """One due park, as the sweep found it: what a worker needs to fire it, and nothing else.

    The timer queue's message body is this model as JSON (``{"session_id", "park_version",
    "resume_at", "now"}``); a body that does not validate is refused (``InvalidEventError``).

    Attributes:
        session_id: The parked session.
        park_version: The version the park was listed at: the timer names the park current then
            (BEHAVIOUR.md §3.12, §5.11; :func:`park_version_now`), and a later park refuses it.
        resume_at: When the park came due, ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (timer lateness is read from it).
        now: The sweep's instant: the ``now`` variable the delivery carries, and the instant a
            passed deadline is judged at.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    session_id: str = Field(min_length=1)
    park_version: int = Field(ge=0)
    resume_at: str = Field(min_length=1)
    now: str = Field(min_length=1)


def fire(agent: Agent, timer: DueTimer) -> Outcome:
    """Wake the park ``timer`` names: ``timer``, or ``timeout`` when its deadline passed first (§5.11).

    An input park gets ``deliver(id, trigger="timer", variables={"now": now}, park_version=v)``, ``v``
    the session's version while its park is the listed one (:func:`park_version_now`);
    one whose ``timeout`` passed before its ``until`` gets the delivery ``timeout`` (``variables``
    ``now`` and ``timeout``); a decision park past its deadline is expired
    (:func:`archmax.engine.expire.expire`). Every firing goes through the agent's door.

    Raises:
        SessionNotAwaitingInputError, SessionNotParkedError: the session is no longer at the park
            the timer names (a duplicate, another sweep, a reply got there first); nothing changed.
        ArchmaxError: whatever else the delivery raised (a store or model outage, a typed refusal).
    """
    rec = agent.store.load(timer.session_id)
    _refuse_another_park(rec, timer)
    version = park_version_now(rec, timer)
    deadline = _passed_deadline(agent, rec, timer, version)
    if deadline is not None:
        return deadline()
    return agent.workflow.deliver(
        timer.session_id, trigger=TIMER_TRIGGER, variables={"now": timer.now}, park_version=version
    )


def _refuse_another_park(rec: Checkpoint | None, timer: DueTimer) -> None:
    """Refuse ``timer`` when the session's park wakes at another instant than the one listed: another park.

    A session deleted and started again under its id (§3.10) counts its versions from 1, so its new
    park can sit at the listed version (or within :func:`park_version_now`'s range); the version alone
    cannot tell it from the listed park, whose wake instant (``resume_at``) the timer carries.

    Raises:
        SessionNotAwaitingInputError: the park's wake instant is not ``timer.resume_at``; nothing changed.
    """
    if rec is not None and rec.wake_at is not None and rec.wake_at != timer.resume_at:
        detail = f"its park wakes at {rec.wake_at}, the timer was listed for {timer.resume_at}"
        raise SessionNotAwaitingInputError(timer.session_id, str(rec.status), detail, lost_race=True)


def park_version_now(rec: Checkpoint | None, timer: DueTimer) -> int:
    """The version to fire ``timer`` at: the session's current one while its park is still the listed park.

    A timer names the park it was listed at (§3.12, §5.11): the park current at ``timer.park_version``.
    A person's message at a park, and the answer it gets, raise the session's version but keep the
    park (seed: "those move the session nowhere"), so the park is still the listed one while it was
    made at or before the listing (``parked_version <= park_version <= version``); a park made later
    is another one. Otherwise the listed version is returned, and the engine refuses the delivery
    (``SessionNotAwaitingInputError``/``SessionNotParkedError``) and changes nothing.

    A caller parked through its sub-workflow child (§5.10) mirrors the child's park, which can change
    under the caller's own ``parked_version``: there the listed version must still be the session's.
    """
    if rec is None or rec.delegation is not None:
        return timer.park_version
    park = rec.pending_input or rec.pending_decision
    made = park.parked_version if park is not None else None
    if made is not None and made <= timer.park_version <= rec.version:
        return rec.version
    return timer.park_version


def _passed_deadline(
    agent: Agent, rec: Checkpoint | None, timer: DueTimer, version: int
) -> Callable[[], Outcome] | None:
    """The wake-up of a park whose ``timeout`` passed before its ``until`` (BEHAVIOUR.md §5.11), else ``None``.

    A record that is not at ``version`` (not the listed park) is left to the versioned delivery, which refuses it.
    """
    session_id, instant = timer.session_id, timer.now
    if rec is None or rec.version != version:
        return None
    park = rec.pending_input or rec.pending_decision
    if park is None or park.timeout_at is None or park.timeout_at > instant:
        return None
    resume_at = rec.pending_input.resume_at if rec.pending_input is not None else None
    if resume_at is not None and resume_at < park.timeout_at:
        return None  # the timer came first
    if rec.pending_decision is not None:
        return lambda: agent.workflow.expire(session_id, park_version=version, now=instant)
    variables = {"now": instant, "timeout": park.timeout}
    return lambda: agent.workflow.deliver(
        session_id, trigger=TIMEOUT_TRIGGER, variables=variables, park_version=version
    )


class TimerHandOff(Protocol):
    """Where a sweep's due timers go (issue 24 goal 3): fired here, or queued for workers.

    ``hand(agent, timers, on_error=, on_outcome=, on_due=)`` answers ``[(session_id, kind), ...]``
    in the timers' order: an Outcome's kind, ``skipped`` or ``error`` when fired here; ``queued``
    (or ``error`` for a message the queue refused) when handed on.
    """

    def hand(
        self,
        agent: Agent,
        timers: Sequence[DueTimer],
        *,
        on_error: Callable[[str, ArchmaxError], None] | None = None,
        on_outcome: Callable[[str, Outcome], None] | None = None,
        on_due: Callable[[str, str], None] | None = None,
    ) -> list[tuple[str, str]]:
        """Fire or queue every timer; ``[(session_id, kind)]`` in order (see the class)."""
        ...


class InProcess:
    """Fire each due timer now, one after another, in the sweeping process (the local hosts)."""

    def hand(
        self,
        agent: Agent,
        timers: Sequence[DueTimer],
        *,
        on_error: Callable[[str, ArchmaxError], None] | None = None,
        on_outcome: Callable[[str, Outcome], None] | None = None,
        on_due: Callable[[str, str], None] | None = None,
    ) -> list[tuple[str, str]]:
        """Fire every timer with :func:`fire`; a lost race is ``skipped``, another error is told and ``error``."""
        results: list[tuple[str, str]] = []
        for timer in timers:
            results.append((timer.session_id, fire_reporting(agent, timer, on_error, on_outcome, on_due)))
        return results


def fire_reporting(
    agent: Agent,
    timer: DueTimer,
    on_error: Callable[[str, ArchmaxError], None] | None = None,
    on_outcome: Callable[[str, Outcome], None] | None = None,
    on_due: Callable[[str, str], None] | None = None,
) -> str:
    """:func:`fire` one timer and name what came of it: the Outcome's kind, ``skipped`` or ``error``.

    ``on_due(session_id, resume_at)`` is told just before (telemetry's ``TimerLateness``);
    ``on_error`` gets any :class:`ArchmaxError` but a lost race; ``on_outcome`` each Outcome.
    """
    if on_due is not None:
        on_due(timer.session_id, timer.resume_at)
    try:
        outcome = fire(agent, timer)
    except LOST_RACE:
        return SKIPPED
    except ArchmaxError as exc:
        if on_error is not None:
            on_error(timer.session_id, exc)
        return ERROR
    if on_outcome is not None:
        on_outcome(timer.session_id, outcome)
    return outcome.kind


__all__ = [
    "ERROR",
    "LOST_RACE",
    "QUEUED",
    "SKIPPED",
    "TIMEOUT_TRIGGER",
    "TIMER_TRIGGER",
    "DueTimer",
    "InProcess",
    "TimerHandOff",
    "fire",
    "fire_reporting",
]
