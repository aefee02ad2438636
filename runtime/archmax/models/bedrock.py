"""Amazon Bedrock through the Converse API (boto3 ``bedrock-runtime``).

Rule source: DESIGN.md §5 (``bedrock:<model id>``, the default inside Lambda); BEHAVIOUR.md §7
(runtime notes reach the provider as an ordinary tool call and its result) and §5.5 (a handoff
call still offers the tools). CONVENTIONS.md: botocore errors stop here, mapped by one table.

boto3 is imported lazily, so importing this module costs nothing where Bedrock is not used.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
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

# Model-id prefixes (after any cross-region prefix) whose Converse API accepts `cachePoint`.
CACHE_POINT_MODEL_PREFIXES = (
    "anthropic.claude-3-5-",
    "anthropic.claude-3-7-",
    "anthropic.claude-sonnet-4",
    "anthropic.claude-opus-4",
    "anthropic.claude-haiku-4",
    "amazon.nova-",
)
CROSS_REGION_PREFIXES = ("us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.")

# Converse refuses a conversation that does not open with a user turn, and blank text blocks.
OPENING_TEXT = "(The session continues.)"
EMPTY_RESULT_TEXT = "(no output)"

# The one error table: Bedrock error code -> archmax error class.
ERROR_TABLE: dict[str, type[ModelError]] = {
    "AccessDeniedException": ModelAccessError,
    "UnrecognizedClientException": ModelAccessError,
    "ExpiredTokenException": ModelAccessError,
    "ResourceNotFoundException": ModelNotFoundError,
    "ValidationException": ModelRequestError,
    "ThrottlingException": ModelThrottledError,
    "ServiceUnavailableException": ModelThrottledError,
    "ServiceQuotaExceededException": ModelThrottledError,
    "ModelNotReadyException": ModelThrottledError,
}
RETRYABLE_CODES = frozenset({"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException"})


def supports_cache_point(model_id: str) -> bool:
    """Whether Converse accepts a ``cachePoint`` block for this model.

    Args:
        model_id: A Bedrock model id or cross-region inference profile id
            (``us.anthropic.claude-sonnet-4-20250514-v1:0``).

    Returns:
        True for the prompt-caching families in :data:`CACHE_POINT_MODEL_PREFIXES`.
    """
    base = model_id
    for prefix in CROSS_REGION_PREFIXES:
        if base.startswith(prefix):
            base = base[len(prefix) :]
            break
    return base.startswith(CACHE_POINT_MODEL_PREFIXES)


def to_converse(request: ModelRequest, model_id: str, *, max_tokens: int) -> dict[str, Any]:
    """Build the keyword arguments of ``bedrock-runtime.converse`` for one call.

    Args:
        request: The model call.
        model_id: The Bedrock model id to call.
        max_tokens: ``inferenceConfig.maxTokens``.

    Returns:
        ``{modelId, messages, system, inferenceConfig, toolConfig?}`` shaped as the Converse API
        documents: system = static prefix, a ``cachePoint`` (caching models only), then the state
        block; user text; assistant text + ``toolUse``; tool messages as a user turn of
        ``toolResult`` blocks (``blocked`` -> ``error``); consecutive same-role turns merged, since
        Converse requires alternation. Runtime notes go as ordinary ``toolUse``/``toolResult``.
        Tools are sent on handoff calls too: Bedrock refuses a tool history without a tool config.
    """
    system: list[dict[str, Any]] = []
    if request.system.strip():
        system.append({"text": request.system})
        if supports_cache_point(model_id):
            system.append({"cachePoint": {"type": "default"}})
    if request.state_block.strip():
        system.append({"text": request.state_block})
    kwargs: dict[str, Any] = {
        "modelId": model_id,
        "messages": _messages(request.messages),
        "system": system,
        "inferenceConfig": {"maxTokens": max_tokens},
    }
    if request.tools:
        kwargs["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description or t.name,
                        "inputSchema": {"json": t.parameters},
                    }
                }
                for t in request.tools
            ]
        }
    return kwargs


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        status = "success" if message.status in (None, "success") else "error"
        result = {
            "toolUseId": message.tool_call_id or "",
            "content": [{"text": message.content or EMPTY_RESULT_TEXT}],
            "status": status,
        }
        return "user", [{"toolResult": result}]
    blocks: list[dict[str, Any]] = []
    if message.content.strip():
        blocks.append({"text": message.content})
    if message.role == "assistant":
        blocks.extend({"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.args}} for c in message.tool_calls)
    return message.role, blocks


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"text": OPENING_TEXT}]})
    return turns


def from_converse(response: dict[str, Any], model_id: str) -> ModelResponse:
    """Turn a Converse response into one assistant message.

    Args:
        response: The ``converse`` result (``output.message.content``, ``stopReason``, ``usage``).
        model_id: The model called (for the response and its price).

    Returns:
        Text blocks joined, ``toolUse`` blocks as ToolCalls (id = ``toolUseId``), the stop reason,
        and usage with ``cacheReadInputTokens``/``cacheWriteInputTokens`` and an estimated cost.
    """
    content = response.get("output", {}).get("message", {}).get("content", [])
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if "text" in block:
            texts.append(block["text"])
        elif "toolUse" in block:
            use = block["toolUse"]
            args = use.get("input")
            calls.append(ToolCall(id=use["toolUseId"], name=use["name"], args=args if isinstance(args, dict) else {}))
    raw = response.get("usage", {})
    usage = Usage(
        input_tokens=raw.get("inputTokens", 0),
        output_tokens=raw.get("outputTokens", 0),
        cache_read_tokens=raw.get("cacheReadInputTokens", 0),
        cache_creation_tokens=raw.get("cacheWriteInputTokens", 0),
    )
    return ModelResponse(
        text="".join(texts),
        tool_calls=calls,
        usage=priced(model_id, usage),
        stop_reason=response.get("stopReason"),
        model_id=model_id,
    )


def map_client_error(exc: Exception, model_id: str) -> ModelError:
    """Translate a botocore error into the archmax error the table names.

    Args:
        exc: A ``botocore.exceptions.ClientError`` or ``BotoCoreError``.
        model_id: For the message.

    Returns:
        The archmax error to ``raise ... from exc`` (ModelError for codes the table lacks).
    """
    from botocore.exceptions import ClientError, NoCredentialsError

    if isinstance(exc, NoCredentialsError):
        return ModelAccessError(f"bedrock model '{model_id}': no AWS credentials found")
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        code = err.get("Code", "")
        cls = ERROR_TABLE.get(code, ModelError)
        return cls(f"bedrock model '{model_id}': {code}: {err.get('Message', '')}".rstrip(": "))
    return ModelError(f"bedrock model '{model_id}': {exc}")


class BedrockModel:
    """A model served by Amazon Bedrock's Converse API (DESIGN.md §5).

    Args:
        model_id: A Bedrock model id or inference profile id.
        client: A ``bedrock-runtime`` client; by default one is created on first use with
            botocore's ``standard`` retry mode.
        max_tokens: ``inferenceConfig.maxTokens`` per call.
        region: The AWS region for the default client (else the usual AWS configuration).
        max_attempts: botocore's attempts per call for the default client.
        timeout_s: The default client's read timeout in seconds (``None``: botocore's 60 s).
        throttle_retries: Extra attempts after a throttling error has survived botocore's own
            retries. Bedrock throttles per minute of tokens, which botocore's short jittered
            backoff rarely outlasts; these waits are longer (``throttle_backoff_s * 2**k``).
        throttle_backoff_s: The first extra wait, in seconds.
        sleep: Injected for tests (``time.sleep`` by default).

    Example:
        >>> model = BedrockModel("us.anthropic.claude-sonnet-4-20250514-v1:0", region="us-east-1")
    """

    def __init__(
        self,
        model_id: str,
        *,
        client: Any = None,
        max_tokens: int = 4096,
        region: str | None = None,
        max_attempts: int = 4,
        timeout_s: float | None = None,
        throttle_retries: int = 2,
        throttle_backoff_s: float = 4.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model_id or not model_id.strip():
            raise ModelConfigurationError("a Bedrock model needs a model id: bedrock:<model id>")
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.region = region
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self.throttle_retries = throttle_retries
        self.throttle_backoff_s = throttle_backoff_s
        self._client = client
        self._sleep = sleep

    @property
    def client(self) -> Any:
        """The ``bedrock-runtime`` client, created on first use.

        Raises:
            ModelConfigurationError: when boto3 is not installed (the ``aws`` extra).
        """
        if self._client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:  # pragma: no cover - boto3 ships with the aws extra
                raise ModelConfigurationError("the Bedrock model needs boto3: pip install 'archmax[aws]'") from exc
            timeouts: dict[str, Any] = {"read_timeout": self.timeout_s} if self.timeout_s is not None else {}
            config = Config(retries={"mode": "standard", "max_attempts": self.max_attempts}, **timeouts)
            self._client = boto3.client("bedrock-runtime", region_name=self.region, config=config)
        return self._client

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one call through ``converse``.

        ``request.model`` (a per-state override, ``bedrock:`` prefix optional) replaces the
        default model id for this call.

        Raises:
            ModelAccessError: AccessDeniedException, bad or missing credentials.
            ModelNotFoundError: ResourceNotFoundException.
            ModelRequestError: ValidationException.
            ModelThrottledError: throttling or unavailability that outlasted every retry.
            ModelTruncatedError: the answer stopped at ``max_tokens`` (or the context window).
            ModelError: any other provider failure.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        model_id = self.model_id
        if request.model:
            model_id = request.model.removeprefix("bedrock:")
        kwargs = to_converse(request, model_id, max_tokens=self.max_tokens)
        for attempt in range(self.throttle_retries + 1):
            try:
                response = self.client.converse(**kwargs)
                break
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in RETRYABLE_CODES and attempt < self.throttle_retries:
                    self._sleep(self.throttle_backoff_s * 2**attempt * (0.5 + random.random() / 2))
                    continue
                raise map_client_error(exc, model_id) from exc
            except BotoCoreError as exc:
                raise map_client_error(exc, model_id) from exc
        return finished(from_converse(response, model_id), f"bedrock model '{model_id}'")
