"""Evaluate one assertion step against the view the nearest preceding action left.

Rule source: BEHAVIOUR.md §10.2 (structural and content assertions), §7 (note pairs are skipped
by ``reply``, ``calledTool``, ``notCalledTool``, ``usedNoTools`` and ``blockedTool``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from archmax.cases.matching import json_equal, partial_match, text_matches, token_in
from archmax.cases.results import AssertionRecord
from archmax.cases.schema import (
    GradeBody,
    ParkedBody,
    RaisedBody,
    RanWorkflowBody,
    ReplyBody,
    Step,
    ToolBody,
    TrailBody,
    VariablesBody,
)
from archmax.session.notes import runtime_note_kind
from archmax.session.paths import UNRESOLVED, resolve_relative
from archmax.session.records import PARKED_STATUSES, Checkpoint, Message, ToolCall

Grader = Callable[[str, list[Message]], tuple[float, str]]
"""``(closedQA, messages) -> (score, detail)``; ``None`` in its place means no ``tests.judge``."""


@dataclass(frozen=True)
class View:
    """What an action left: the session's latest committed record."""

    record: Checkpoint

    @property
    def parked(self) -> bool:
        """Whether the record is parked: status ``awaiting_*`` with a park record (§3.1, §10.2 ``parked``).

        The lease is not consulted: a case reads the record after its action returned, so no turn is live.
        """
        rec = self.record
        return rec.status in PARKED_STATUSES and rec.channel is not None

    @property
    def park_state(self) -> str | None:
        """The state slug the park record names (``pending_input`` or ``pending_decision``), or ``None`` unparked."""
        park = self.record.pending_input or self.record.pending_decision
        return park.state if park else None

    def messages(self) -> list[Message]:
        """The transcript without runtime-note pairs."""
        return [m for m in self.record.messages if runtime_note_kind(m) is None]

    def calls(self) -> list[tuple[ToolCall, str | None]]:
        """Every tool call the session made (notes excluded), with its result status (``None`` if unanswered)."""
        messages = self.messages()
        status = {m.tool_call_id: m.status for m in messages if m.role == "tool"}
        return [(c, status.get(c.id)) for m in messages if m.role == "assistant" for c in m.tool_calls]

    def assistant_text(self) -> str:
        """All assistant text so far, runtime notes excluded, one message per line (§10.2 ``reply``)."""
        return "\n".join(m.content for m in self.messages() if m.role == "assistant" and m.content)


def _record(step: Step, ok: bool, detail: str, **extra: Any) -> AssertionRecord:
    return AssertionRecord(kind=step.key, status="passed" if ok else "failed", step=step.number, detail=detail, **extra)


def _where(view: View) -> str:
    rec = view.record
    if view.parked:
        return f"parked on '{rec.channel}' in '{view.park_state}'"
    return f"status '{rec.status.value}' in '{rec.position}'"


def evaluate(step: Step, view: View, grader: Grader | None) -> list[AssertionRecord]:
    """Check one assertion step.

    Args:
        step: A validated assertion step (not an action).
        view: The record the nearest preceding action left.
        grader: Asks ``tests.judge``; ``None`` when no judge is configured (``grade`` then fails).

    Returns:
        One record, or one per token (``reply``) / per name (``variables``, locks recorded separately).

    Raises:
        ModelError: from the judge, for ``grade``.
    """
    return _CHECKS[step.key](step, step.body, view, grader)


# --------------------------------------------------------------------------- structural


def _succeeded(step: Step, body: Any, view: View, grader: Grader | None) -> list[AssertionRecord]:
    rec = view.record
    errors = [m for m in rec.messages if m.role == "tool" and m.status == "error"]
    problems = []
    if view.parked:
        problems.append(f"the session is {_where(view)}")
    if rec.raised is not None:
        problems.append(f"the agent raised '{rec.raised.code}': {rec.raised.reason}")
    if errors:
        problems.append(f"{len(errors)} tool result(s) are errors, first: {errors[0].name}: {errors[0].content[:120]}")
    return [_record(step, not problems, "; ".join(problems) or f"{_where(view)}, no raise, no error results")]


