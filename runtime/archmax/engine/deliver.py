"""A delivery into an ``input`` park: the trigger id, variables, an optional message and files.

Rule source: BEHAVIOUR.md §3.5 (deliver; any trigger id, never matched), §3.12 (the claim, lost
races), §5.10 (a park delegated to a child is forwarded), §9.5 (file placement); issue 9
(``park_version``: a timer wakes only the park it found due; files ride the claim).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from archmax.engine import forwarding
from archmax.engine.claims import Applied, claim_with_files, guarded, open_work, title_warning
from archmax.engine.deliveries import refuse_duplicate, remember_delivery
from archmax.engine.firing_rule import (
    died_applying,
    parked_channel,
    preflight_model,
    refuse_other_park,
    refuse_other_workflow,
    refuse_stale_park,
)
from archmax.engine.loop import TurnLoop
from archmax.engine.placement import place_firing_files, prepare_files
from archmax.engine.recover import continue_dead_turn
from archmax.engine.runtime import Runtime
from archmax.errors import CommitConflictError, MissingDeliveryTriggerError, SessionNotAwaitingInputError
from archmax.session.firing import Deliver
from archmax.session.notes import event_note_text, make_note
from archmax.session.records import Checkpoint, Message, SessionStatus
from archmax.session.variables import check_host_variables, seed_host_variables, set_trigger_variable

_RESUMABLE = (SessionStatus.AWAITING_INPUT, SessionStatus.RUNNING)


def deliver(rt: Runtime, f: Deliver) -> Applied:
    """Resume an ``input`` park (§3.5).

    Raises:
        SessionNotAwaitingInputError: not parked on ``input`` (also the loser of a race), no longer
            at ``f.park_version``, or ``f.park_id`` names a park that is no longer current (§5.11).
        MissingDeliveryTriggerError, InvalidVariableNameError, DuplicateDeliveryError.
    """
    sid = f.session_id
    if f.delivery_id is None:
        # A double-fired timer is refused from the cheap head alone, without reading the checkpoint;
        # otherwise the head and the checkpoint come from one store read (load_if).
        head, rec = rt.store.load_if(sid, lambda h: h.status in _RESUMABLE)
        refuse_other_workflow(rt, head)  # another workflow's park: refused before the claim (attack32)
        if rec is None:
            raise SessionNotAwaitingInputError(sid, str(head.status) if head else None)
        assert head is not None  # a record came with its head
        refuse_other_park(sid, head.version, str(head.status), f.park_version)
    else:
        rec = rt.store.load(sid)
        refuse_other_workflow(rt, rec)
    if died_applying(rt, rec, f.delivery_id):
        return continue_dead_turn(rt, rec)  # type: ignore[arg-type]  # its claim carried its files
    refuse_duplicate(rt.store, rec, f.delivery_id, sid)
    if parked_channel(rt, rec) != "input":
        raise SessionNotAwaitingInputError(sid, str(rec.status) if rec else None)
    assert rec is not None  # parked on input
    refuse_other_park(sid, rec.version, str(rec.status), f.park_version)
    refuse_stale_park(rec, f.park_id)
    if not isinstance(f.trigger, str) or not f.trigger.strip():
        raise MissingDeliveryTriggerError(sid)
    check_host_variables(f.variables, f.files, source=f"delivered to session '{sid}'", session_id=sid)
    prepared = prepare_files(rt.store, sid, f.files)
    text = f.message if (f.message or "").strip() else None
    return resume_park(rt, rec, f.trigger.strip(), f.variables, text, prepared, "deliver", [], f.delivery_id)


def resume_park(
    rt: Runtime,
    rec: Checkpoint,
    trigger: str,
    variables: Mapping[str, Any] | None,
    message: str | None,
    prepared: list,
    disposition: str,
    warnings: list[str],
    delivery_id: str | None = None,
) -> Applied:
    """Resume the checked input park of ``rec`` with one claim, then run the turn (§3.5, §8)."""
    assert rec.pending_input is not None
    if rec.delegation is not None:  # the park belongs to a delegated child: forward it (§3.5, §5.10)
        parts = forwarding.Delivery(trigger, variables, message, prepared, delivery_id)
        return forwarding.forward_delivery(rt, rec, parts, disposition, warnings, resume=resume_park)
    record = rec  # a load is the caller's own object (SessionStore.load): no copy
    work = open_work(rt, record, rec.version, warnings=warnings)
    state = record.pending_input.state  # type: ignore[union-attr]
    values = dict(variables or {})
    title_notes = seed_host_variables(record.variables, values)
    set_trigger_variable(record.variables, trigger)
    record.trigger = trigger
    record.messages.extend(make_note("event", event_note_text(trigger, state, values, message is not None)))
    if message is not None:
        record.messages.append(Message(role="user", content=message))
    rt.trail(record, "trigger", state, trigger)
    record.pending_input = None
    record.park_phase = None
    record.pending_failure = record.pending_rejection = None
    record.status = SessionStatus.RUNNING
    remember_delivery(rt.store, record, delivery_id)
    preflight_model(rt, state)
    # Every refusal has run: the files are placed now and the claim carries their variables (issue 9).
    placement = place_firing_files(rt.store, record.session_id, prepared, reuse=delivery_id is not None)
    file_notes = seed_host_variables(record.variables, placement.paths)  # file variables are host writes (§6)
    try:
        claim_with_files(rt, work, placement)  # atomic: of two racing deliveries exactly one commits this version
    except CommitConflictError:
        now = rt.store.load(rec.session_id)
        # The winner may have been this very event (a client retrying a slow request, a wake racing a
        # sweep): it was applied, and the answer says so, as it would have one moment later.
        refuse_duplicate(rt.store, now, delivery_id, rec.session_id)
        raise SessionNotAwaitingInputError(
            rec.session_id, str(now.status) if now else None, "another event resumed it first", lost_race=True
        ) from None

    def body() -> None:
        for text in title_notes:
            title_warning(rt, work, text)
        if message is not None:
            rt.events.emit(record, "park_message", state=state, direction="inbound", text=message)
        rt.events.emit(record, "delivered", state=state, trigger=trigger, to=state)
        for text in file_notes:
            title_warning(rt, work, text)
        TurnLoop(rt, work).run()

    return guarded(rt, work, body, disposition)
