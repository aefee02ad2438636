"""The control tools a session's model calls: wait, advance, reset, raise, set and get variables.

Rule source: BEHAVIOUR.md §5.1 (advance), §5.2 (wait), §5.6 (raise), §5.9 (reset, variables),
§6 (variables); seed "Parking a session". Each tool is ``fn(loop, slug, call, args) -> _Result``,
run by :class:`~archmax.engine.loop.TurnLoop` for a call its state allows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from archmax.session.notes import is_runtime_note
from archmax.session.paths import UNRESOLVED, parse_session_path, resolve_path
from archmax.session.records import Message, PendingInput, Raised, SessionStatus, ToolCall, Variable
from archmax.session.until import TIMEOUT_HINT, UNTIL_HINT, UntilError, deadline, parse_until
from archmax.session.variables import VARIABLE_NAME, title_problem
from archmax.spec import check_value_type

if TYPE_CHECKING:
    from archmax.engine.loop import TurnLoop

MAX_EVIDENCE = 20


class _Result:
    """A tool result: status and text."""

    __slots__ = ("status", "text")

    def __init__(self, status: str, text: str) -> None:
        self.status = status
        self.text = text


def ok(text: str) -> _Result:
    """A ``success`` tool result carrying ``text`` (§5.9 result statuses)."""
    return _Result("success", text)


def error(text: str) -> _Result:
    """An ``error`` tool result: a control-tool argument refusal, a host tool error, a failed sub-workflow (§5.9)."""
    return _Result("error", text)


def blocked(text: str) -> _Result:
    """A ``blocked`` tool result: governance refused the call and nothing happened (§2.3, §5.9)."""
    return _Result("blocked", text)


def agent_spoke_since_opening(messages: list[Message]) -> bool:
    """Whether the agent wrote non-blank text since the most recent turn-opening message (§5.2).

    A user message or a runtime note opens; text in the message that calls ``archmax_wait`` counts.
    """
    for message in reversed(messages):
        if is_runtime_note(message) or message.role == "user":
            return False
        if message.role == "assistant" and message.content.strip():
            return True
    return False


def archmax_wait(loop: TurnLoop, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
    """§5.2: park on ``input``; ``until`` → ``resume_at``; ``maxParks`` refuses and routes."""
    rec = loop.rec
    # The park is where the session stands now: an advance or reset earlier in the same message
    # has moved it away from the state the message was written in.
    slug = rec.position or slug
    reason = args.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return error("archmax_wait rejected: a non-empty 'reason' is required")
    reason = reason.strip()
    resume_at = None
    until = args.get("until")
    if until is not None:
        try:
            if not isinstance(until, str):
                raise UntilError(f"'until' value '{until}' is neither a duration nor an instant.")
            resume_at = parse_until(until, loop.rt.clock.now())
        except UntilError as exc:
            return error(f"archmax_wait rejected: {exc} {UNTIL_HINT}")
    timeout, timeout_at = None, None
    if args.get("timeout") is not None:  # a deadline counted from the park (§5.11): a duration only
        try:
            timeout = str(args["timeout"]).strip() if isinstance(args["timeout"], str) else args["timeout"]
            timeout_at = deadline(timeout, loop.rt.clock.now())
        except UntilError as exc:
            return error(f"archmax_wait rejected: {exc} {TIMEOUT_HINT}")
    state = loop.wf.states[slug]
    max_parks = state.budget.max_parks if state.budget else None
    count = rec.park_counts.get(slug, 0)
    if max_parks and count + 1 > max_parks:
        rec.pending_failure = f"state '{slug}' exhausted its park budget (maxParks: {max_parks})"
        return error(
            f"archmax_wait rejected: state '{slug}' exhausted its park budget (maxParks: {max_parks}) — "
            f"it asked to wait again for: {reason}"
        )
    rec.park_counts[slug] = count + 1
    rec.pending_input = PendingInput(
        state=slug,
        title=(state.title or "").strip() or None,
        reason=reason,
        parked_at=loop.rt.now(),
        resume_at=resume_at,
        timeout=timeout,
        timeout_at=timeout_at,
    )
    rec.pending_decision = None
    rec.status = SessionStatus.AWAITING_INPUT
    rec.park_phase = "suspend" if agent_spoke_since_opening(rec.messages) else "closing"
    loop.handoff_directive = "wait"
    loop.rt.events.emit(
        rec, "parked", state=slug, awaiting="input", reason=reason, resume_at=resume_at, call_id=call.id
    )
    text = f"Parked in '{slug}'. The session will continue in this state when an event is delivered; stop working now."
    if resume_at:
        text += f" The wake-up instant {resume_at} is recorded, not scheduled: whoever polls wakes the session."
    if timeout_at:
        text += f" If nothing is delivered by {timeout_at} (timeout {timeout}), the session continues here with the event 'timeout'."
    return ok(text)


def archmax_advance(loop: TurnLoop, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
    """§5.1: refusals in order, then move (a human target parks on ``decision``)."""
    rec = loop.rec
    refusal = _advance_refusal(loop, slug, args)
    if refusal is not None:
        return blocked(f"archmax_advance rejected: {refusal}")
    to, reason = args["to"].strip(), args["reason"].strip()
    evidence = args.get("evidence") or []
    refused = loop.hooks.at_advance(slug, to, reason)  # refusals (6) and (7)
    if refused is not None:
        return blocked(f"archmax_advance rejected: {refused}")
    loop._advanced_to = to
    rec.position = to
    rec.moved_since_open = True
    rec.pending_failure = rec.pending_rejection = None
    rec.state_turns = 0
    loop.rt.trail(rec, "agent", to, reason)
    if loop.wf.states[to].type == "human":
        loop.park_decision(directive="introduce", attached=list(evidence), commit=False)
        return ok(f"Advanced to state '{to}'. The session is parked there awaiting a person's decision; stop working.")
    return ok(f"Advanced to state '{to}'. Do the work of '{to}' now.")


def _advance_refusal(loop: TurnLoop, slug: str, args: dict[str, Any]) -> str | None:
    """§5.1 refusals (1)-(5), in order, before any hook runs; ``None`` when the advance may go on."""
    if loop._advanced_to is not None:
        return f"this message already advanced to '{loop._advanced_to}'"
    state = loop.wf.states[slug]
    to = args.get("to")
    to = to.strip() if isinstance(to, str) else ""
    edges = [t.to for t in state.transitions]
    if to not in edges:
        return f"'{to}' is not a transition of '{slug}'. Choose one of: {', '.join(edges)}."
    reason = args.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return "a non-empty 'reason' is required"
    evidence = args.get("evidence") or []
    if evidence:
        problem = _evidence_problem(loop, loop.wf.states[to].type, evidence)
        if problem is not None:
            return problem
    missing = [n for n in (state.requires or []) if n not in loop.rec.variables]
    if missing:
        names = ", ".join(f"'{n}'" for n in missing)
        return f"state '{slug}' requires {names} to be set before leaving it"
    return None


def _evidence_problem(loop: TurnLoop, target_type: str, evidence: Any) -> str | None:
    """Why ``evidence`` cannot go with this advance (§5.1), or ``None``."""
    if target_type != "human":
        return "'evidence' is only accepted for a human target"
    if not isinstance(evidence, list) or len(evidence) > MAX_EVIDENCE:
        return f"'evidence' must list at most {MAX_EVIDENCE} paths"
    unreadable = [p for p in evidence if not isinstance(p, str) or not loop._file_exists(p)]
    if unreadable:
        return f"unreadable evidence paths: {', '.join(map(str, unreadable))}"
    return None


def archmax_reset(loop: TurnLoop, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
    """§5.9: back to ``entry_state``, keeping transcript, variables, files and park counts."""
    rec = loop.rec
    reason = args.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return error("archmax_reset rejected: a non-empty 'reason' is required")
    entry = rec.entry_state or slug
    rec.position = entry
    rec.moved_since_open = True
    rec.before_done = []
    rec.pending_failure = rec.pending_rejection = None
    rec.state_turns = 0
    loop.rt.trail(rec, "reset", entry, reason.strip())
    return ok(f"Reset to state '{entry}', where the conversation began. Serve the request from here.")


def archmax_raise(loop: TurnLoop, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
    """§5.6: end the session as failed, at once, in this state."""
    rec = loop.rec
    if loop._batch_size != 1:
        return error("archmax_raise rejected: it must be the only tool call of its message")
    code, reason = args.get("code"), args.get("reason")
    if not isinstance(code, str) or not (1 <= len(code) <= 64) or "\n" in code or "\r" in code:
        return error("archmax_raise rejected: 'code' must be 1-64 characters with no line break")
    if not isinstance(reason, str) or not reason.strip():
        return error("archmax_raise rejected: a non-empty 'reason' is required")
    rec.raised = Raised(code=code, reason=reason, state=slug)
    rec.status = SessionStatus.FAILED
    rec.pending_failure = rec.pending_rejection = None
    loop.rt.events.emit(rec, "raised", state=slug, code=code, reason=reason, call_id=call.id)
    return ok(f"Raised '{code}'. The session has ended as failed.")


def archmax_set_variables(loop: TurnLoop, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
    """§5.9, §6: atomic agent writes; locked values and bad names refuse the whole call."""
    rec = loop.rec
    values = args.get("variables")
    lock = args.get("lock", False) is True
    nothing = " Nothing was written."
    if not isinstance(values, dict) or not values:
        return error("archmax_set_variables rejected: 'variables' must be a non-empty mapping." + nothing)
    decl = loop.wf.trigger_decl(rec.trigger or "")
    returns = {r.name: r for r in (decl.returns if decl else None) or []}
    for name, value in values.items():
        problem = _variable_problem(loop, name, value, lock, returns)
        if problem is not None:
            return error(f"archmax_set_variables rejected: {problem}" + nothing)
    for name, value in values.items():
        if name == "title":
            rec.variables[name] = Variable(value=value.strip(), locked=False)
            loop.rt.events.emit(rec, "title_set", title=value.strip())
        else:
            rec.variables[name] = Variable(value=value, locked=lock)
    names = list(values)
    loop.rt.events.emit(rec, "variables_set", state=slug, names=names, locked=lock, call_id=call.id)
    return ok(f"Set {', '.join(names)}{' (locked)' if lock else ''}.")


def _variable_problem(loop: TurnLoop, name: Any, value: Any, lock: bool, returns: dict[str, Any]) -> str | None:
    """Why the agent may not write ``name = value`` (§5.9, §6), or ``None``."""
    rec = loop.rec
    if not isinstance(name, str) or not VARIABLE_NAME.fullmatch(name):
        hint = " Sub-paths cannot be written: set the whole variable." if isinstance(name, str) and "." in name else ""
        return f"'{name}' is not a valid variable name.{hint}"
    current = rec.variables.get(name)
    if current is not None and current.locked:
        shown = json.dumps(current.value, ensure_ascii=False, default=str)
        return f"'{name}' is locked (current value: {shown})."
    if name == "title":
        if lock:
            return "'title' cannot be locked."
        problem = title_problem(value)
        if problem:
            return f"title {problem}."
    spec = returns.get(name)
    if spec is not None and spec.type and not check_value_type(value, spec.type, file_exists=loop._file_exists):
        return f"'{name}' must be of type '{spec.type}' (trigger '{rec.trigger}' returns)."
    return None


def archmax_get_variables(loop: TurnLoop, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
    """§5.9: all variables, one by name, or a path inside one."""
    rec = loop.rec
    name = args.get("name")
    path = args.get("path")
    name = name.strip() if isinstance(name, str) and name.strip() else None
    path = path.strip() if isinstance(path, str) and path.strip() else None
    view = {n: {"value": v.value, "locked": v.locked} for n, v in rec.variables.items()}
    if name is None:
        return ok(json.dumps(view, indent=2, ensure_ascii=False, default=str))
    if name not in view:
        names = ", ".join(sorted(view)) or "(none set yet)"
        return error(f"Variable '{name}' is not set. Set: {names}")
    if path is None:
        return ok(json.dumps(view[name], ensure_ascii=False, default=str))
    full = path if path == name or path.startswith(name + ".") else f"{name}.{path}"
    try:
        value = resolve_path(parse_session_path(full, "archmax_get_variables"), {name: view[name]["value"]})
    except Exception:
        value = UNRESOLVED
    if value is UNRESOLVED:
        return error(f"Path '{path}' does not resolve against variable '{name}'.")
    return ok(json.dumps({"value": value}, ensure_ascii=False, default=str))


CONTROL_TOOLS: dict[str, Callable[[TurnLoop, str, ToolCall, dict[str, Any]], _Result]] = {
    "archmax_wait": archmax_wait,
    "archmax_advance": archmax_advance,
    "archmax_reset": archmax_reset,
    "archmax_raise": archmax_raise,
    "archmax_set_variables": archmax_set_variables,
    "archmax_get_variables": archmax_get_variables,
}
"""Control tool name → its implementation."""