def _parked(step: Step, body: Any, view: View, grader: Grader | None) -> list[AssertionRecord]:
    channel: str | None = None
    state: str | None = None
    if isinstance(body, str):
        channel = body
    elif isinstance(body, ParkedBody):
        channel, state = body.channel, body.state
    want = "parked" + (f" on '{channel}'" if channel else "") + (f" in '{state}'" if state else "")
    ok = (
        view.parked
        and (channel is None or view.record.channel == channel)
        and (state is None or view.park_state == state)
    )
    return [_record(step, ok, f"expected {want}; the session is {_where(view)}")]


def _raised(step: Step, body: Any, view: View, grader: Grader | None) -> list[AssertionRecord]:
    raised = view.record.raised
    found = f"raised '{raised.code}': {raised.reason}" if raised else "no raise"
    code = body if isinstance(body, str) else (body.code if isinstance(body, RaisedBody) else None)
    reason = body.reason if isinstance(body, RaisedBody) else None
    ok = (
        raised is not None
        and (code is None or raised.code == code)
        and (reason is None or text_matches(reason, raised.reason))
    )
    want = "a raise" + (f" with code '{code}'" if code else "") + (f" and reason {reason!r}" if reason else "")
    return [_record(step, ok, f"expected {want}; found {found}")]


_NOT_MOVES = ("trigger", "hook", "sub-workflow")
"""Trail kinds that move nothing: arrivals, hook results and sub-workflow calls (§2.4, §5.10) stay in place."""


def _reached(step: Step, body: str, view: View, grader: Grader | None) -> list[AssertionRecord]:
    moves = [s.to for s in view.record.trail if s.kind not in _NOT_MOVES]
    ok = body in moves
    return [_record(step, ok, f"expected a move into '{body}'; moves: {', '.join(moves) or '(none)'}")]


