"""ScriptedModel: BEHAVIOUR.md §10.4."""

from __future__ import annotations

import pytest

from archmax.errors import ModelConfigurationError, ModelScriptError
from archmax.models.base import Model
from archmax.models.scripted import ScriptedModel


def test_say_entry_answers_with_text_only_and_reports_nonzero_usage(request_in):
    model = ScriptedModel([{"say": "Which order is it?"}])

    response = model.complete(request_in())

    assert response.text == "Which order is it?"
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert isinstance(model, Model)


def test_mapping_call_keeps_written_order_and_numbers_ids_from_one(request_in):
    model = ScriptedModel([{"call": {"lookup_order": {"order_id": "ORD-1"}, "archmax_advance": {"to": "answer"}}}])

    response = model.complete(request_in())

    assert [(c.id, c.name, c.args) for c in response.tool_calls] == [
        ("call_1", "lookup_order", {"order_id": "ORD-1"}),
        ("call_2", "archmax_advance", {"to": "answer"}),
    ]
    assert response.stop_reason == "tool_use"


def test_list_call_allows_the_same_tool_twice(request_in):
    model = ScriptedModel([{"call": [{"lookup_order": {"order_id": "A"}}, {"lookup_order": {"order_id": "B"}}]}])

    calls = model.complete(request_in()).tool_calls

    assert [(c.name, c.args["order_id"]) for c in calls] == [("lookup_order", "A"), ("lookup_order", "B")]


def test_say_and_call_combine_into_one_message(request_in):
    model = ScriptedModel([{"say": "Which order?", "call": {"archmax_wait": {"reason": "the order id"}}}])

    response = model.complete(request_in())

    assert response.text == "Which order?"
    assert [c.name for c in response.tool_calls] == ["archmax_wait"]


def test_call_ids_keep_counting_across_entries_of_one_instance_and_restart_per_instance(request_in):
    entries = [{"call": {"a": {}}}, {"say": "x"}, {"call": [{"b": {}}, {"c": None}]}]
    model = ScriptedModel(entries)

    ids = [c.id for _ in range(3) for c in model.complete(request_in()).tool_calls]
    fresh = ScriptedModel(entries).complete(request_in()).tool_calls

    assert ids == ["call_1", "call_2", "call_3"]
    assert fresh[0].id == "call_1"


def test_each_call_consumes_exactly_one_entry_handoff_calls_included(request_in):
    model = ScriptedModel([{"say": "one"}, {"say": "two"}, {"say": "three"}])

    model.complete(request_in())
    second = model.complete(request_in(handoff=True))

    assert second.text == "two"
    assert (model.consumed, model.remaining) == (2, 1)


def test_expect_state_that_matches_passes(request_in):
    model = ScriptedModel([{"say": "ok", "expect_state": "clarify"}])

    assert model.complete(request_in("clarify")).text == "ok"


def test_expect_state_mismatch_names_the_one_based_index_and_both_states(request_in):
    model = ScriptedModel([{"say": "a"}, {"say": "b", "expect_state": "answer"}])
    model.complete(request_in("clarify"))

    with pytest.raises(ModelScriptError) as info:
        model.complete(request_in("clarify"))

    assert str(info.value) == "model response 2 expected state 'answer' but the session is in 'clarify'"


def test_call_after_the_last_entry_says_the_script_is_exhausted_with_the_state(request_in):
    model = ScriptedModel([{"say": "only"}])
    model.complete(request_in())

    with pytest.raises(ModelScriptError) as info:
        model.complete(request_in("closed"))

    assert str(info.value) == "model script exhausted after 1 responses (state 'closed')"
    assert model.remaining == 0


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        ([{"say": "ok"}, {"say": "x", "reply": "y"}], "model response 2: unknown key(s) 'reply'"),
        ([{"expect_state": "a"}], "model response 1: an entry needs 'say', 'call' or both"),
        ([{"say": "ok"}, {"call": "lookup_order"}], "model response 2"),
        ([{"call": {"lookup_order": ["ORD-1"]}}], "arguments of 'lookup_order' must be a mapping"),
        ([{"call": [{"a": {}, "b": {}}]}], "call item 0 must be a mapping with exactly one tool name"),
        ([{"call": {}}], "'call' names no tool"),
        ([{"call": []}], "'call' names no tool"),
        ([{"say": "ok"}, "just text"], "model response 2: an entry must be a mapping"),
        ([{"say": 3}], "model response 1"),
    ],
)
def test_invalid_entries_are_refused_at_construction_naming_the_entry(entries, fragment):
    with pytest.raises(ModelScriptError) as info:
        ScriptedModel(entries)

    assert fragment in str(info.value)


def test_from_file_reads_a_plain_list(tmp_path, request_in):
    path = tmp_path / "script.yaml"
    path.write_text("- say: hello\n- call:\n    archmax_wait: {reason: reply}\n", encoding="utf-8")

    model = ScriptedModel.from_file(path)

    assert model.remaining == 2
    assert model.complete(request_in()).text == "hello"


def test_from_file_reads_a_responses_mapping(tmp_path, request_in):
    path = tmp_path / "script.yaml"
    path.write_text("responses:\n  - say: hi\n    expect_state: intake\n", encoding="utf-8")

    assert ScriptedModel.from_file(path).complete(request_in("intake")).text == "hi"


def test_from_file_with_an_invalid_entry_names_the_file_and_the_entry(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("responses:\n  - say: hi\n  - sya: typo\n", encoding="utf-8")

    with pytest.raises(ModelScriptError) as info:
        ScriptedModel.from_file(path)

    assert "bad.yaml" in str(info.value) and "model response 2" in str(info.value)


def test_from_file_mapping_with_other_keys_is_refused(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("responses: []\nmodel: x\n", encoding="utf-8")

    with pytest.raises(ModelScriptError):
        ScriptedModel.from_file(path)


def test_from_file_that_does_not_exist_is_a_configuration_error(tmp_path):
    with pytest.raises(ModelConfigurationError) as info:
        ScriptedModel.from_file(tmp_path / "missing.yaml")

    assert "missing.yaml" in str(info.value)
