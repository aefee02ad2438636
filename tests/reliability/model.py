"""A deterministic model for random schedules: its answer is a pure function of the transcript.

A scripted model consumes answers in order, which a random schedule cannot predict; this one reads
the latest *instruction* (a user message, an ``[event]`` or ``[decision]`` note) and does what its
``act:<word>`` says, once:

* ``done`` — a final answer (the turn completes);
* ``wait`` — a message with ``archmax_wait`` (input park); ``until`` — the same with ``until: 5m``;
* ``human`` — ``archmax_advance`` to the human state ``review`` (decision park);
* ``tool`` — a host-tool call (``lookup``), then a final answer;
* no ``act`` (a timer's event note): ``wait`` again, without ``until``.

When the model already answered the latest instruction (its tool results came back), it gives a
final answer. Handoff calls get a short park message. Because nothing but the transcript decides
the answer, a turn recovered after a crash asks for exactly what the dead process would have.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from archmax.models.base import ModelRequest, ModelResponse
from archmax.session.notes import runtime_note_kind
from archmax.session.records import Message, ToolCall

ACT = re.compile(r"\bact:([a-z]+)\b")
INSTRUCTION_NOTES = ("event", "decision")
FINAL = "Finished what was asked."


def is_instruction(message: Message) -> bool:
    """A user message, or the result half of an ``[event]`` / ``[decision]`` note."""
    if message.role == "user":
        return True
    return message.role == "tool" and runtime_note_kind(message) in INSTRUCTION_NOTES


def is_model_answer(message: Message) -> bool:
    """An assistant message the model wrote in a normal (not handoff) call."""
    return message.role == "assistant" and runtime_note_kind(message) is None and not message.handoff


class ReactiveModel:
    """See the module docstring. Counts its calls (``calls``) for the soak summary."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if request.handoff:
            return ModelResponse(text="I will wait here until I hear back.")
        messages = request.messages
        last = max((i for i, m in enumerate(messages) if is_instruction(m)), default=-1)
        answered = [m for m in messages[last + 1 :] if is_model_answer(m)]
        if answered:
            return ModelResponse(text=FINAL)
        match = ACT.search(messages[last].content) if last >= 0 else None
        act = match.group(1) if match else "wait"
        n = sum(1 for m in messages if is_model_answer(m))
        if act == "wait":
            return ModelResponse(
                text="Waiting for the next event.",
                tool_calls=[ToolCall(id=f"call_{n}", name="archmax_wait", args={"reason": "the next event"})],
            )
        if act == "until":
            return ModelResponse(
                tool_calls=[ToolCall(id=f"call_{n}", name="archmax_wait", args={"reason": "a timer", "until": "5m"})]
            )
        if act == "human":
            return ModelResponse(
                tool_calls=[
                    ToolCall(id=f"call_{n}", name="archmax_advance", args={"to": "review", "reason": "check it"})
                ]
            )
        if act == "tool":
            return ModelResponse(tool_calls=[ToolCall(id=f"call_{n}", name="lookup", args={"ref": f"r{n}"})])
        return ModelResponse(text=FINAL)


# --------------------------------------------------------------------------- caller and child (issue 22)

SUB_ACTS = {
    "subdone": "done",
    "subwait": "wait",
    "subuntil": "until",
    "subhuman": "human",
    "subtool": "tool",
    "sublong": "long",
}
"""A caller's act that calls the child ``sub`` (``archmax_workflow_sub``), and what the child then does."""
LONG_STEPS = 5
"""Model calls of a ``long`` child turn before its answer (each sets a variable)."""
LONG_CALL_S = 25
"""Seconds each model call of a ``long`` child turn takes on the injected clock."""
SWEEP_AT = 4
"""The ``long`` child's model call during which :attr:`PairReactiveModel.mid_child` runs (a sweep)."""


class PairReactiveModel(ReactiveModel):
    """The reactive model for a caller and its child ``sub`` (``<caller>~work:sub:<n>``).

    * caller, act ``sub<x>``: calls ``archmax_workflow_sub {plan: "act:<x>"}``; the child's opening
      message names the plan, so the child does ``<x>`` as any session would;
    * child, act ``long``: :data:`LONG_STEPS` calls of ``archmax_set_variables``, each taking
      :data:`LONG_CALL_S` seconds of the injected clock, then the final answer; at call
      :data:`SWEEP_AT` it runs ``mid_child`` once (another process sweeping meanwhile);
    * everything else as :class:`ReactiveModel`.

    Every request is checked for tool-call order in every adapter's shape as it is made; problems are
    kept in ``problems`` as ``(session_id, text)`` for the schedule's check.
    """

    def __init__(self, clock: Any) -> None:
        super().__init__()
        self.clock = clock
        self.mid_child: Callable[[], Any] | None = None
        self.problems: list[tuple[str, str]] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        from .invariants import request_order_problems

        self.problems.extend((request.session_id, p) for p in request_order_problems(request))
        if request.handoff:
            return super().complete(request)
        messages = request.messages
        last = max((i for i, m in enumerate(messages) if is_instruction(m)), default=-1)
        match = ACT.search(messages[last].content) if last >= 0 else None
        act = match.group(1) if match else None
        answered = [m for m in messages[last + 1 :] if is_model_answer(m)]
        n = sum(1 for m in messages if is_model_answer(m))
        child = "~" in request.session_id
        if not child and act in SUB_ACTS and not answered:
            self.calls += 1
            plan = {"plan": f"act:{SUB_ACTS[act]}"}
            return ModelResponse(tool_calls=[ToolCall(id=f"call_{n}", name="archmax_workflow_sub", args=plan)])
        if child and act == "long" and len(answered) < LONG_STEPS:
            self.calls += 1
            self.clock.advance(timedelta(seconds=LONG_CALL_S))
            if len(answered) + 1 == SWEEP_AT and self.mid_child is not None:
                meanwhile, self.mid_child = self.mid_child, None
                contextvars.Context().run(meanwhile)  # another process: not inside this turn's context
            step = {"variables": {"step": len(answered) + 1}}
            return ModelResponse(tool_calls=[ToolCall(id=f"call_{n}", name="archmax_set_variables", args=step)])
        return super().complete(request)
