"""A turn opened by a firing: ``send`` (the firing rule on an explicit id) and ``invoke`` (always a turn).

Rule source: BEHAVIOUR.md §3.2 (the firing rule), §3.4 (send), §3.9 (invoke), §8 (turn opening,
steps 1–6), §9.4 (spec snapshots), §9.5 (file placement); seed "Starting versus resuming".

A ``send`` that finds the session parked hands over to :mod:`archmax.engine.deliver` (an input
park) or :mod:`archmax.engine.reply` (a decision park); otherwise a turn opens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from archmax.engine import deliver as resume
from archmax.engine import reply as answer
from archmax.engine.claims import (
    Applied,
    answer_interrupted_calls,
    claim_with_files,
    guarded,
    open_work,
    title_warning,
)
from archmax.engine.deliveries import (
    adopt_child_deliveries,
    forget_unhanded_forward,
    refuse_duplicate,
    remember_delivery,
)
from archmax.engine.firing_rule import (
    classify,
    died_applying,
    lease_live,
    preflight_model,
    refuse_other_workflow,
    refuse_stale_park,
    resolve_id,
)
from archmax.engine.loop import TurnLoop
from archmax.engine.placement import discard_files, place_firing_files, prepare_files, session_file_exists
from archmax.engine.recover import continue_dead_turn
from archmax.engine.runtime import Runtime
from archmax.engine.work import Work
from archmax.errors import EmptyMessageError, SessionNotResumableError, UnknownTriggerError, WorkflowDisabledError
from archmax.session.firing import Send, Turn
from archmax.session.ids import SessionId
from archmax.session.records import Checkpoint, Message, SessionStatus
from archmax.session.variables import check_host_variables, seed_host_variables, set_trigger_variable
from archmax.spec import check_value_type


def send(rt: Runtime, f: Send) -> Applied:
    """Apply the firing rule (§3.2) to an explicit id: a turn, a delivery into an input park, or a reply."""
    sid = f.session_id
    rec = rt.store.load(sid)
    refuse_other_workflow(rt, rec)  # another workflow's session: refused before anything is written (attack32)
    if died_applying(rt, rec, f.delivery_id):
        return continue_dead_turn(rt, rec)  # type: ignore[arg-type]  # its claim carried its files
    refuse_duplicate(rt.store, rec, f.delivery_id, sid)
    refuse_stale_park(rec, f.park_id, unparked=True)  # a mail answering a park that is gone (§5.11)
    disposition, recovered = classify(rt, sid, rec)
    check_host_variables(f.variables, f.files, source=f"sent to session '{sid}'", session_id=sid)
    warnings = list(f.warnings)
    if disposition == "reply":
        if not (f.message or "").strip():
            raise EmptyMessageError(sid)
        dropped = [
            f"'{name}' was not applied: the session is parked at a human state, where a message is only answered"
            for name, given in (("trigger", f.trigger), ("variables", f.variables), ("files", f.files))
            if given
        ]
        return answer.answer_park(rt, rec, f.message or "", warnings + dropped, f.delivery_id)
    prepared = prepare_files(rt.store, sid, f.files)
    if disposition == "resume":
        assert rec is not None  # parked on input
        text = f.message if (f.message or "").strip() else None
        trigger = (f.trigger.strip() if isinstance(f.trigger, str) else f.trigger) or "manual"
        parts = (trigger, f.variables, text, prepared, "deliver", warnings, f.delivery_id)
        return resume.resume_park(rt, rec, *parts)
    if rt.workflow.disabled:
        raise WorkflowDisabledError(rt.workflow.slug, session_id=sid)
    if not (f.message or "").strip():
        raise EmptyMessageError(sid)
    trig = f.trigger or "manual"
    if not rt.workflow.is_declared(trig):
        raise UnknownTriggerError(trig, rt.workflow.declared_triggers(), session_id=sid)
    opening = _Opening(sid, f.message or "", trig, f.variables, prepared, recovered, warnings, f.delivery_id)
    return open_turn(rt, rec, opening)


def invoke(rt: Runtime, f: Turn) -> Applied:
    """Always open a new turn (§3.9); the id comes from §4.2 when not given."""
    trig = f.trigger or "manual"
    sid, _, warnings = resolve_id(
        rt, session_id=f.session_id, session_path=f.session_path, trigger=trig, variables=f.variables
    )
    rec = rt.store.load(sid)
    refuse_other_workflow(rt, rec)  # a new turn under this workflow's states on another's session (attack32)
    if rec is not None and lease_live(rt, rec):
        raise SessionNotResumableError(sid, str(rec.status))
    recovered = rec is not None and rec.status == SessionStatus.RUNNING
    check_host_variables(f.variables, f.files, source=f"sent to session '{sid}'", session_id=sid)
    if not (f.message or "").strip():
        raise EmptyMessageError(sid)
    if not rt.workflow.is_declared(trig):
        raise UnknownTriggerError(trig, rt.workflow.declared_triggers(), session_id=sid)
    prepared = prepare_files(rt.store, sid, f.files)
    opening = _Opening(sid, f.message, trig, f.variables, prepared, recovered, warnings, None, allow_disabled=True)
    return open_turn(rt, rec, opening)


class _Opening:
    """What a turn opening applies: the firing's parts, already checked."""

    def __init__(
        self,
        session_id: SessionId,
        message: str,
        trigger: str,
        variables: Mapping[str, Any] | None,
        prepared: list,
        recovered: bool,
        warnings: list[str],
        delivery_id: str | None,
        *,
        allow_disabled: bool = False,
    ) -> None:
        self.session_id, self.message, self.trigger, self.variables = session_id, message, trigger, variables
        self.prepared, self.recovered, self.warnings, self.delivery_id = prepared, recovered, warnings, delivery_id
        self.allow_disabled = allow_disabled


