"""The turn loop: model call → governed tool calls → model call … until the session finishes or parks.

Rule source: BEHAVIOUR.md §5 (control tools, parks, budgets, completion), §5.5 (handoff calls),
§5.7 (turn failures and ``on_error``), §7 (runtime notes); seed "Parking a session",
"Bounding the loop", "How a session ended".
"""

from __future__ import annotations

import concurrent.futures
import json
from typing import Any

from archmax.engine import subworkflows
from archmax.engine.hooks import HookRunner
from archmax.engine.placement import session_file_exists
from archmax.engine.prompt import shows_reset_instruction, state_block, static_prompt
from archmax.engine.runtime import Runtime
from archmax.engine.tools import CONTROL_TOOL_SPECS
from archmax.engine.work import Work
from archmax.errors import TURN_FAILING_MODEL_ERRORS
from archmax.models.base import ModelRequest, ModelResponse, ToolSpec
from archmax.session.notes import NOTE_TOOL, error_note_text, is_runtime_note, make_note
from archmax.session.paths import UNRESOLVED, parse_session_path, resolve_path
from archmax.session.records import (
    PARKED_STATUSES,
    Checkpoint,
    Message,
    PendingDecision,
    PendingInput,
    Raised,
    SessionStatus,
    ToolCall,
    TransitionRef,
    Variable,
)
from archmax.session.until import UNTIL_HINT, UntilError, parse_until
from archmax.session.variables import VARIABLE_NAME, UnresolvedReferenceError, substitute_references, title_problem
from archmax.spec import check_value_type
from archmax.spec.governance import SUBWORKFLOW_PREFIX, is_subworkflow_tool

PARKED_MOVES = ("archmax_wait", "archmax_advance", "archmax_reset")
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


def final_answer_committed(messages: list[Message]) -> bool:
    """Whether the transcript ends with the agent's final answer: an assistant message with no tool calls.

    A handoff's park message and a runtime note (a call of ``archmax_note``) are not final answers.
    Finding it last means the turn's outcome is already decided and only its completion is owed:
    right after the model answered, and on a takeover (§3.12) of a turn whose answer reached a
    commit (a lease renewal) before its process died.
    """
    if not messages:
        return False
    last = messages[-1]
    return last.role == "assistant" and not last.tool_calls and not last.handoff


