"""A human park's deadline passing: the sweep fires the trigger ``timeout`` into a decision park.

Rule source: BEHAVIOUR.md §5.11 (a human state's ``timeout:``: when it passes before any decision,
the transition marked ``on_timeout: true`` is taken; without one the turn fails, §5.7, with
``wait timed out after <duration>``), §3.12 (the claim; a timer names the park it found due).
An input park's deadline needs nothing of its own: the sweep delivers ``timeout`` into it (§3.5).
"""

from __future__ import annotations

from archmax.engine import forwarding
from archmax.engine.claims import Applied, claim_park, guarded, open_work
from archmax.engine.firing_rule import parked_channel, refuse_other_park, refuse_other_workflow
from archmax.engine.loop import TurnLoop
from archmax.engine.reply import lost_decision_park
from archmax.engine.runtime import Runtime
from archmax.errors import SessionNotAwaitingInputError, SessionNotParkedError
from archmax.session.firing import Expire
from archmax.session.notes import make_note
from archmax.session.records import Checkpoint, SessionStatus
from archmax.session.variables import set_trigger_variable

TIMEOUT_TRIGGER = "timeout"
"""The trigger a deadline fires (an input park gets it as a delivery)."""


def timed_out(duration: str | None) -> str:
    """``wait timed out after <duration>``: the failure a deadline with no ``on_timeout`` edge routes (§5.11)."""
    return f"wait timed out after {duration}"


def expire(rt: Runtime, f: Expire) -> Applied:
    """Fire ``timeout`` into the decision park ``f`` names, once its deadline has passed (§5.11).

    A caller parked at its child's decision (§5.10) carries the child's deadline; the timeout is the
    child's: it takes its ``on_timeout`` edge (or fails), and the caller resumes when it finishes.

    Raises:
        SessionNotParkedError: the session is not parked on ``decision`` (also the loser of a race).
        SessionNotAwaitingInputError: the session is no longer at ``f.park_version``, or its park has
            no deadline, or the deadline has not passed; nothing changed.
    """
    sid = f.session_id
    rec = rt.store.load(sid)
    refuse_other_workflow(rt, rec)  # another workflow's park: refused before the claim (attack32)
    if parked_channel(rt, rec) != "decision":
        raise SessionNotParkedError(sid, str(rec.status) if rec else None)
    assert rec is not None
    refuse_other_park(sid, rec.version, str(rec.status), f.park_version)
    return expire_at_park(rt, rec, f.now or rt.now())


def expire_at_park(rt: Runtime, rec: Checkpoint, now: str) -> Applied:
    """Fire ``timeout`` into the decision park of ``rec`` (checked to be one) if its deadline passed by ``now``.

    Raises:
        SessionNotParkedError: ``rec`` is not parked on ``decision`` (a child that moved on).
        SessionNotAwaitingInputError: its park has no deadline, or the deadline has not passed.
    """
    sid = rec.session_id
    if parked_channel(rt, rec) != "decision":
        raise SessionNotParkedError(sid, str(rec.status))
    assert rec.pending_decision is not None
    pending = rec.pending_decision
    if pending.timeout_at is None or pending.timeout_at > now:
        raise SessionNotAwaitingInputError(sid, str(rec.status), "its park's deadline has not passed")
    if rec.delegation is not None:  # the child's deadline, mirrored: the child's park times out (§5.10)
        return forwarding.forward_expire(rt, rec, now, expire=expire_at_park)
    state = rt.workflow.states.get(pending.state)
    edge = state.timeout_transition if state is not None else None
    record = rec  # a load is the caller's own object (SessionStore.load)
    work = open_work(rt, record, rec.version)
    set_trigger_variable(record.variables, TIMEOUT_TRIGGER)
    record.trigger = TIMEOUT_TRIGGER
    record.pending_decision = None
    record.park_phase = None
    record.pending_rejection = None
    record.status = SessionStatus.RUNNING
    if edge is not None:
        text = (
            f"[event] 'timeout': nobody decided in '{pending.state}' within {pending.timeout}; the session "
            f"moved to '{edge.to}' along the transition marked on_timeout. Continue from there."
        )
        record.messages.extend(make_note("event", text))
        rt.trail(record, "trigger", edge.to, TIMEOUT_TRIGGER)
        record.position = edge.to
        record.moved_since_open = True
        record.before_done = [s for s in record.before_done if s != edge.to]  # its before hooks run (§2.4)
        record.state_turns = 0
        record.pending_failure = None
    else:
        rt.trail(record, "trigger", pending.state, TIMEOUT_TRIGGER)
        record.pending_failure = timed_out(pending.timeout)  # routed by on_error, else rejected (§5.7)
    claim_park(rt, work, lost_decision_park(rt, record.session_id))

    def body() -> None:
        if edge is not None:
            rt.events.emit(record, "decided", state=pending.state, to=edge.to)
        work.commit()
        loop = TurnLoop(rt, work)
        loop.handoff_directive = "routed"
        loop.run()

    return guarded(rt, work, body, "decide")