def open_turn(rt: Runtime, rec: Checkpoint | None, o: _Opening) -> Applied:
    """Open a turn (§8) with one conditional commit that claims the session, then run it."""
    now = rt.now()
    if rec is None:
        record = Checkpoint(session_id=o.session_id, workflow=rt.workflow.slug, created_at=now, updated_at=now)
        version = 0
    else:
        record, version = rec, rec.version  # a load is the caller's own object (SessionStore.load): no copy
    work = open_work(rt, record, version, warnings=o.warnings)
    abandoned_input = record.pending_input is not None and record.status == SessionStatus.AWAITING_INPUT
    if o.recovered:
        answer_interrupted_calls(record)
        work.recovered = True
    # The opening (§8 steps 1-5), the message and the firing's delivery id go into the one conditional
    # commit that claims the session, so a crash can never keep the id without the message.
    if record.delegation is not None:  # the call this turn abandons: its child's replies stay the caller's
        child = rt.store.load(record.delegation.session_id)
        forget_unhanded_forward(rt.store, record, child)  # a dead turn's forward the child never got
        adopt_child_deliveries(rt.store, record, child)
    title_notes = open_record(rt, record, o.message, o.trigger, o.variables)
    remember_delivery(rt.store, record, o.delivery_id)
    preflight_model(rt, record.position)
    # Every refusal has run: the firing's files are placed now and their variables (§8 step 4: before
    # the assembly seeds, so a seed of the same name wins) and the trigger's verdict (§8 steps 2, 6)
    # ride the claim, so a claimed turn always has its files, and one whose process dies is continued
    # by `recover` with them (issue 9: a firing's files are part of the firing).
    placement = place_firing_files(rt.store, o.session_id, o.prepared, reuse=o.delivery_id is not None)
    file_vars = {k: v for k, v in placement.paths.items() if k not in rt.assembly_variables}
    title_notes += seed_host_variables(record.variables, file_vars)  # file variables are host writes (§6)
    try:
        refusal = _refusal(rt, record, o.trigger, o.variables, placement.paths, o.allow_disabled)
    except Exception:
        discard_files(rt.store, o.session_id, placement.created)
        raise
    if refusal is not None:
        record.status = SessionStatus.REJECTED
        record.rejected = refusal
    claim_with_files(rt, work, placement)  # CommitConflictError when another writer won
    _opening_warnings(rt, work, o, abandoned_input, title_notes)

    def body() -> None:
        _snapshot_spec(rt, record)
        if refusal is not None:  # committed rejected by the claim: no model call (§8 step 6)
            work.release()
            return
        TurnLoop(rt, work).run()

    return guarded(rt, work, body, "turn")