class TurnLoop:
    """Drives one session's open turn until it finishes or suspends; commits along the way."""

    def __init__(self, rt: Runtime, work: Work) -> None:
        self.rt = rt
        self.work = work
        self.wf = rt.workflow
        self.handoff_directive: str | None = None
        self.hooks = HookRunner(self)
        self._side_effects = False

    @property
    def rec(self) -> Checkpoint:
        """The record being built for this session (``work.record``); the loop mutates it in place."""
        return self.work.record

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        """Run until finished or suspended. The final commit lets the lease go."""
        rec = self.rec
        while True:
            if rec.pending_failure is not None:
                if not self._route_failure():
                    return
                continue
            if rec.delegation is not None and rec.status == SessionStatus.RUNNING:
                subworkflows.settle(self)  # a forwarded resume or a recovery: bring the child's news (§5.10)
                self.work.commit()
                continue
            if self._is_parked():
                if rec.park_phase == "closing":
                    # The park is on record before its handoff call: if the lease runs out during
                    # that call, the session counts as parked without a message (§3.1).
                    self.work.commit()
                    self._handoff_call(self.handoff_directive or "wait")
                rec.park_phase = "suspend"
                self.handoff_directive = None
                self.work.release()
                return
            if rec.status != SessionStatus.RUNNING:
                self.work.release()
                return
            if final_answer_committed(rec.messages):
                # The turn's last answer is in: completion is owed, never another model call. The loop
                # comes here right after the answer, and so does a takeover (§3.12) of a process that
                # died after a commit holding it: one path for both.
                if rec.pending_rejection is not None:  # a failed sub-workflow call routes now (§5.7, §5.8)
                    rec.pending_failure, rec.pending_rejection = rec.pending_rejection.reason, None
                    continue
                if self.hooks.at_completion():  # a terminal state's after hooks may send it back (§5.8)
                    continue
                self._complete()
                return
            state = self.wf.states[rec.position]
            if state.type == "human":
                self.park_decision(directive=self.handoff_directive or "introduce")
                continue
            if self.hooks.before_visit():  # a visit's first call runs its before hooks (§2.4)
                continue
            max_turns = state.budget.max_turns if state.budget else None
            if max_turns and rec.state_turns + 1 > max_turns:
                rec.pending_failure = f"state '{state.slug}' exhausted its turn budget (maxTurns: {max_turns})"
                continue
            response = self._call_model(handoff=None)
            if response is None:
                continue  # timed out: pending_failure is set
            rec.state_turns += 1
            calls = list(response.tool_calls)
            rec.messages.append(
                Message(role="assistant", content=response.text or "", tool_calls=calls, usage=response.usage)
            )
            if (response.text or "").strip():
                self.rt.events.emit(rec, "agent_text", text=response.text)
            if any(call.name in self.rt.host_tools for call in calls):
                # A host tool has side effects: its call is on record before it runs, so a crash
                # answers it `interrupted` (§3.12) instead of running it again.
                self.work.commit()
            else:
                self.work.step()  # a model call repeats harmlessly: no commit of its own (issue 10)
            if not calls:
                continue  # the final answer: completion is the next step (above), in the turn's last commit
            self._side_effects = False
            self._dispatch_batch(state.slug, calls)
            if self._side_effects:
                self.work.commit()  # a host tool or a child ran: its result is on record before anything else
            else:
                self.work.step()  # control tools only change the record

    # ------------------------------------------------------------------ model calls

    def _tools_for(self, slug: str) -> list[ToolSpec]:
        names = self.wf.offered_tools(slug, self.rt.host_tools.keys())
        specs = []
        for name in names:
            if name in CONTROL_TOOL_SPECS:
                specs.append(CONTROL_TOOL_SPECS[name])
            elif name in self.rt.host_tools:
                specs.append(self.rt.host_tools[name].spec)
            elif is_subworkflow_tool(name):
                specs.append(self.rt.workflows.tool_spec(name[len(SUBWORKFLOW_PREFIX) :], self.wf))
        return specs

    def _call_model(self, handoff: str | None, reason: str | None = None) -> ModelResponse | None:
        """One model call racing the state's ``timeoutMs`` (§5.4). None on expiry (the response is discarded)."""
        rec = self.rec
        slug = rec.position
        state = self.wf.states[slug]
        terminal = state.is_terminal
        block = state_block(
            slug=slug,
            title=state.title,
            instructions=state.instructions,
            transitions=[(t.to, t.description) for t in state.transitions],
            reset_instruction=shows_reset_instruction(rec, terminal),
            handoff=handoff,
            reason=reason,
        )
        timeout_ms = state.budget.timeout_ms if state.budget else None
        request = ModelRequest(
            system=static_prompt(self.wf.title, self.wf.instructions),
            state_block=block,
            messages=list(rec.messages),
            tools=self._tools_for(slug),
            state=slug,
            session_id=rec.session_id,
            handoff=handoff is not None,
            model=state.model,
            timeout_s=timeout_ms / 1000 if timeout_ms else None,
        )
        try:
            model = self.rt.model_for(state.model)
            if not timeout_ms:
                response = model.complete(request)
            else:
                pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
                future = pool.submit(model.complete, request)
                try:
                    response = future.result(timeout=timeout_ms / 1000)
                except concurrent.futures.TimeoutError:
                    pool.shutdown(wait=False, cancel_futures=True)
                    if handoff is None:
                        rec.pending_failure = f"state '{slug}' model call exceeded its time budget (timeoutMs: {timeout_ms})"
                    return None
                pool.shutdown(wait=False)
        except TURN_FAILING_MODEL_ERRORS as exc:  # a retry cannot cure it: the turn fails (§5.7)
            if handoff is None:
                rec.pending_failure = f"state '{slug}' model call failed: {type(exc).__name__}: {exc}"
            return None
        self.work.spend(response.usage)
        return response

    def _handoff_call(self, directive: str) -> None:
        """One model call whose tool calls are all refused; its text is the park message (§5.5)."""
        rec = self.rec
        reason = rec.pending_input.reason if rec.pending_input else None
        response = self._call_model(handoff=directive, reason=reason)
        if response is None:
            return
        self._record_handoff_answer(response)

    def _record_handoff_answer(self, response: ModelResponse, *, announce: bool = True) -> None:
        """Append a handoff answer: its text is the park message, its tool calls are all ``blocked``."""
        rec = self.rec
        text = response.text or ""
        calls = list(response.tool_calls)
        if text.strip() or calls:
            rec.messages.append(
                Message(role="assistant", content=text, tool_calls=calls, handoff=True, usage=response.usage)
            )
        if text.strip() and announce:
            self.rt.events.emit(rec, "agent_text", text=text)
        for call in calls:
            self._append_result(call, blocked(f"{call.name} rejected: the session is parked; this call only writes a message"))

    # ------------------------------------------------------------------ parks

    def park_decision(self, directive: str, attached: list[str] | None = None, *, commit: bool = True) -> None:
        """Record a fresh ``PendingDecision`` at the current (human) state; a handoff call follows (§5.1, §5.5).

        Args:
            directive: The handoff directive of the call that follows.
            attached: Evidence paths given by the advance, after the state's own.
            commit: Commit the park now. An ``archmax_advance`` into a human state passes ``False``:
                its park is committed by the batch commit, together with the tool result that made
                it, so no committed record holds the park with the advance call unanswered (§9.3).
        """
        rec = self.rec
        state = self.wf.states[rec.position]
        evidence: list[str] = []
        for path in list(state.evidence or []) + list(attached or []):
            if path not in evidence:
                evidence.append(path)
        rec.decision_count += 1
        rec.pending_decision = PendingDecision(
            state=state.slug,
            title=(state.title or "").strip() or None,
            seq=rec.decision_count,
            transitions=[TransitionRef(to=t.to, description=t.description, type=t.type) for t in state.transitions],
            evidence=evidence or None,
            created_at=self.rt.now(),
        )
        rec.pending_input = None
        rec.status = SessionStatus.AWAITING_DECISION
        rec.park_phase = "closing"
        self.handoff_directive = directive
        self.rt.events.emit(rec, "parked", state=state.slug, awaiting="decision")
        if commit:
            self.work.step()

    # ------------------------------------------------------------------ completion and failure

    def _complete(self) -> None:
        """Completion (§5.8): the trigger's returns are checked; else completed.

        A pending failure never reaches here: the loop routes it before the next model call.
        """
        rec = self.rec
        missing = self._unmet_returns()
        if missing:
            name = missing[0]
            rec.status = SessionStatus.REJECTED
            rec.rejected = (
                f"Completed in state '{rec.position}' without setting '{name}', which trigger '{rec.trigger}' "
                f"declares in its 'returns'. Set it with 'archmax_set_variables' before finishing."
            )
        else:
            rec.status = SessionStatus.COMPLETED
        self.work.release()

    def _unmet_returns(self) -> list[str]:
        decl = self.wf.trigger_decl(self.rec.trigger or "")
        if decl is None or not decl.returns:
            return []
        missing = []
        for spec in decl.returns:
            var = self.rec.variables.get(spec.name)
            if var is None or not check_value_type(var.value, spec.type, file_exists=self._file_exists):
                missing.append(spec.name)
        return missing

    def _file_exists(self, path: str) -> bool:
        return session_file_exists(self.rt.store, self.rec.session_id, path)

    def _route_failure(self) -> bool:
        """Route the pending failure by ``on_error``, or reject the turn (§5.7). Returns True when routed."""
        rec = self.rec
        reason = rec.pending_failure or "the turn failed"
        rec.pending_failure = None
        source = rec.position
        target = self.wf.states[source].on_error
        if not target:
            rec.status = SessionStatus.REJECTED
            rec.rejected = reason
            rec.pending_input = None
            rec.pending_decision = None
            rec.park_phase = None
            self.work.release()
            return False
        self.rt.events.emit(rec, "state_error_routed", state=source, to=target, reason=reason)
        # The target's before hooks run before its first call unless they already ran this turn, so
        # on_error cycles between vetoing states cannot loop forever (§2.4).
        rec.messages.extend(make_note("error", error_note_text(source, reason, target)))
        self.rt.trail(rec, "on_error", target, reason)
        rec.position = target
        rec.moved_since_open = True
        rec.pending_input = None
        rec.pending_decision = None
        rec.park_phase = None
        rec.state_turns = 0
        rec.status = SessionStatus.RUNNING
        self.handoff_directive = "introduce"
        self.work.step()
        return True

    # ------------------------------------------------------------------ tool dispatch

    def _append_result(self, call: ToolCall, result: _Result) -> None:
        self.rec.messages.append(
            Message(role="tool", content=result.text, tool_call_id=call.id, name=call.name, status=result.status)
        )

    def _dispatch_batch(self, slug: str, calls: list[ToolCall]) -> None:
        """Run one message's tool calls in order (§5)."""
        self._advanced_to: str | None = None
        self._batch_size = len(calls)
        for call in calls:
            self._append_result(call, self._dispatch(slug, call))

    def _is_parked(self) -> bool:
        return self.rec.status in PARKED_STATUSES

    def _dispatch(self, slug: str, call: ToolCall) -> _Result:
        name = call.name
        if name == NOTE_TOOL:
            return blocked(f"'{NOTE_TOOL}' is reserved for the runtime and cannot be called")
        if self._is_parked() and name in PARKED_MOVES:
            return blocked(f"{name} rejected: the session is parked")
        if not self.wf.tool_allowed(slug, name, self.rt.host_tools.keys()):
            return blocked(f"tool '{name}' is not available in state '{slug}'")
        if self.rec.status == SessionStatus.FAILED:
            return blocked(f"{name} rejected: the session has raised")
        args = call.args if isinstance(call.args, dict) else {}
        if is_subworkflow_tool(name):
            self._side_effects = True  # a child session exists now, outside this record
            return _Result(*subworkflows.call(self, slug, call, args))
        handler = getattr(self, "_tool_" + name, None) if name in CONTROL_TOOL_SPECS else None
        if handler is not None:
            return handler(slug, call, args)
        return self._host_tool(slug, call, args)

    def _host_tool(self, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
        tool = self.rt.host_tools.get(call.name)
        if tool is None:
            return blocked(f"unknown tool '{call.name}'")
        try:
            args = substitute_references(args, self.rec.variables)
        except UnresolvedReferenceError as exc:
            return error(f"{call.name} rejected: {exc}")
        plain = {n: v.value for n, v in self.rec.variables.items()}
        refusal = self.wf.guard_refusal(slug, call.name, args, plain)
        if refusal:  # a guarded grant or denial (tools.allow / forbid with args) refuses this call
            return blocked(f"{call.name} rejected: {refusal}")
        self._side_effects = True  # whatever the tool does outside the record has happened
        try:
            value = tool.fn(**args)
        except Exception as exc:  # a host tool's failure is the model's to read, not the runtime's
            return error(f"{call.name} failed: {type(exc).__name__}: {exc}")
        return ok(value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False))

    # ------------------------------------------------------------------ control tools

    def _tool_archmax_wait(self, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
        """§5.2: park on ``input``; ``until`` → ``resume_at``; ``maxParks`` refuses and routes."""
        rec = self.rec
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
                resume_at = parse_until(until, self.rt.clock.now())
            except UntilError as exc:
                return error(f"archmax_wait rejected: {exc} {UNTIL_HINT}")
        state = self.wf.states[slug]
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
            parked_at=self.rt.now(),
            resume_at=resume_at,
        )
        rec.pending_decision = None
        rec.status = SessionStatus.AWAITING_INPUT
        rec.park_phase = "suspend" if agent_spoke_since_opening(rec.messages) else "closing"
        self.handoff_directive = "wait"
        self.rt.events.emit(
            rec, "parked", state=slug, awaiting="input", reason=reason, resume_at=resume_at, call_id=call.id
        )
        text = (
            f"Parked in '{slug}'. The session will continue in this state when an event is delivered; "
            "stop working now."
        )
        if resume_at:
            text += f" The wake-up instant {resume_at} is recorded, not scheduled: whoever polls wakes the session."
        return ok(text)

    def _tool_archmax_advance(self, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
        """§5.1: refusals in order, then move (a human target parks on ``decision``)."""
        rec = self.rec
        if self._advanced_to is not None:
            return blocked(f"archmax_advance rejected: this message already advanced to '{self._advanced_to}'")
        state = self.wf.states[slug]
        to = args.get("to")
        to = to.strip() if isinstance(to, str) else ""
        edges = [t.to for t in state.transitions]
        if to not in edges:
            return blocked(
                f"archmax_advance rejected: '{to}' is not a transition of '{slug}'. Choose one of: {', '.join(edges)}."
            )
        reason = args.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            return blocked("archmax_advance rejected: a non-empty 'reason' is required")
        target = self.wf.states[to]
        evidence = args.get("evidence") or []
        if evidence:
            if target.type != "human":
                return blocked("archmax_advance rejected: 'evidence' is only accepted for a human target")
            if not isinstance(evidence, list) or len(evidence) > MAX_EVIDENCE:
                return blocked(f"archmax_advance rejected: 'evidence' must list at most {MAX_EVIDENCE} paths")
            unreadable = [p for p in evidence if not isinstance(p, str) or not self._file_exists(p)]
            if unreadable:
                return blocked(f"archmax_advance rejected: unreadable evidence paths: {', '.join(map(str, unreadable))}")
        missing = [n for n in (state.requires or []) if n not in rec.variables]
        if missing:
            names = ", ".join(f"'{n}'" for n in missing)
            return blocked(f"archmax_advance rejected: state '{slug}' requires {names} to be set before leaving it")
        refusal = self.hooks.at_advance(slug, to, reason.strip())  # refusals (6) and (7)
        if refusal is not None:
            return blocked(f"archmax_advance rejected: {refusal}")
        self._advanced_to = to
        rec.position = to
        rec.moved_since_open = True
        rec.pending_failure = rec.pending_rejection = None
        rec.state_turns = 0
        self.rt.trail(rec, "agent", to, reason.strip())
        if target.type == "human":
            self.park_decision(directive="introduce", attached=list(evidence), commit=False)
            return ok(f"Advanced to state '{to}'. The session is parked there awaiting a person's decision; stop working.")
        return ok(f"Advanced to state '{to}'. Do the work of '{to}' now.")

    def _tool_archmax_reset(self, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
        """§5.9: back to ``entry_state``, keeping transcript, variables, files and park counts."""
        rec = self.rec
        reason = args.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            return error("archmax_reset rejected: a non-empty 'reason' is required")
        entry = rec.entry_state or slug
        rec.position = entry
        rec.moved_since_open = True
        rec.before_done = []
        rec.pending_failure = rec.pending_rejection = None
        rec.state_turns = 0
        self.rt.trail(rec, "reset", entry, reason.strip())
        return ok(f"Reset to state '{entry}', where the conversation began. Serve the request from here.")

    def _tool_archmax_raise(self, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
        """§5.6: end the session as failed, at once, in this state."""
        rec = self.rec
        if self._batch_size != 1:
            return error("archmax_raise rejected: it must be the only tool call of its message")
        code, reason = args.get("code"), args.get("reason")
        if not isinstance(code, str) or not (1 <= len(code) <= 64) or "\n" in code or "\r" in code:
            return error("archmax_raise rejected: 'code' must be 1-64 characters with no line break")
        if not isinstance(reason, str) or not reason.strip():
            return error("archmax_raise rejected: a non-empty 'reason' is required")
        rec.raised = Raised(code=code, reason=reason, state=slug)
        rec.status = SessionStatus.FAILED
        rec.pending_failure = rec.pending_rejection = None
        self.rt.events.emit(rec, "raised", state=slug, code=code, reason=reason, call_id=call.id)
        return ok(f"Raised '{code}'. The session has ended as failed.")

    def _tool_archmax_set_variables(self, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
        """§5.9, §6: atomic agent writes; locked values and bad names refuse the whole call."""
        rec = self.rec
        values = args.get("variables")
        lock = args.get("lock", False) is True
        nothing = " Nothing was written."
        if not isinstance(values, dict) or not values:
            return error("archmax_set_variables rejected: 'variables' must be a non-empty mapping." + nothing)
        decl = self.wf.trigger_decl(rec.trigger or "")
        returns = {r.name: r for r in (decl.returns if decl else None) or []}
        for name, value in values.items():
            if not isinstance(name, str) or not VARIABLE_NAME.fullmatch(name):
                hint = " Sub-paths cannot be written: set the whole variable." if isinstance(name, str) and "." in name else ""
                return error(f"archmax_set_variables rejected: '{name}' is not a valid variable name.{hint}" + nothing)
            current = rec.variables.get(name)
            if current is not None and current.locked:
                shown = json.dumps(current.value, ensure_ascii=False, default=str)
                return error(f"archmax_set_variables rejected: '{name}' is locked (current value: {shown})." + nothing)
            if name == "title":
                if lock:
                    return error("archmax_set_variables rejected: 'title' cannot be locked." + nothing)
                problem = title_problem(value)
                if problem:
                    return error(f"archmax_set_variables rejected: title {problem}." + nothing)
            spec = returns.get(name)
            if spec is not None and spec.type and not check_value_type(value, spec.type, file_exists=self._file_exists):
                return error(
                    f"archmax_set_variables rejected: '{name}' must be of type '{spec.type}' "
                    f"(trigger '{rec.trigger}' returns)." + nothing
                )
        for name, value in values.items():
            if name == "title":
                rec.variables[name] = Variable(value=value.strip(), locked=False)
                self.rt.events.emit(rec, "title_set", title=value.strip())
            else:
                rec.variables[name] = Variable(value=value, locked=lock)
        names = list(values)
        self.rt.events.emit(rec, "variables_set", state=slug, names=names, locked=lock, call_id=call.id)
        return ok(f"Set {', '.join(names)}{' (locked)' if lock else ''}.")

    def _tool_archmax_get_variables(self, slug: str, call: ToolCall, args: dict[str, Any]) -> _Result:
        """§5.9: all variables, one by name, or a path inside one."""
        rec = self.rec
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
