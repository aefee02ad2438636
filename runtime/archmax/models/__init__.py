"""Model adapters and the one way to choose one from configuration.

Rule source: DESIGN.md §5: choosing a model is configuration (``ARCHMAX_MODEL=scripted:path.yaml``,
``bedrock:<model id>``, ``openai:<model>``), never a code change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

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


def model_from_config(
    spec: str | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    base_dir: str | os.PathLike[str] | None = None,
) -> Model:
    """Build the model a configuration string names.

    Args:
        spec: ``scripted:<file>``, ``bedrock:<model id>`` or ``openai:<model>``; None reads
            ``ARCHMAX_MODEL`` from ``env``.
        env: Where settings are read (``ARCHMAX_MODEL``, ``ARCHMAX_API_BASE_URL``,
            ``ARCHMAX_API_KEY``, ``ARCHMAX_BEDROCK_REGION``).
        base_dir: The directory a relative ``scripted:`` path is read from (default: the working
            directory).

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
        return ScriptedModel.from_file(path)
    if scheme == "bedrock":
        return BedrockModel(rest, region=env.get("ARCHMAX_BEDROCK_REGION") or None)
    return OpenAIModel(rest, env=env)