def _opening_warnings(rt: Runtime, work: Work, o: _Opening, abandoned_input: bool, title_notes: list[str]) -> None:
    record = work.record
    for text in o.warnings:  # e.g. the minted-id warning of §4.2: in `warnings` and as an event
        rt.warn(record, "session", text)
    if o.recovered:
        rt.warn(record, "lease", f"session '{o.session_id}' was taken over after its lease expired")
    if abandoned_input:
        rt.warn(record, "park", f"session '{o.session_id}' abandoned its input park: a new turn was opened")
    for text in title_notes:
        title_warning(rt, work, text)


def open_record(
    rt: Runtime, rec: Checkpoint, message: str, trigger: str, variables: Mapping[str, Any] | None
) -> list[str]:
    """Apply a turn opening (§8 steps 1, 3, 4 without files, 5) and the message; returns title warnings."""
    wf = rt.workflow
    rec.trigger = trigger  # 1. the trigger
    if rec.entry_state is None or rec.position not in wf.states:  # 3. the position
        rec.position = wf.entry_state_for(trigger)
    if rec.entry_state is None:
        rec.entry_state = rec.position
    rt.trail(rec, "trigger", rec.position, trigger)  # type: ignore[arg-type]  # set just above
    notes = seed_host_variables(rec.variables, rt.assembly_variables)  # 4. seeds, variables, trigger
    notes += seed_host_variables(rec.variables, dict(variables or {}))
    set_trigger_variable(rec.variables, trigger)
    rec.pending_failure = None  # 5. the turn's own mechanics
    rec.pending_rejection = rec.delegation = None  # a new turn abandons a sub-workflow call in flight
    rec.raised = None
    rec.rejected = None
    rec.hook_iterations = {}
    rec.before_done = []
    rec.park_counts = {}
    rec.pending_input = None
    rec.pending_decision = None
    rec.park_phase = None
    rec.reply_only = False
    rec.state_turns = 0
    rec.status = SessionStatus.RUNNING
    rec.turn_open_state = rec.position
    rec.moved_since_open = False
    rec.messages.append(Message(role="user", content=message))
    return notes


def _snapshot_spec(rt: Runtime, rec: Checkpoint) -> None:
    """Write ``_specs/<hash>.json`` when the session's recorded hash differs (§9.4); never fails the turn."""
    wf = rt.workflow
    if rec.spec_hash == wf.spec_hash:
        return
    if wf.spec_hash not in rt.spec_snapshots:  # create-only: once this runtime wrote it, it exists
        try:
            rt.store.put_spec(wf.spec_hash, wf.spec)
            rt.spec_snapshots.add(wf.spec_hash)
        except Exception as exc:  # a snapshot is a record, never a reason to fail the turn
            rt.warn(rec, "spec_snapshot", f"could not write _specs/{wf.spec_hash}.json: {exc}")
    rec.spec_hash = wf.spec_hash


def _refusal(
    rt: Runtime,
    rec: Checkpoint,
    trigger: str,
    variables: Mapping[str, Any] | None,
    placed: Mapping[str, str],
    allow_disabled: bool,
) -> str | None:
    """Why a turn opening is rejected (a disabled workflow under invoke, §3.9; unmet ``requires``, §8 step 6), or None.

    ``placed``: the firing's placed files (variable → path), already in the store.

    Raises:
        StoreError: a ``file``-typed requirement could not be read.
    """
    wf = rt.workflow
    if wf.disabled and allow_disabled:
        return f"Refusing to start: workflow '{wf.slug}' is disabled."
    missing = _unmet_requires(rt, rec, trigger, variables, dict(placed))
    if not missing:
        return None
    names = ", ".join(f"'{n}'" for n in missing)
    return f"Refusing to start: trigger '{trigger}' requires {names}, which this firing does not supply."


def _unmet_requires(
    rt: Runtime, rec: Checkpoint, trigger: str, variables: Mapping[str, Any] | None, placed: dict
) -> list[str]:
    decl = rt.workflow.trigger_decl(trigger)
    if decl is None or not decl.requires:
        return []
    supplied = {**placed, **rt.assembly_variables, **dict(variables or {})}

    def exists(path: str) -> bool:
        return session_file_exists(rt.store, rec.session_id, path)

    return [
        spec.name
        for spec in decl.requires
        if spec.name not in supplied or not check_value_type(supplied[spec.name], spec.type, file_exists=exists)
    ]
