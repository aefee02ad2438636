"""A person's decision at a human park: the session moves along the chosen edge and runs on.

Rule source: BEHAVIOUR.md §3.7 (decide), §2.4 (the target's before hooks run again), §3.12 (the
claim), §5.10 (a decision delegated to a child is the child's).
"""

from __future__ import annotations

from archmax.engine import forwarding
from archmax.engine.claims import Applied, claim_park, guarded, open_work
from archmax.engine.firing_rule import parked_channel, preflight_model, refuse_other_workflow, refuse_stale_park
from archmax.engine.loop import TurnLoop
from archmax.engine.reply import lost_decision_park
from archmax.engine.runtime import Runtime
from archmax.errors import InvalidDecisionTargetError, SessionNotParkedError
from archmax.session.firing import Decide
from archmax.session.notes import decision_note_text, make_note
from archmax.session.records import Checkpoint, SessionStatus


def decide(rt: Runtime, f: Decide) -> Applied:
    """A person picks one of the parked human state's edges (§3.7).

    Raises:
        SessionNotParkedError, InvalidDecisionTargetError; SessionNotAwaitingInputError when
        ``f.park_id`` names a park that is no longer current (§5.11).
    """
    rec = rt.store.load(f.session_id)
    refuse_other_workflow(rt, rec)  # another workflow's park: refused before the claim (attack32)
    if parked_channel(rt, rec) == "decision":
        refuse_stale_park(rec, f.park_id)
    return decide_at_park(rt, rec, f.to, f.comment, session_id=f.session_id)


def decide_at_park(
    rt: Runtime,
    rec: Checkpoint | None,
    to: str | None,
    comment: str | None,
    *,
    session_id: str | None = None,
) -> Applied:
    """Apply a decision to the park of ``rec`` (checked here): move, claim, and run the turn on."""
    sid = rec.session_id if rec is not None else str(session_id)
    if parked_channel(rt, rec) != "decision":
        raise SessionNotParkedError(sid, str(rec.status) if rec else None)
    assert rec is not None and rec.pending_decision is not None
    if rec.delegation is not None:  # the child's decision: forward (§5.10)
        return forwarding.forward_decision(rt, rec, to, comment, decide=decide_at_park)
    pending = rec.pending_decision
    valid = [t.to for t in pending.transitions if t.to != pending.state]
    target = to.strip() if isinstance(to, str) else ""
    if not target or target not in valid:
        raise InvalidDecisionTargetError(target or None, valid, session_id=sid)
    note_comment = comment.strip() if isinstance(comment, str) and comment.strip() else None
    record = rec  # a load is the caller's own object (SessionStore.load)
    work = open_work(rt, record, rec.version)
    edge_type = next((t.type for t in pending.transitions if t.to == target), None)
    rt.trail(record, "human", target, note_comment)
    record.messages.extend(make_note("decision", decision_note_text(pending.state, target, edge_type, note_comment)))
    record.position = target
    record.moved_since_open = True
    record.before_done = [s for s in record.before_done if s != target]  # its before hooks run again (§2.4)
    record.pending_decision = None
    record.park_phase = None
    record.pending_failure = record.pending_rejection = None
    record.state_turns = 0
    record.status = SessionStatus.RUNNING
    preflight_model(rt, target)
    claim_park(rt, work, lost_decision_park(rt, record.session_id))

    def body() -> None:
        rt.events.emit(record, "decided", state=pending.state, to=target)
        work.commit()
        loop = TurnLoop(rt, work)
        loop.handoff_directive = "routed"
        loop.run()

    return guarded(rt, work, body, "decide")
