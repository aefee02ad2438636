"""A person's message at a decision park: the model answers it and the session stays parked.

Rule source: BEHAVIOUR.md §3.6 (reply), §3.12 (the claim; the loser of a race is told the session
is no longer parked), §5.10 (a decision delegated to a child is answered by the child).
"""

from __future__ import annotations

from collections.abc import Callable

from archmax.engine import forwarding
from archmax.engine.claims import Applied, claim_park, guarded, open_work
from archmax.engine.deliveries import remember_delivery
from archmax.engine.firing_rule import parked_channel, preflight_model, refuse_other_workflow, refuse_stale_park
from archmax.engine.loop import TurnLoop
from archmax.engine.runtime import Runtime
from archmax.errors import EmptyMessageError, SessionNotParkedError
from archmax.session.firing import Reply
from archmax.session.records import Checkpoint, Message


def reply(rt: Runtime, f: Reply) -> Applied:
    """Answer a person's message at a decision park (§3.6).

    Raises:
        SessionNotParkedError, EmptyMessageError; SessionNotAwaitingInputError when ``f.park_id``
        names a park that is no longer current (§5.11).
    """
    rec = rt.store.load(f.session_id)
    refuse_other_workflow(rt, rec)  # another workflow's park: refused before the claim (attack32)
    if parked_channel(rt, rec) == "decision":
        refuse_stale_park(rec, f.park_id)
    return answer_park(rt, rec, f.message, [], None, session_id=f.session_id)


def lost_decision_park(rt: Runtime, session_id: str) -> Callable[[Checkpoint | None], Exception | None]:
    """The refusal of a claim on a decision park another firing took first (``None``: still parked)."""

    def lost(now: Checkpoint | None) -> Exception | None:
        if parked_channel(rt, now) == "decision":
            return None
        return SessionNotParkedError(session_id, str(now.status) if now else None, lost_race=True)

    return lost


def answer_park(
    rt: Runtime,
    rec: Checkpoint | None,
    message: str,
    warnings: list[str],
    delivery_id: str | None,
    *,
    session_id: str | None = None,
) -> Applied:
    """Answer ``message`` at the decision park of ``rec`` (checked here), with one claim and one release."""
    sid = rec.session_id if rec is not None else str(session_id)
    if parked_channel(rt, rec) != "decision":
        raise SessionNotParkedError(sid, str(rec.status) if rec else None)
    assert rec is not None and rec.pending_decision is not None
    if not isinstance(message, str) or not message.strip():
        raise EmptyMessageError(sid)
    if rec.delegation is not None:  # the child's decision: forward (§5.10)
        return forwarding.forward_reply(rt, rec, message, warnings, delivery_id, answer=answer_park)
    record = rec  # a load is the caller's own object (SessionStore.load)
    work = open_work(rt, record, rec.version, warnings=warnings)
    record.reply_only = True
    record.messages.append(Message(role="user", content=message))
    remember_delivery(rt.store, record, delivery_id)
    state = rec.pending_decision.state
    preflight_model(rt, state)
    claim_park(rt, work, lost_decision_park(rt, record.session_id))

    def body() -> None:
        rt.events.emit(record, "park_message", state=state, direction="inbound", text=message)
        loop = TurnLoop(rt, work)
        response = loop._call_model(handoff="reply")
        if response is not None:
            loop._record_handoff_answer(response, announce=False)
            if (response.text or "").strip():
                rt.events.emit(record, "park_message", state=state, direction="outbound", text=response.text)
        record.reply_only = False
        record.park_phase = "suspend"
        work.release()

    return guarded(rt, work, body, "reply")
