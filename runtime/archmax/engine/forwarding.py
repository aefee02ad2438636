"""Firings for a caller parked through its sub-workflow's child: the child gets them (§5.10).

Rule source: BEHAVIOUR.md §3.5–§3.7 (deliver, reply, decide), §5.10 (parks that delegate,
forwarding); issue 9 (a delivery claimed for the child outlives the process that claimed it).

Each kind hands its own park-level step (``resume``, ``answer``, ``decide``) in, so this module
never imports the kinds it forwards for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from archmax.engine.claims import Applied, build_outcome, claim_park, guarded, open_work
from archmax.engine.deliveries import refuse_duplicate, remember_delivery, was_applied
from archmax.engine.firing_rule import parked_channel, preflight_model
from archmax.engine.loop import TurnLoop
from archmax.engine.runtime import Runtime
from archmax.engine.subworkflows import forwarded
from archmax.engine.work import Work, waiting_on_child
from archmax.errors import (
    CommitConflictError,
    DuplicateDeliveryError,
    InvalidDecisionTargetError,
    SessionNotAwaitingInputError,
    SessionNotParkedError,
    SessionStateError,
    WorkflowSpecError,
)
from archmax.session.firing import EngineFiring, Recover, Turn
from archmax.session.ids import SessionId, parent_session_id, validate_delivery_id
from archmax.session.records import Checkpoint, ForwardedDelivery, SessionStatus
from archmax.session.results import Outcome


class Delivery(NamedTuple):
    """The parts of a delivery, checked and with its files prepared, on their way to a park."""

    trigger: str
    variables: Mapping[str, Any] | None
    message: str | None
    prepared: list
    delivery_id: str | None


def child_of(rt: Runtime, rec: Checkpoint, channel: str) -> tuple[Runtime, Checkpoint]:
    """The delegated child of a parked caller, checked to be parked on ``channel`` (§3.5, §5.10).

    Raises:
        SessionNotAwaitingInputError / SessionNotParkedError: the child is no longer parked there.
    """
    d = rec.delegation
    assert d is not None
    child_rt = rt.workflows.runtime(d.workflow, rt.workflow)
    child = child_rt.store.load(d.session_id)
    if parked_channel(child_rt, child) != channel:
        status = str(child.status) if child else "no such session"
        if channel == "input":
            raise SessionNotAwaitingInputError(d.session_id, status)
        raise SessionNotParkedError(d.session_id, status)
    return child_rt, child


def forward_delivery(
    rt: Runtime,
    rec: Checkpoint,
    parts: Delivery,
    disposition: str,
    warnings: list[str],
    *,
    resume: Callable[..., Applied],
) -> Applied:
    """A delivery to a caller parked through its child: the child gets it, then the caller settles.

    The caller is claimed first (so of two racing deliveries one proceeds), then the child takes the
    delivery as an ordinary one; the caller's loop then mirrors the child's next park or takes its result.

    Raises:
        SessionNotAwaitingInputError: the child is not parked on ``input`` (nothing changes), or the
            caller's park was claimed by another firing first.
    """
    child_rt, child = child_of(rt, rec, "input")
    forward = ForwardedDelivery(
        trigger=parts.trigger,
        variables=dict(parts.variables or {}),
        message=parts.message,
        delivery_id=parts.delivery_id,
        child_version=child.version,
    )
    park = rec.model_copy(update={})  # the caller's park as it stands (fields only; messages are shared)
    work = _claim_caller(rt, rec, warnings, after="delivery", delivery_id=parts.delivery_id, forward=forward)
    answers: list[Outcome | None] = []

    def body() -> None:
        try:
            with waiting_on_child(work):
                answers.append(
                    resume(
                        child_rt, child, parts.trigger, parts.variables, parts.message, parts.prepared, "deliver", [],
                        parts.delivery_id,
                    ).outcome
                )  # fmt: skip
        except SessionStateError:
            _refused_by_child(rt, work, park, child_rt, child.session_id)
            raise
        forwarded(work.record)
        TurnLoop(rt, work).run()

    return _with_child_reply(guarded(rt, work, body, disposition), answers)


def _refused_by_child(rt: Runtime, work: Work, park: Checkpoint, child_rt: Runtime, child_id: str) -> None:
    """The child moved on after the caller was claimed: the delivery was not applied (issue 22 item 1).

    It is not remembered, and the caller is not left ``running`` without a lease: while the child's
    own turn runs the caller goes back to its park; otherwise it catches up with its child now.
    """
    record = work.record
    record.delivery_ids = list(park.delivery_ids)
    forwarded(record)
    now = child_rt.store.load(child_id)
    if now is not None and now.status == SessionStatus.RUNNING:
        record.status, record.pending_input, record.park_phase = park.status, park.pending_input, park.park_phase
        record.delegation = park.delegation
        work.release()
        return
    TurnLoop(rt, work).run()


def forward_reply(
    rt: Runtime,
    rec: Checkpoint,
    message: str,
    warnings: list[str],
    delivery_id: str | None,
    *,
    answer: Callable[..., Applied],
) -> Applied:
    """A person's message to a caller parked at its child's decision: the child answers it (§3.6).

    The caller stays parked on the same park; when the child's answer has words, the caller commits
    them as its own reply to the person (issue 20 item 4: the caller's outbox holds the mail, the
    child knows nothing of the person's address), and that record is the one for consequences. The
    result carries the child's answer and ``delegation``.
    """
    child_rt, child = child_of(rt, rec, "decision")
    # The child remembers the reply's delivery id (the caller stays parked, unclaimed): a redelivery to
    # the caller is a duplicate there (issue 22: each event applied once across the pair).
    refuse_duplicate(child_rt.store, child, delivery_id, child.session_id)
    _refuse_moved_caller(rt, rec)
    child_answer = answer(child_rt, child, message, [], delivery_id).outcome
    assert child_answer is not None  # a reply always answers
    work = open_work(rt, rec, rec.version, warnings=warnings)  # nothing claimed
    mailed = _record_answer(work, child_answer.reply)
    outcome = build_outcome(work, "reply")
    update = {"reply": child_answer.reply, "usage": child_answer.usage}
    return Applied(outcome.model_copy(update=update), work.record if mailed else None)


def _refuse_moved_caller(rt: Runtime, rec: Checkpoint) -> None:
    """Refuse to write the child while the caller's view is not its latest version (one read of its head).

    Nothing claims the caller before its child answers, so no conditional write checks the view the
    reply was routed on; a warm store answers that view from memory (issue 24, ``engine.remembered``),
    and one that is old would have the child answer and then the caller's commit of the answer's mail
    lose to the caller's own newer version: the words never reach the person. Refused here, before
    anything is written, the door decides again on a fresh read (attackdrain finding).

    Raises:
        CommitConflictError: the caller is at another version than ``rec`` (nothing was written).
    """
    head = rt.store.head(rec.session_id)
    if head is None or head.version != rec.version:
        raise CommitConflictError(rec.session_id, rec.version, head.version if head is not None else None)


def _record_answer(work: Work, text: str) -> bool:
    """Commit the caller, unchanged but for the outbox entries of ``text`` (the mail and its event).

    Returns:
        Whether it was committed: not for an answer without words, nor when another writer moved the
        caller on meanwhile (its own commit then speaks for the session).
    """
    if not text.strip():
        return False
    work.outbox_words = text
    try:
        work.release()
    except CommitConflictError:
        return False
    return True


def forward_decision(
    rt: Runtime,
    rec: Checkpoint,
    to: str | None,
    comment: str | None,
    *,
    decide: Callable[..., Applied],
) -> Applied:
    """A decision sent to a caller parked at its child's decision is the child's (§3.7).

    ``to`` is checked against the child's record before anything is written.

    Raises:
        InvalidDecisionTargetError: ``to`` is missing or not an edge of the child's record.
        SessionNotParkedError: the child is no longer parked at its decision.
    """
    child_rt, child = child_of(rt, rec, "decision")
    pending = child.pending_decision
    assert pending is not None
    valid = [t.to for t in pending.transitions if t.to != pending.state]
    target = to.strip() if isinstance(to, str) else ""
    if not target or target not in valid:
        raise InvalidDecisionTargetError(target or None, valid, session_id=rec.session_id)
    work = _claim_caller(rt, rec, [], after="decision")
    answers: list[Outcome | None] = []

    def body() -> None:
        with waiting_on_child(work):
            answers.append(decide(child_rt, child, target, comment).outcome)
        TurnLoop(rt, work).run()

    return _with_child_reply(guarded(rt, work, body, "decide"), answers)


def forward_expire(
    rt: Runtime,
    rec: Checkpoint,
    now: str,
    *,
    expire: Callable[..., Applied],
) -> Applied:
    """A deadline passed at a caller parked at its child's decision: the child's park times out (§5.10, §5.11).

    The caller mirrors its child's deadline, so its sweep finds the pair; the child takes its
    ``on_timeout`` edge (or fails the turn), then the caller settles with the child's news.

    Raises:
        SessionNotParkedError: the child is no longer parked at its decision, or the caller was
            claimed by another firing first.
        SessionNotAwaitingInputError: the child's own deadline has not passed.
    """
    child_rt, child = child_of(rt, rec, "decision")
    pending = child.pending_decision
    assert pending is not None
    if pending.timeout_at is None or pending.timeout_at > now:
        raise SessionNotAwaitingInputError(child.session_id, str(child.status), "its park's deadline has not passed")
    work = _claim_caller(rt, rec, [], after="decision")
    answers: list[Outcome | None] = []

    def body() -> None:
        with waiting_on_child(work):
            answers.append(expire(child_rt, child, now).outcome)
        TurnLoop(rt, work).run()

    return _with_child_reply(guarded(rt, work, body, "decide"), answers)


def _claim_caller(
    rt: Runtime,
    rec: Checkpoint,
    warnings: list[str],
    *,
    after: str | None,
    delivery_id: str | None = None,
    forward: ForwardedDelivery | None = None,
) -> Work:
    """Take the caller's park and lease before the child is touched; the loser of a race learns it is not parked.

    ``forward`` (a delivery for the child) is committed with the claim, so it outlives this process.
    """
    channel = rec.channel
    work = open_work(rt, rec, rec.version, warnings=warnings)
    rec.pending_input = rec.pending_decision = None
    rec.park_phase = None
    rec.status = SessionStatus.RUNNING
    rec.delegation = rec.delegation.model_copy(  # type: ignore[union-attr]
        update={"after": after, "child_state": None, "forward": forward}
    )
    if after == "delivery":
        remember_delivery(rt.store, rec, delivery_id)
    preflight_model(rt, rec.delegation.state)

    def lost(now: Checkpoint | None) -> Exception:
        status = str(now.status) if now else None
        if channel == "input":
            return SessionNotAwaitingInputError(rec.session_id, status)
        return SessionNotParkedError(rec.session_id, status)

    claim_park(rt, work, lost)
    return work


def _with_child_reply(applied: Applied, answers: list[Outcome | None]) -> Applied:
    """When the caller wrote nothing (it parked again through the child), its Outcome shows the child's words."""
    outcome = applied.outcome
    if outcome is None or outcome.reply or not answers or answers[0] is None:
        return applied
    return Applied(outcome.model_copy(update={"reply": answers[0].reply}), applied.record)


# ---------------------------------------------------------------------------------------- addressing


def addressed(rt: Runtime, firing: EngineFiring) -> tuple[Runtime, EngineFiring]:
    """Where a firing goes: one addressed to a child's id reaches the pair through its caller (§5.10).

    A child id (``<caller>~<state>:<slug>:<n>``, §4.1) whose caller's call in flight names it is
    applied as if sent to the caller (delivery, reply, decision, send, recovery of a turn the caller
    runs): the caller is claimed first, so of a firing at the caller and one at its child exactly one
    proceeds, and the child's news always reaches the caller. A retry of a firing the caller (or its
    caller) applied, by its delivery id, goes to that session even after it moved on. Any other
    session of another workflow (a child whose caller moved on) runs under its own workflow's
    runtime. Ids without a caller, and ``Turn`` firings, go where they were sent. The caller's own caller is looked up the same way.

    Returns:
        ``(runtime, firing)`` to apply.
    """
    sid = getattr(firing, "session_id", None)
    if sid is None or isinstance(firing, Turn):
        return rt, firing
    parent = parent_session_id(sid)
    if parent is None:
        return rt, firing
    caller = rt.store.load(parent)
    d = caller.delegation if caller is not None else None
    recovering_a_parked_caller = (
        isinstance(firing, Recover) and caller is not None and caller.status != SessionStatus.RUNNING
    )
    if caller is not None and d is not None and d.session_id == sid and not recovering_a_parked_caller:
        caller_rt = _runtime_of(rt, caller.workflow)
        if caller_rt is not None:
            park = _callers_park(rt, firing, sid, caller)
            return addressed(caller_rt, replace(firing, session_id=SessionId(parent), **park))
    rec = rt.store.load(sid)
    applier = _ancestor_that_applied(rt, firing, rec, caller)
    if applier is not None:
        return applier
    own = _runtime_of(rt, rec.workflow) if rec is not None else None
    return (own or rt), firing


def _ancestor_that_applied(
    rt: Runtime, firing: EngineFiring, rec: Checkpoint | None, caller: Checkpoint | None
) -> tuple[Runtime, EngineFiring] | None:
    """Where a redelivery goes that a caller (or its caller) applied when it was addressed to this child.

    A firing at a child's id is applied as if sent to the caller while the caller's call names the
    child; its retry with the same delivery id may come after the caller moved on (the first attempt's
    process died before it answered). The event is the caller's, so the retry goes to the nearest
    ancestor that applied the id, whose firing rule answers it: a duplicate, or the continuation of
    the turn it started when that turn died (§3.12). A child that applied the id itself answers as
    usual. Without this the retry ran as a new event in the child, or in a new session of the child's
    id (issue 22: each event applied once across the pair).

    Returns:
        ``(runtime, firing)`` addressed to that ancestor, or ``None`` when no ancestor applied the id.

    Raises:
        DuplicateDeliveryError: the ancestor that applied it is of a workflow this stack cannot run.
        InvalidDeliveryIdError: the firing's delivery id is malformed (nothing is written).
        StoreError: a delivery marker could not be read.
    """
    delivery_id = getattr(firing, "delivery_id", None)
    if delivery_id is None:
        return None
    validate_delivery_id(delivery_id, session_id=firing.session_id)
    if rec is not None and was_applied(rt.store, rec, delivery_id):
        return None
    ancestor = caller
    while ancestor is not None:
        if was_applied(rt.store, ancestor, delivery_id):
            ancestor_rt = _runtime_of(rt, ancestor.workflow)
            if ancestor_rt is None:  # a workflow this stack cannot run: its own stack finishes a dead turn
                raise DuplicateDeliveryError(ancestor.session_id, delivery_id)
            return ancestor_rt, replace(firing, session_id=SessionId(ancestor.session_id))
        above = parent_session_id(ancestor.session_id)
        ancestor = rt.store.load(above) if above is not None else None
    return None


def _callers_park(rt: Runtime, firing: EngineFiring, child_id: str, caller: Checkpoint) -> dict[str, Any]:
    """The ``park_id`` a firing addressed to a child names, said as its caller's (§5.10, §5.11).

    The child's current park is the pair's park, which the caller holds under its own identity: a
    firing naming it names the caller's current park. Any other park (the child's earlier one, a
    made-up one) is kept, and the caller's park check refuses it. A firing naming no park: ``{}``.
    """
    park_id = getattr(firing, "park_id", None)
    if park_id is None or caller.park_id is None:
        return {}
    child = rt.store.load(child_id)
    return {"park_id": caller.park_id} if child is not None and child.park_id == park_id else {}


def _runtime_of(rt: Runtime, slug: str) -> Runtime | None:
    """The runtime of workflow ``slug`` as ``rt``'s registry finds it; ``None`` when it cannot."""
    if slug == rt.workflow.slug:
        return rt
    try:
        return rt.workflows.runtime(slug, rt.workflow)
    except WorkflowSpecError:
        return None


def caught_up(rt: Runtime, firing: EngineFiring, applied: Applied) -> Applied:
    """After a firing applied to a child itself, its caller learns the child's news (§5.10).

    A caller parked through a child whose status no longer matches (the child finished, or parks on
    another channel: a pair written before firings at a child went through its caller, or a child
    recovered on its own) is claimed and settles now: it mirrors the child's park or takes its result.
    Firings to any other session are answered as they were.
    """
    sid = getattr(firing, "session_id", None)
    parent = parent_session_id(sid) if sid is not None and not isinstance(firing, Turn) else None
    caller = rt.store.load(parent) if parent is not None else None
    if caller is None or caller.delegation is None or caller.delegation.session_id != sid:
        return applied
    child = rt.store.load(sid)
    if child is None or child.status == caller.status or child.status == SessionStatus.RUNNING:
        return applied
    if caller.status not in (SessionStatus.AWAITING_INPUT, SessionStatus.AWAITING_DECISION):
        return applied
    caller_rt = _runtime_of(rt, caller.workflow)
    if caller_rt is None:
        return applied
    try:
        work = _claim_caller(caller_rt, caller, [], after=caller.delegation.after)
    except SessionStateError:
        return applied  # another firing claimed the caller first: it settles with the child
    return guarded(caller_rt, work, lambda: TurnLoop(caller_rt, work).run(), "turn")
