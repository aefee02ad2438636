"""Any OpenAI-compatible chat-completions endpoint, through the ``openai`` package.

Rule source: DESIGN.md §5 (``openai:<model>``; ``ARCHMAX_API_BASE_URL``, ``ARCHMAX_API_KEY``,
``ARCHMAX_MODEL``); BEHAVIOUR.md §7 (runtime notes go as an ordinary tool call and result).
CONVENTIONS.md: provider errors stop here, mapped by one status table.

``openai`` is an optional extra (``archmax[openai]``), imported on first use.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from archmax.errors import (
    ModelAccessError,
    ModelConfigurationError,
    ModelError,
    ModelNotFoundError,
    ModelRequestError,
    ModelThrottledError,
)
from archmax.models.base import ModelRequest, ModelResponse, finished
from archmax.models.pricing import priced
from archmax.session.records import Message, ToolCall, Usage

# The one error table: HTTP status -> archmax error class (anything else is a plain ModelError).
STATUS_TABLE: dict[int, type[ModelError]] = {
    400: ModelRequestError,
    401: ModelAccessError,
    403: ModelAccessError,
    404: ModelNotFoundError,
    413: ModelRequestError,
    422: ModelRequestError,
    429: ModelThrottledError,
    503: ModelThrottledError,
}

# finish_reason -> the stop reasons the rest of archmax reads (Converse's vocabulary).
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}
UNPARSED_ARGS_KEY = "_unparsed_arguments"

_WIRE_ID = re.compile(r"[A-Za-z0-9]{9}")
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def wire_id(call_id: str) -> str:
    """The tool-call id sent for ``call_id``: 9 alphanumeric characters, which every provider accepts.

    That is the strictest rule among OpenAI-compatible servers (Mistral's chat template refuses any
    other id). An id already of that form is kept; any other (``note_<32 hex>``, ``call_1``, a
    provider's ``call_abc...``) maps to the first 9 base-62 digits of its SHA-256, so a call and the result
    answering it always map alike and the stored transcript keeps its own ids.
    """
    if _WIRE_ID.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode("utf-8")).digest()[:8], "big")
    digits = []
    for _ in range(9):
        number, digit = divmod(number, 62)
        digits.append(_BASE62[digit])
    return "".join(digits)


def to_chat(request: ModelRequest, model: str) -> dict[str, Any]:
    """Build the keyword arguments of ``chat.completions.create`` for one call.

    Args:
        request: The model call.
        model: The model name the endpoint knows.

    Returns:
        ``{model, messages, tools?}``: one system message (static prefix first, so providers'
        prefix caching applies, then the state block); user text; assistant text with
        ``tool_calls`` (``type: function``, arguments as a JSON string); tool messages answering
        by ``tool_call_id`` (ids as :func:`wire_id` maps them). Runtime notes are ordinary tool
        calls and results. Tools are sent on
        handoff calls too (§5.5: the runtime, not the provider, refuses those calls).
    """
    system = "\n\n".join(part for part in (request.system, request.state_block) if part.strip())
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    messages.extend(m for m in (_message(m) for m in request.messages) if m is not None)
    kwargs: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
    return kwargs


def _message(message: Message) -> dict[str, Any] | None:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": wire_id(message.tool_call_id or ""), "content": message.content}
    if message.role == "user":
        return {"role": "user", "content": message.content}
    if not message.content and not message.tool_calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": message.content or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": wire_id(c.id),
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.args, ensure_ascii=False)},
            }
            for c in message.tool_calls
        ]
    return out


def _args(raw: str | None) -> dict[str, Any]:
    # Malformed arguments are kept visible rather than dropped, so the tool's schema check refuses them.
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {UNPARSED_ARGS_KEY: raw}
    return value if isinstance(value, dict) else {UNPARSED_ARGS_KEY: raw}


def from_chat(completion: Any, model: str) -> ModelResponse:
    """Turn a chat completion (the openai package's object) into one assistant message.

    Args:
        completion: The ``ChatCompletion`` returned by ``chat.completions.create``.
        model: The model called (for the response and its price).

    Returns:
        Text, tool calls (id = the provider's call id), the stop reason in Converse's vocabulary
        (``stop`` -> ``end_turn``, ``tool_calls`` -> ``tool_use``, ``length`` -> ``max_tokens``), and
        usage where ``input_tokens`` excludes ``prompt_tokens_details.cached_tokens`` (reported as
        ``cache_read_tokens``).

    Raises:
        ModelError: when the completion holds no choice.
    """
    if not completion.choices:
        raise ModelError(f"openai model '{model}': the completion holds no choice")
    choice = completion.choices[0]
    msg = choice.message
    calls = [
        ToolCall(id=c.id, name=c.function.name, args=_args(c.function.arguments))
        for c in (msg.tool_calls or [])
        if getattr(c, "function", None) is not None
    ]
    usage = Usage()
    if completion.usage is not None:
        details = getattr(completion.usage, "prompt_tokens_details", None)
        cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
        usage = Usage(
            input_tokens=max(0, (completion.usage.prompt_tokens or 0) - cached),
            output_tokens=completion.usage.completion_tokens or 0,
            cache_read_tokens=cached,
        )
    return ModelResponse(
        text=msg.content or "",
        tool_calls=calls,
        usage=priced(model, usage),
        stop_reason=STOP_REASONS.get(choice.finish_reason, choice.finish_reason),
        model_id=model,
    )


def map_openai_error(exc: Exception, model: str) -> ModelError:
    """Translate an ``openai`` exception into the archmax error the status table names.

    Args:
        exc: An ``openai.APIStatusError`` (carries ``status_code``), ``APIConnectionError`` or other
            ``openai.OpenAIError``.
        model: For the message.

    Returns:
        The archmax error to ``raise ... from exc``.
    """
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        cls = STATUS_TABLE.get(status, ModelError)
        return cls(f"openai model '{model}': HTTP {status}: {_error_message(exc)}")
    return ModelError(f"openai model '{model}': {exc}")


def _error_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return getattr(exc, "message", None) or str(exc)


class OpenAIModel:
    """A model behind an OpenAI-compatible chat-completions endpoint (DESIGN.md §5).

    Args:
        model: The model name; None reads ``ARCHMAX_MODEL`` (an ``openai:`` scheme is stripped).
        base_url: The endpoint (``.../v1``); None reads ``ARCHMAX_API_BASE_URL``, else OpenAI's.
        api_key: None reads ``ARCHMAX_API_KEY``, then ``OPENAI_API_KEY``. A custom endpoint may go
            without one (local servers); OpenAI's own may not.
        timeout_s: Seconds per request; a state's ``timeout_s`` on the request lowers it.
        max_retries: The openai client's own retries (429 and 5xx, honouring ``Retry-After``).
        max_tokens: ``max_tokens`` sent with every request (``None``: not sent, the endpoint's default).
        client: An ``openai.OpenAI`` client to use instead of building one.
        env: Where the ``ARCHMAX_*`` settings are read (``os.environ`` by default).

    Raises:
        ModelConfigurationError: no model name, or no API key for OpenAI's own endpoint.

    Example:
        >>> model = OpenAIModel("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="x")
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60,
        max_retries: int = 2,
        max_tokens: int | None = 4096,
        client: Any = None,
        env: Mapping[str, str] = os.environ,
    ) -> None:
        name = model or env.get("ARCHMAX_MODEL", "").removeprefix("openai:")
        if not name or not name.strip():
            raise ModelConfigurationError("an OpenAI-compatible model needs a model name: ARCHMAX_MODEL=openai:<model>")
        self.model = name
        self.base_url = base_url or env.get("ARCHMAX_API_BASE_URL") or None
        key = api_key or env.get("ARCHMAX_API_KEY") or env.get("OPENAI_API_KEY")
        if not key and client is None:
            if not self.base_url:
                raise ModelConfigurationError(
                    "the OpenAI API needs a key: set ARCHMAX_API_KEY (or ARCHMAX_API_BASE_URL for "
                    "a compatible endpoint that needs none)"
                )
            key = "unused"  # local compatible servers ignore it, but the client requires one
        self._api_key = key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self._client = client

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client, created on first use.

        Raises:
            ModelConfigurationError: when the ``openai`` package is not installed.
        """
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise ModelConfigurationError(
                    "the OpenAI-compatible model needs the openai package: pip install 'archmax[openai]'"
                ) from exc
            self._client = openai.OpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
            )
        return self._client

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one call through ``chat.completions.create``.

        ``request.model`` (a per-state override, ``openai:`` prefix optional) replaces the default
        model for this call.

        Raises:
            ModelAccessError: HTTP 401/403.
            ModelNotFoundError: HTTP 404.
            ModelRequestError: HTTP 400/413/422.
            ModelThrottledError: HTTP 429/503 after the client's retries.
            ModelTruncatedError: ``finish_reason: length`` (the answer stopped at ``max_tokens``).
            ModelError: any other failure (5xx, connection, timeout).
        """
        client = self.client  # raises ModelConfigurationError when the package is missing
        import openai

        model = request.model.removeprefix("openai:") if request.model else self.model
        kwargs = to_chat(request, model)
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        timeout = self.timeout_s if request.timeout_s is None else min(self.timeout_s, request.timeout_s)
        try:
            completion = client.chat.completions.create(**kwargs, timeout=timeout)
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, model) from exc
        return finished(from_chat(completion, model), f"openai model '{model}'")