def _trail(step: Step, body: TrailBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    matching = [
        s
        for s in view.record.trail
        if (body.to is None or s.to == body.to)
        and (body.kind is None or s.kind == body.kind)
        and (body.reason is None or s.reason == body.reason)
    ]
    matcher = ", ".join(f"{k}={v!r}" for k, v in (("to", body.to), ("kind", body.kind), ("reason", body.reason)) if v)
    return [
        _record(
            step,
            len(matching) == body.count,
            f"expected {body.count} step(s) with {matcher}; found {len(matching)}",
        )
    ]


def _no_traversal(step: Step, body: Any, view: View, grader: Grader | None) -> list[AssertionRecord]:
    moves = [f"{s.kind}→{s.to}" for s in view.record.trail if s.kind not in _NOT_MOVES]
    return [_record(step, not moves, f"expected only trigger steps; moves: {', '.join(moves) or '(none)'}")]


def _trigger_arrival(step: Step, body: str, view: View, grader: Grader | None) -> list[AssertionRecord]:
    arrivals = [s.reason or "" for s in view.record.trail if s.kind == "trigger"]
    ok = body in arrivals
    return [_record(step, ok, f"expected trigger '{body}' to arrive; arrivals: {', '.join(arrivals) or '(none)'}")]


def _variables(step: Step, body: VariablesBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    current = view.record.variables
    out = []
    for name, expected in body.expect.items():
        var = current.get(name)
        path = body.path.get(name)
        label = f"'{name}'" + (f" at '{path}'" if path else "")
        if var is None:
            out.append(_record(step, False, f"{label}: variable is not set"))
            continue
        value = var.value if path is None else resolve_relative(var.value, path)
        if value is UNRESOLVED:
            out.append(_record(step, False, f"{label}: the path does not resolve in {_json(var.value)}"))
            continue
        out.append(
            _record(
                step,
                json_equal(expected, value),
                f"{label}: expected {_json(expected)}, found {_json(value)}",
            )
        )
    for name, locked in body.locked.items():
        var = current.get(name)
        found = "not set" if var is None else ("locked" if var.locked else "unlocked")
        ok = var is not None and var.locked == locked
        out.append(
            AssertionRecord(
                kind="variables.locked",
                status="passed" if ok else "failed",
                step=step.number,
                detail=f"'{name}': expected {'locked' if locked else 'unlocked'}, found {found}",
            )
        )
    return out


# --------------------------------------------------------------------------- content


def _reply(step: Step, body: ReplyBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    text = view.assistant_text()
    out = []
    for token in body.includes:
        out.append(
            _record(
                step,
                token_in(token, text),
                f"includes {token!r}" + ("" if token_in(token, text) else f"; reply: {_clip(text)}"),
            )
        )
    for token in body.excludes:
        present = token_in(token, text)
        out.append(_record(step, not present, f"excludes {token!r}" + (f"; reply: {_clip(text)}" if present else "")))
    return out


def _matching_calls(body: ToolBody, view: View) -> list[tuple[ToolCall, str | None]]:
    return [
        (call, status)
        for call, status in view.calls()
        if call.name == body.name and (body.input is None or partial_match(body.input, call.args))
    ]


def _tool_label(body: ToolBody) -> str:
    return f"'{body.name}'" + (f" with input {_json(body.input)}" if body.input is not None else "")


def _called_names(view: View) -> str:
    return ", ".join(c.name for c, _ in view.calls()) or "(none)"


def _called(step: Step, body: ToolBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    ok = bool(_matching_calls(body, view))
    return [_record(step, ok, f"expected a call to {_tool_label(body)}; calls: {_called_names(view)}")]


def _not_called(step: Step, body: ToolBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    found = _matching_calls(body, view)
    return [_record(step, not found, f"expected no call to {_tool_label(body)}; found {len(found)}")]


def _blocked(step: Step, body: ToolBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    found = _matching_calls(body, view)
    ok = any(status == "blocked" for _, status in found)
    statuses = ", ".join(str(s) for _, s in found) or "no matching call"
    return [_record(step, ok, f"expected a blocked call to {_tool_label(body)}; found: {statuses}")]


def _no_tools(step: Step, body: Any, view: View, grader: Grader | None) -> list[AssertionRecord]:
    return [_record(step, not view.calls(), f"expected no tool calls; calls: {_called_names(view)}")]


def _ran_workflow(step: Step, body: RanWorkflowBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    runs = [
        s
        for s in view.record.trail
        if s.kind == "sub-workflow" and s.workflow == body.workflow and (s.status or "ok") == body.status
    ]
    ok = len(runs) == body.count if body.count is not None else bool(runs)
    want = f"{body.count}" if body.count is not None else "at least 1"
    return [
        _record(
            step,
            ok,
            f"expected {want} run(s) of '{body.workflow}' with status '{body.status}'; found {len(runs)}",
        )
    ]


def _grade(step: Step, body: GradeBody, view: View, grader: Grader | None) -> list[AssertionRecord]:
    if grader is None:
        return [_record(step, False, "grade needs a judge: set tests.judge in workflow.yaml", threshold=body.at_least)]
    score, detail = grader(body.closed_qa, list(view.record.messages))
    ok = score >= body.at_least
    return [_record(step, ok, f"{detail}; needs at least {body.at_least:g}", threshold=body.at_least, score=score)]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _clip(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


_CHECKS: dict[str, Callable[..., list[AssertionRecord]]] = {
    "succeeded": _succeeded,
    "parked": _parked,
    "raised": _raised,
    "reachedState": _reached,
    "trail": _trail,
    "noTraversal": _no_traversal,
    "triggerArrival": _trigger_arrival,
    "variables": _variables,
    "reply": _reply,
    "calledTool": _called,
    "notCalledTool": _not_called,
    "blockedTool": _blocked,
    "usedNoTools": _no_tools,
    "ranWorkflow": _ran_workflow,
    "grade": _grade,
}
