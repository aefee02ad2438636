"""Model adapters and the one way to choose one from configuration.

Rule source: DESIGN.md §5: choosing a model is configuration (``ARCHMAX_MODEL=scripted:path.yaml``,
``bedrock:<model id>``, ``openai:<model>``), never a code change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from archmax.errors import ModelConfigurationError
from archmax.models.base import Model, ModelRequest, ModelResponse, ToolSpec
from archmax.models.bedrock import BedrockModel
from archmax.models.cassette import RecordingModel
from archmax.models.openai import OpenAIModel
from archmax.models.pricing import estimate_cost
from archmax.models.scripted import ScriptedModel

__all__ = [
    "MODEL_SCHEMES",
    "BedrockModel",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "OpenAIModel",
    "RecordingModel",
    "ScriptedModel",
    "ToolSpec",
    "estimate_cost",
    "is_model_spec",
    "model_from_config",
    "provider_settings",
]

MODEL_SCHEMES = ("scripted", "bedrock", "openai")

HOW_TO_CONFIGURE = (
    "set ARCHMAX_MODEL to one of: scripted:<responses.yaml> (offline, deterministic), "
    "bedrock:<model id> (Amazon Bedrock, e.g. bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0), "
    "openai:<model> (an OpenAI-compatible endpoint; with ARCHMAX_API_BASE_URL and ARCHMAX_API_KEY)"
)


def is_model_spec(value: str | None) -> bool:
    """Whether ``value`` names an adapter (``scripted:``, ``bedrock:``, ``openai:``) rather than a bare model id.

    A bare Bedrock id may itself hold a colon (``anthropic.claude-3-5-haiku-20241022-v1:0``), so
    "contains ':'" is not the test; the scheme before the first colon is.
    """
    if not value:
        return False
    scheme, sep, _ = value.strip().partition(":")
    return bool(sep) and scheme in MODEL_SCHEMES


def _setting(env: Mapping[str, str], name: str, kind: type[int] | type[float], *, minimum: float) -> Any:
    """``env[name]`` as a number ``>= minimum``, or None when unset or blank."""
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or value < minimum or value != value:  # NaN fails every comparison
        raise ModelConfigurationError(f"{name}={raw!r} must be a {kind.__name__} >= {minimum:g}")
    return value


def provider_settings(env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The provider adapters' tunables from the environment (template parameters set them on Lambda).

    ==============================  ==============================================================
    ``ARCHMAX_MODEL_TIMEOUT_S``     seconds per request (OpenAI default 60; Bedrock: read timeout,
                                    botocore's 60). A state's ``budget.timeoutMs`` still lowers it.
    ``ARCHMAX_MODEL_MAX_RETRIES``   retries after the first attempt (OpenAI default 2; Bedrock
                                    default 3, i.e. botocore's ``max_attempts`` 4)
    ``ARCHMAX_MODEL_MAX_TOKENS``    output-token limit per answer (default 4096; ``0`` sends none
                                    to an OpenAI-compatible endpoint). An answer that reaches it
                                    is a :class:`~archmax.errors.ModelTruncatedError`.
    ==============================  ==============================================================

    Returns:
        ``{timeout_s?, max_retries?, max_tokens?}``: only the settings that are set.

    Raises:
        ModelConfigurationError: a value that is not a number in range.
    """
    found = {
        "timeout_s": _setting(env, "ARCHMAX_MODEL_TIMEOUT_S", float, minimum=0.001),
        "max_retries": _setting(env, "ARCHMAX_MODEL_MAX_RETRIES", int, minimum=0),
        "max_tokens": _setting(env, "ARCHMAX_MODEL_MAX_TOKENS", int, minimum=0),
    }
    return {key: value for key, value in found.items() if value is not None}


def model_from_config(
    spec: str | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    base_dir: str | os.PathLike[str] | None = None,
    replay_per_session: bool = False,
) -> Model:
    """Build the model a configuration string names.

    Args:
        spec: ``scripted:<file>``, ``bedrock:<model id>`` or ``openai:<model>``; None reads
            ``ARCHMAX_MODEL`` from ``env``.
        env: Where settings are read (``ARCHMAX_MODEL``, ``ARCHMAX_API_BASE_URL``,
            ``ARCHMAX_API_KEY``, ``ARCHMAX_BEDROCK_REGION`` and :func:`provider_settings`).
        base_dir: The directory a relative ``scripted:`` path is read from (default: the working
            directory).
        replay_per_session: Read a ``scripted:`` file per session (the n-th model call of a
            session gets entry n, :class:`~archmax.models.transcript_script.TranscriptScriptedModel`), as every
            host does whose sessions span processes (the CLI, ``archmax serve``, Lambda); else one
            cursor for the process.

    Returns:
        A :class:`~archmax.models.base.Model`. Provider clients are created on first call, so
        building one never touches the network.

    Raises:
        ModelConfigurationError: nothing configured, an unknown scheme, an empty value, a missing
            script file, or missing provider settings; the message says how to configure one.
        ModelScriptError: a ``scripted:`` file holding an invalid script.

    Example:
        >>> model_from_config("scripted:examples/responses.yaml")  # doctest: +SKIP
    """
    value = spec if spec is not None else env.get("ARCHMAX_MODEL")
    if value is None or not value.strip():
        raise ModelConfigurationError(f"no model is configured: {HOW_TO_CONFIGURE}")
    scheme, sep, rest = value.strip().partition(":")
    rest = rest.strip()
    if not sep or scheme not in MODEL_SCHEMES:
        raise ModelConfigurationError(f"model '{value}' is not a model configuration: {HOW_TO_CONFIGURE}")
    if not rest:
        raise ModelConfigurationError(f"model '{value}' names nothing after '{scheme}:': {HOW_TO_CONFIGURE}")
    if scheme == "scripted":
        path = Path(rest)
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        if replay_per_session:
            from archmax.models.transcript_script import TranscriptScriptedModel

            return TranscriptScriptedModel.from_file(path)
        return ScriptedModel.from_file(path)
    tunables = provider_settings(env)
    if scheme == "bedrock":
        extra: dict[str, Any] = {}
        if "max_retries" in tunables:
            extra["max_attempts"] = tunables["max_retries"] + 1
        if "timeout_s" in tunables:
            extra["timeout_s"] = tunables["timeout_s"]
        if tunables.get("max_tokens"):
            extra["max_tokens"] = tunables["max_tokens"]
        return BedrockModel(rest, region=env.get("ARCHMAX_BEDROCK_REGION") or None, **extra)
    if "max_tokens" in tunables:
        tunables["max_tokens"] = tunables["max_tokens"] or None  # 0: let the endpoint decide
    return OpenAIModel(rest, env=env, **tunables)
