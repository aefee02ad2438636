"""The ``Model`` protocol: messages + tools + system prompt in, one assistant message out.

Rule source: DESIGN.md §5. Adapters: ``scripted`` (offline, deterministic), ``bedrock``
(Converse), ``openai`` (any OpenAI-compatible endpoint). Runtime notes (§7) reach a provider
as an ordinary tool call and result.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from archmax.session.records import Message, ToolCall, Usage


class ToolSpec(BaseModel):
    """A tool offered to the model."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """A JSON Schema object describing the arguments."""


class ModelRequest(BaseModel):
    """One model call."""

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
