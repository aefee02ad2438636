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
from archmax.engine.control_tools import CONTROL_TOOLS, _Result, blocked, error, ok
from archmax.engine.hooks import HookRunner
from archmax.engine.placement import session_file_exists
from archmax.engine.prompt import shows_reset_instruction, state_block, static_prompt
from archmax.engine.runtime import Runtime
from archmax.engine.tools import CONTROL_TOOL_SPECS
from archmax.engine.work import Work
from archmax.errors import TURN_FAILING_MODEL_ERRORS
from archmax.models.base import ModelRequest, ModelResponse, ToolSpec
from archmax.session.notes import NOTE_TOOL, error_note_text, make_note
from archmax.session.records import (
    PARKED_STATUSES,
    Checkpoint,
    Message,
    PendingDecision,
    SessionStatus,
    ToolCall,
    TransitionRef,
)
from archmax.session.until import deadline
from archmax.session.variables import UnresolvedReferenceError, substitute_references
from archmax.spec import check_value_type
from archmax.spec.governance import SUBWORKFLOW_PREFIX, is_subworkflow_tool

PARKED_MOVES = ("archmax_wait", "archmax_advance", "archmax_reset")


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


_GO = object()
"""A loop step's answer: loop again."""
_STOP = object()
"""A loop step's answer: the turn is over (finished or suspended)."""


class TurnLoop:
    """Drives one session's open turn until it finishes or suspends; commits along the way."""

    def __init__(self, rt: Runtime, work: Work) -> None:
        self.rt = rt
        self.work = work
        self.wf = rt.workflow
        self.handoff_directive: str | None = None
        self.hooks = HookRunner(self)
        self._side_effects = False
        self.after_batch: list[Message] = []
        """Messages a tool call adds for after its message's results (a child's park message, §5.10)."""

    @property
    def rec(self) -> Checkpoint:
        """The record being built for this session (``work.record``); the loop mutates it in place."""
        return self.work.record

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        """Run until finished or suspended. The final commit lets the lease go."""
        while True:
            step = self._settle()
            if step is None:
                step = self._next_call()
            if step is _STOP:
                return

    def _settle(self) -> object | None:
        """What the record owes before another model call: ``_GO`` (loop again), ``_STOP``, or ``None``."""
        rec = self.rec
        if rec.pending_failure is not None:
            return _GO if self._route_failure() else _STOP
        if rec.delegation is not None and rec.status == SessionStatus.RUNNING:
            subworkflows.settle(self)  # a forwarded resume or a recovery: bring the child's news (§5.10)
            self.work.commit()
            return _GO
        if self._is_parked():
            if rec.park_phase == "closing":
                # The park is on record before its handoff call: if the lease runs out during
                # that call, the session counts as parked without a message (§3.1).
                self.work.commit()
                self._handoff_call(self.handoff_directive or "wait")
            rec.park_phase = "suspend"
            self.handoff_directive = None
            self.work.release()
            return _STOP
        if rec.status != SessionStatus.RUNNING:
            self.work.release()
            return _STOP
        if final_answer_committed(rec.messages):
            # The turn's last answer is in: completion is owed, never another model call. The loop
            # comes here right after the answer, and so does a takeover (§3.12) of a process that
            # died after a commit holding it: one path for both.
            if rec.pending_rejection is not None:  # a failed sub-workflow call routes now (§5.7, §5.8)
                rec.pending_failure, rec.pending_rejection = rec.pending_rejection.reason, None
                return _GO
            if self.hooks.at_completion():  # a terminal state's after hooks may send it back (§5.8)
                return _GO
            self._complete()
            return _STOP
        return None

    def _next_call(self) -> object:
        """One model call in the current state and its tool calls; ``_GO`` (the loop goes on)."""
        rec = self.rec
        state = self.wf.states[rec.current_state]
        if state.type == "human":
            self.park_decision(directive=self.handoff_directive or "introduce")
            return _GO
        if self.hooks.before_visit():  # a visit's first call runs its before hooks (§2.4)
            return _GO
        max_turns = state.budget.max_turns if state.budget else None
        if max_turns and rec.state_turns + 1 > max_turns:
            rec.pending_failure = f"state '{state.slug}' exhausted its turn budget (maxTurns: {max_turns})"
            return _GO
        response = self._call_model(handoff=None)
        if response is None:
            return _GO  # timed out: pending_failure is set
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
            return _GO  # the final answer: completion is the next step (above), in the turn's last commit
        self._side_effects = False
        self._dispatch_batch(state.slug, calls)
        if self._side_effects:
            self.work.commit()  # a host tool or a child ran: its result is on record before anything else
        else:
            self.work.step()  # control tools only change the record
        return _GO

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
        slug = rec.current_state
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
                        rec.pending_failure = (
                            f"state '{slug}' model call exceeded its time budget (timeoutMs: {timeout_ms})"
                        )
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
            self._append_result(
                call, blocked(f"{call.name} rejected: the session is parked; this call only writes a message")
            )

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
        state = self.wf.states[rec.current_state]
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
            timeout=state.timeout,
            timeout_at=deadline(state.timeout, self.rt.clock.now()) if state.timeout else None,
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
        source = rec.current_state
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
            Message(role="tool", content=result.text, tool_call_id=call.id, name=call.name, status=result.status)  # type: ignore[arg-type]  # ok/error/blocked
        )

    def _dispatch_batch(self, slug: str, calls: list[ToolCall]) -> None:
        """Run one message's tool calls in order (§5)."""
        self._advanced_to: str | None = None
        self._batch_size = len(calls)
        self.after_batch = []
        for call in calls:
            self._append_result(call, self._dispatch(slug, call))
        # Every call is answered right after its message; what a call adds for the reader comes after.
        self.rec.messages.extend(self.after_batch)
        self.after_batch = []

    def side_effect(self) -> None:
        """Something outside the record happened in this batch (a hook's verdict): commit it with the batch (§9.3)."""
        self._side_effects = True

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
        handler = CONTROL_TOOLS.get(name) if name in CONTROL_TOOL_SPECS else None
        if handler is not None:
            return handler(self, slug, call, args)
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
