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

import re

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
                tool_calls=[
                    ToolCall(id=f"call_{n}", name="archmax_wait", args={"reason": "a timer", "until": "5m"})
                ]
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
