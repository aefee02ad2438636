"""The ``Model`` protocol: messages + tools + system prompt in, one assistant message out.

Rule source: DESIGN.md §5. Adapters: ``scripted`` (offline, deterministic), ``bedrock``
(Converse), ``openai`` (any OpenAI-compatible endpoint). Runtime notes (§7) reach a provider
as an ordinary tool call and result.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from archmax.errors import ModelTruncatedError
from archmax.session.records import Message, ToolCall, Usage

TRUNCATED_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded"})
"""Stop reasons (Converse's vocabulary) meaning the provider cut the answer off."""


class ToolSpec(BaseModel):
    """A tool offered to the model."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """A JSON Schema object describing the arguments."""


class ModelRequest(BaseModel):
    """One model call."""

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    system: str
    """The static system prompt (cacheable prefix)."""
    state_block: str = ""
    """The per-call state block, appended after the static prefix."""
    messages: list[Message]
    """The transcript so far, notes included."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Tools offered. On a handoff call they are still sent, and every call is refused."""
    state: str
    """The session's position when the call is made."""
    session_id: str
    handoff: bool = False
    """A handoff / reply-only call: its tool calls will all be ``blocked``."""
    model: str | None = None
    """A per-state model override (``model:`` in the workflow), or None for the default."""
    timeout_s: float | None = None
    """The state's ``timeoutMs`` budget in seconds, if any."""


class ModelResponse(BaseModel):
    """One assistant message."""

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    stop_reason: str | None = None
    """Provider stop reason (``end_turn``, ``tool_use``, ``max_tokens``, ...)."""
    model_id: str | None = None


@runtime_checkable
class Model(Protocol):
    """A model adapter."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one call.

        Raises:
            ModelError: or one of its subclasses, for provider failures.
        """


def finished(response: ModelResponse, provider: str) -> ModelResponse:
    """``response``, unless the provider cut it off (:data:`TRUNCATED_STOP_REASONS`).

    A truncated answer is half a sentence or half a tool call: taking it as the agent's final
    answer would finish a session on it, so it is a model failure, routed like any other.

    Raises:
        ModelTruncatedError: the stop reason says the answer was cut off.
    """
    if response.stop_reason in TRUNCATED_STOP_REASONS:
        raise ModelTruncatedError(
            f"{provider}: the answer was cut off ({response.stop_reason}) after "
            f"{response.usage.output_tokens if response.usage else '?'} output tokens; "
            "raise the limit (ARCHMAX_MODEL_MAX_TOKENS, template parameter ModelMaxTokens)"
        )
    return response
