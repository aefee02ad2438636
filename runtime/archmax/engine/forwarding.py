"""Firings for a caller parked through its sub-workflow's child: the child gets them (§5.10).

Rule source: BEHAVIOUR.md §3.5–§3.7 (deliver, reply, decide), §5.10 (parks that delegate,
forwarding); issue 9 (a delivery claimed for the child outlives the process that claimed it).

Each kind hands its own park-level step (``resume``, ``answer``, ``decide``) in, so this module
never imports the kinds it forwards for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from archmax.engine.claims import Applied, build_outcome, claim_park, guarded, open_work
from archmax.engine.deliveries import remember_delivery
from archmax.engine.firing_rule import parked_channel, preflight_model
from archmax.engine.loop import TurnLoop
from archmax.engine.runtime import Runtime
from archmax.engine.subworkflows import forwarded
from archmax.engine.work import Work
from archmax.errors import InvalidDecisionTargetError, SessionNotAwaitingInputError, SessionNotParkedError
from archmax.session.records import Checkpoint, ForwardedDelivery, SessionStatus
from archmax.session.results import Outcome
from archmax.stores.riders import Riders


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
    riders: Riders | None,
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
    work = _claim_caller(rt, rec, warnings, riders, after="delivery", delivery_id=parts.delivery_id, forward=forward)
    answers: list[Outcome | None] = []

    def body() -> None:
        answers.append(
            resume(
                child_rt, child, parts.trigger, parts.variables, parts.message, parts.prepared, "deliver", [],
                parts.delivery_id,
            ).outcome
        )  # fmt: skip
        forwarded(work.record)
        TurnLoop(rt, work).run()

    return _with_child_reply(guarded(rt, work, body, disposition), answers)


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

    The caller's record is unchanged (it stays parked, nothing committed): the result carries the
    child's answer and ``delegation``, and no record for consequences.
    """
    child_rt, child = child_of(rt, rec, "decision")
    child_answer = answer(child_rt, child, message, [], delivery_id).outcome
    assert child_answer is not None  # a reply always answers
    outcome = build_outcome(open_work(rt, rec, rec.version, warnings=warnings), "reply")  # nothing claimed
    return Applied(outcome.model_copy(update={"reply": child_answer.reply, "usage": child_answer.usage}), None)


def forward_decision(
    rt: Runtime,
    rec: Checkpoint,
    to: str | None,
    comment: str | None,
    riders: Riders | None,
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
    work = _claim_caller(rt, rec, [], riders, after="decision")
    answers: list[Outcome | None] = []

    def body() -> None:
        answers.append(decide(child_rt, child, target, comment).outcome)
        TurnLoop(rt, work).run()

    return _with_child_reply(guarded(rt, work, body, "decide"), answers)


def _claim_caller(
    rt: Runtime,
    rec: Checkpoint,
    warnings: list[str],
    riders: Riders | None,
    *,
    after: str,
    delivery_id: str | None = None,
    forward: ForwardedDelivery | None = None,
) -> Work:
    """Take the caller's park and lease before the child is touched; the loser of a race learns it is not parked.

    ``forward`` (a delivery for the child) is committed with the claim, so it outlives this process.
    """
    channel = rec.channel
    work = open_work(rt, rec, rec.version, warnings=warnings, riders=riders)
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
