"""RecordingModel: a cassette of ScriptedModel entries that replays a run exactly."""

from __future__ import annotations

import pytest
import yaml

from archmax.errors import ModelConfigurationError, ModelScriptError
from archmax.models import RecordingModel, ScriptedModel, model_from_config
from archmax.models.base import ModelResponse
from archmax.session.records import Message, ToolCall

SCRIPT = [
    {
        "say": "Which order is it?",
        "call": {"archmax_wait": {"reason": "the order id"}},
        "expect_state": "clarify",
    },
    {"call": [{"lookup_order": {"order_id": "ORD-1001"}}, {"lookup_order": {"order_id": "ORD-1002"}}]},
    {"call": {"archmax_advance": {"to": "answer", "reason": "identified"}}},
    {"say": "Your order ÖRD-1001 ships tomorrow:\n  tracking 1Z999."},
]
STATES = ["clarify", "clarify", "clarify", "answer"]


def run(model, request_in):
    history = [Message(role="user", content="Where is my order?")]
    answers = []
    for i, state in enumerate(STATES):
        answers.append(model.complete(request_in(state, messages=list(history), handoff=(i == 0))))
        history.append(Message(role="assistant", content=answers[-1].text, tool_calls=answers[-1].tool_calls))
    return answers


def test_recorded_scripted_run_replays_the_same_responses(tmp_path, request_in):
    cassette = tmp_path / "cassettes" / "run.yaml"
    recorder = RecordingModel(ScriptedModel(SCRIPT), cassette)

    recorded = run(recorder, request_in)
    replay = model_from_config(f"scripted:{cassette}", env={})
    replayed = run(replay, request_in)

    assert [(r.text, r.tool_calls) for r in replayed] == [(r.text, r.tool_calls) for r in recorded]
    assert recorder.recorded == 4 and replay.remaining == 0


def test_cassette_entries_carry_the_state_and_a_request_summary_comment(tmp_path, request_in):
    cassette = tmp_path / "run.yaml"
    run(RecordingModel(ScriptedModel(SCRIPT), cassette), request_in)

    text = cassette.read_text(encoding="utf-8")
    entries = yaml.safe_load(text)

    assert [e["expect_state"] for e in entries] == STATES
    assert entries[1]["call"] == [
        {"lookup_order": {"order_id": "ORD-1001"}},
        {"lookup_order": {"order_id": "ORD-1002"}},
    ]
    assert "# response 1 · state 'clarify' · handoff · 1 messages · last user: Where is my order?" in text


def test_replay_in_the_wrong_state_fails_like_a_script(tmp_path, request_in):
    cassette = tmp_path / "run.yaml"
    RecordingModel(ScriptedModel([{"say": "hi"}]), cassette).complete(request_in("intake"))

    with pytest.raises(ModelScriptError, match="expected state 'intake' but the session is in 'other'"):
        ScriptedModel.from_file(cassette).complete(request_in("other"))


def test_a_second_recorder_appends_to_the_same_cassette_and_fresh_starts_over(tmp_path, request_in):
    cassette = tmp_path / "run.yaml"
    RecordingModel(ScriptedModel([{"say": "before the park"}]), cassette).complete(request_in("clarify"))
    RecordingModel(ScriptedModel([{"say": "after the resume"}]), cassette).complete(request_in("answer"))

    assert [e["say"] for e in yaml.safe_load(cassette.read_text(encoding="utf-8"))] == [
        "before the park",
        "after the resume",
    ]
    assert "# response 2 ·" in cassette.read_text(encoding="utf-8")

    RecordingModel(ScriptedModel([{"say": "x"}]), cassette, fresh=True)
    assert yaml.safe_load(cassette.read_text(encoding="utf-8")) is None


class EmptyModel:
    """A provider that answered with nothing at all."""

    def complete(self, request):
        return ModelResponse(text="", tool_calls=[])


class ProviderIdsModel:
    """A provider whose call ids are its own."""

    def complete(self, request):
        return ModelResponse(
            text="", tool_calls=[ToolCall(id="tooluse_Xy", name="lookup_order", args={"order_id": "A"})]
        )


def test_empty_answers_and_provider_call_ids_replay_as_scripted_answers(tmp_path, request_in):
    cassette = tmp_path / "run.yaml"
    RecordingModel(EmptyModel(), cassette).complete(request_in())
    RecordingModel(ProviderIdsModel(), cassette).complete(request_in())

    replay = ScriptedModel.from_file(cassette)
    first, second = replay.complete(request_in()), replay.complete(request_in())

    assert (first.text, first.tool_calls) == ("", [])
    assert second.tool_calls == [ToolCall(id="call_1", name="lookup_order", args={"order_id": "A"})]


def test_a_failed_call_records_nothing(tmp_path, request_in):
    cassette = tmp_path / "run.yaml"
    recorder = RecordingModel(ScriptedModel([]), cassette)

    with pytest.raises(ModelScriptError):
        recorder.complete(request_in())

    assert recorder.recorded == 0
    assert yaml.safe_load(cassette.read_text(encoding="utf-8")) is None


class SayModel:
    """A provider that answers with one fixed text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def complete(self, request):
        return ModelResponse(text=self.text)


@pytest.mark.parametrize(
    "text",
    [
        "Hi Dana,\n\nWhich order?",
        "a line with a trailing space \nand another",
        "  indented first line\nsecond",
        "ends with newlines\n\n",
        'tab\there\nand a \' quote: "both" # not a comment',
        "Windows\r\nline ends",
        "- looks: [like, yaml]\n? too",
    ],
)
def test_multi_line_answers_replay_character_for_character(tmp_path, request_in, text):
    cassette = tmp_path / "run.yaml"
    RecordingModel(SayModel(text), cassette).complete(request_in())

    assert ScriptedModel.from_file(cassette).complete(request_in()).text == text


def test_multi_line_answers_are_written_as_literal_blocks(tmp_path, request_in):
    cassette = tmp_path / "run.yaml"
    RecordingModel(SayModel("Hi Dana,\n\nWhich order?"), cassette).complete(request_in())

    assert "- say: |-\n    Hi Dana,\n\n    Which order?\n" in cassette.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "existing",
    [
        "title: Support inbox\nstates: {}\n",  # a workflow passed by mistake
        "responses:\n  - say: hi\n",  # a hand-written script in mapping form
        "just some text\n",
        "key: [unclosed\n",
    ],
)
def test_recording_into_a_file_that_is_not_a_cassette_is_refused_and_leaves_it_untouched(tmp_path, existing):
    target = tmp_path / "precious.yaml"
    target.write_text(existing, encoding="utf-8")

    with pytest.raises(ModelConfigurationError, match="not a cassette"):
        RecordingModel(SayModel("x"), target)

    assert target.read_text(encoding="utf-8") == existing


def test_recording_into_a_folder_is_a_configuration_error(tmp_path):
    with pytest.raises(ModelConfigurationError, match="cannot record model answers"):
        RecordingModel(SayModel("x"), tmp_path)
