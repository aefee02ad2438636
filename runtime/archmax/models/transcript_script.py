"""A scripted model that survives process boundaries: the CLI's reading of ``scripted:<file>``.

Every ``archmax`` command is a fresh process, so a plain :class:`~archmax.models.scripted.ScriptedModel`
would start again at its first entry each time. In the CLI a script is therefore read per
session: the answer to a session's n-th model call is entry n, where n counts the model answers
already in the session's transcript (assistant messages that are not runtime notes). A session
started by ``archmax run`` and woken by five ``archmax sweep`` processes walks one script from top
to bottom, and two sessions each walk their own copy.

Rule source: BEHAVIOUR.md §10.4 (entry format, ``expect_state``, exhaustion messages, ``call_<n>``
ids) and DESIGN.md §5 (``ARCHMAX_MODEL=scripted:path.yaml``).

Limitation: a handoff call whose answer is empty (no text, no tool calls) leaves nothing in the
transcript, so the next call would be answered by the same entry again. Scripts for the CLI
should give handoff answers some text.
"""

from __future__ import annotations

import json
from os import PathLike

from archmax.errors import ModelScriptError
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.session.records import Message, ToolCall, Usage


def _is_answer(message: Message) -> bool:
    return message.role == "assistant" and not message.archmax


class TranscriptScriptedModel:
    """Answer each session's n-th model call with entry n of one script (see module docstring).

    Args:
        script: A :class:`ScriptedModel` whose validated entries are read (its own cursor is unused).

    Example:
        >>> model = TranscriptScriptedModel.from_file("examples/workflows/bank-check/model.yaml")  # doctest: +SKIP
    """

    def __init__(self, script: ScriptedModel) -> None:
        self.entries = script.entries
        self.name = script.name

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> TranscriptScriptedModel:
        """Load a script file (a YAML list of entries, or ``{responses: [...]}``).

        Raises:
            ModelConfigurationError: the file cannot be read.
            ModelScriptError: the file holds an invalid script.
        """
        return cls(ScriptedModel.from_file(path))

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer with the entry after the answers already in ``request.messages``.

        Returns:
            One assistant message; tool-call ids are ``call_<n>``, n continuing the session's own
            count of (non-note) tool calls so ids never repeat within a session.

        Raises:
            ModelScriptError: ``model script exhausted after <n> responses (state '<s>')`` when the
                session has used every entry; ``model response <i> expected state '<a>' but the
                session is in '<b>'`` on a mismatch (i is 1-based).
        """
        answers = [m for m in request.messages if _is_answer(m)]
        index = len(answers)
        if index >= len(self.entries):
            raise ModelScriptError(
                f"model script exhausted after {len(self.entries)} responses (state '{request.state}')",
                session_id=request.session_id,
            )
        entry = self.entries[index]
        if entry.expect_state is not None and entry.expect_state != request.state:
            raise ModelScriptError(
                f"model response {index + 1} expected state '{entry.expect_state}' "
                f"but the session is in '{request.state}'",
                session_id=request.session_id,
            )
        next_id = 1 + sum(len(m.tool_calls) for m in answers)
        calls = [ToolCall(id=f"call_{next_id + i}", name=tool, args=args) for i, (tool, args) in enumerate(entry.calls)]
        text = entry.say or ""
        out_words = len(text.split()) + sum(1 + len(json.dumps(c.args).split()) for c in calls)
        in_words = sum(len(m.content.split()) for m in request.messages) + len(request.system.split())
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=Usage(input_tokens=max(1, in_words), output_tokens=max(1, out_words)),
            stop_reason="tool_use" if calls else "end_turn",
            model_id=self.name,
        )
