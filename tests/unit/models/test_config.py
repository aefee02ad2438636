"""model_from_config: choosing a model is configuration (DESIGN.md §5)."""

from __future__ import annotations

import pytest

from archmax.errors import ModelConfigurationError, ModelScriptError
from archmax.models import BedrockModel, OpenAIModel, ScriptedModel, model_from_config


def test_scripted_spec_loads_the_file(tmp_path, request_in):
    script = tmp_path / "responses.yaml"
    script.write_text("- say: hello from the script\n", encoding="utf-8")

    model = model_from_config(f"scripted:{script}", env={})

    assert isinstance(model, ScriptedModel)
    assert model.complete(request_in()).text == "hello from the script"


def test_relative_scripted_path_is_read_from_the_base_dir(tmp_path):
    (tmp_path / "r.yaml").write_text("- say: hi\n", encoding="utf-8")

    assert model_from_config("scripted:r.yaml", env={}, base_dir=tmp_path).remaining == 1


def test_none_reads_archmax_model_from_the_environment(tmp_path):
    (tmp_path / "r.yaml").write_text("- say: hi\n- say: bye\n", encoding="utf-8")

    model = model_from_config(env={"ARCHMAX_MODEL": f"scripted:{tmp_path / 'r.yaml'}"})

    assert isinstance(model, ScriptedModel) and model.remaining == 2


def test_bedrock_spec_keeps_the_whole_model_id_colons_included():
    model = model_from_config("bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0", env={})

    assert isinstance(model, BedrockModel)
    assert model.model_id == "us.anthropic.claude-sonnet-4-20250514-v1:0"


def test_bedrock_region_comes_from_the_environment():
    model = model_from_config("bedrock:amazon.nova-lite-v1:0", env={"ARCHMAX_BEDROCK_REGION": "eu-west-1"})

    assert model.region == "eu-west-1"


def test_openai_spec_reads_endpoint_and_key_from_the_environment():
    env = {"ARCHMAX_API_BASE_URL": "http://127.0.0.1:9/v1", "ARCHMAX_API_KEY": "k"}

    model = model_from_config("openai:llama-3.1-8b", env=env)

    assert isinstance(model, OpenAIModel)
    assert (model.model, model.base_url) == ("llama-3.1-8b", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize("env", [{}, {"ARCHMAX_MODEL": ""}, {"ARCHMAX_MODEL": "   "}])
def test_nothing_configured_says_how_to_configure_a_model(env):
    with pytest.raises(ModelConfigurationError) as info:
        model_from_config(env=env)

    message = str(info.value)
    assert "ARCHMAX_MODEL" in message
    assert "scripted:" in message and "bedrock:" in message and "openai:" in message


@pytest.mark.parametrize("spec", ["gpt-4o", "anthropic:claude", "scripted:", "bedrock:  "])
def test_unknown_scheme_or_empty_value_is_a_configuration_error(spec):
    with pytest.raises(ModelConfigurationError, match="ARCHMAX_MODEL"):
        model_from_config(spec, env={})


def test_scripted_file_missing_is_a_configuration_error(tmp_path):
    with pytest.raises(ModelConfigurationError, match="nope.yaml"):
        model_from_config(f"scripted:{tmp_path / 'nope.yaml'}", env={})


def test_scripted_file_with_a_bad_entry_is_a_script_error(tmp_path):
    (tmp_path / "bad.yaml").write_text("- shout: hi\n", encoding="utf-8")

    with pytest.raises(ModelScriptError, match="model response 1"):
        model_from_config(f"scripted:{tmp_path / 'bad.yaml'}", env={})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("bedrock:amazon.nova-lite-v1:0", True),
        ("openai:gpt-4o", True),
        ("scripted:r.yaml", True),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", False),
        ("gpt-4o", False),
        ("", False),
        (None, False),
    ],
)
def test_a_bare_model_id_with_a_colon_is_not_mistaken_for_an_adapter_spec(value, expected):
    from archmax.models import is_model_spec

    assert is_model_spec(value) is expected


def test_provider_tunables_come_from_the_environment(tmp_path):
    env = {"ARCHMAX_MODEL_TIMEOUT_S": "240", "ARCHMAX_MODEL_MAX_RETRIES": "0", "ARCHMAX_MODEL_MAX_TOKENS": "8192"}
    openai = model_from_config("openai:llama3.1", env={**env, "ARCHMAX_API_BASE_URL": "http://127.0.0.1:9/v1"})
    assert (openai.timeout_s, openai.max_retries, openai.max_tokens) == (240.0, 0, 8192)
    bedrock = model_from_config("bedrock:some-model", env=env)
    assert (bedrock.timeout_s, bedrock.max_attempts, bedrock.max_tokens) == (240.0, 1, 8192)
    default = model_from_config("bedrock:some-model", env={})
    assert (default.timeout_s, default.max_attempts, default.max_tokens) == (None, 4, 4096)


def test_max_tokens_zero_sends_none_to_an_openai_endpoint():
    env = {"ARCHMAX_MODEL_MAX_TOKENS": "0", "ARCHMAX_API_BASE_URL": "http://127.0.0.1:9/v1"}
    assert model_from_config("openai:m", env=env).max_tokens is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ARCHMAX_MODEL_TIMEOUT_S", "soon"),
        ("ARCHMAX_MODEL_TIMEOUT_S", "0"),
        ("ARCHMAX_MODEL_MAX_RETRIES", "-1"),
        ("ARCHMAX_MODEL_MAX_TOKENS", "1.5"),
        ("ARCHMAX_MODEL_TIMEOUT_S", "nan"),
    ],
)
def test_a_bad_tunable_is_a_configuration_error_naming_it(name, value):
    with pytest.raises(ModelConfigurationError, match=name):
        model_from_config("bedrock:some-model", env={name: value})


def test_replay_per_session_reads_a_script_by_the_sessions_own_answers(tmp_path, request_in):
    from archmax.models.transcript_script import TranscriptScriptedModel

    (tmp_path / "r.yaml").write_text("- say: one\n- say: two\n", encoding="utf-8")
    first = model_from_config(f"scripted:{tmp_path / 'r.yaml'}", env={}, replay_per_session=True)
    again = model_from_config(f"scripted:{tmp_path / 'r.yaml'}", env={}, replay_per_session=True)
    assert isinstance(first, TranscriptScriptedModel)
    # two processes (two models), one session with no answers yet: both answer entry 1
    assert first.complete(request_in()).text == again.complete(request_in()).text == "one"
