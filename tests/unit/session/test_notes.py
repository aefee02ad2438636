"""Runtime notes: shape, marker and texts (BEHAVIOUR.md §7)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from archmax.session.notes import (
    NOTE_TOOL,
    after_note_text,
    decision_note_text,
    error_note_text,
    event_note_text,
    is_runtime_note,
    make_note,
    runtime_note_kind,
    subworkflow_note_text,
)
from archmax.session.records import Message, ToolCall

KINDS = ["decision", "event", "error", "after", "sub-workflow"]


# --------------------------------------------------------------------------- shape


@pytest.mark.parametrize("kind", KINDS)
def test_note_is_an_empty_assistant_call_answered_by_a_tool_result(kind: str) -> None:
    call, result = make_note(kind, f"[{kind}] something happened.")
    assert call.role == "assistant"
    assert call.content == ""
    assert len(call.tool_calls) == 1
    tool_call = call.tool_calls[0]
    assert tool_call.name == NOTE_TOOL == "archmax_note"
    assert tool_call.args == {"note": kind}
    assert re.fullmatch(r"note_[0-9a-f]{32}", tool_call.id)
    assert result.role == "tool"
    assert result.tool_call_id == tool_call.id
    assert result.name == "archmax_note"
    assert result.content == f"[{kind}] something happened."
    assert result.status == "success"
    assert call.archmax == result.archmax == {"note": kind}


def test_each_note_gets_its_own_call_id() -> None:
    ids = {make_note("event", "x")[0].tool_calls[0].id for _ in range(50)}
    assert len(ids) == 50


def test_unknown_note_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        make_note("whisper", "x")


def test_note_marker_survives_a_json_round_trip() -> None:
    call, result = make_note("error", "x")
    for message in (call, result):
        again = Message.model_validate_json(message.model_dump_json())
        assert runtime_note_kind(again) == "error"


# --------------------------------------------------------------------------- marker reading


@pytest.mark.parametrize("kind", KINDS)
def test_both_messages_of_a_note_read_as_that_kind(kind: str) -> None:
    for message in make_note(kind, "text"):
        assert is_runtime_note(message)
        assert runtime_note_kind(message) == kind


def test_marker_in_additional_kwargs_counts() -> None:
    message = Message(role="tool", content="x", additional_kwargs={"archmax": {"note": "event"}})
    assert is_runtime_note(message)
    assert runtime_note_kind(message) == "event"


def test_plain_dict_messages_are_read_in_both_places() -> None:
    assert runtime_note_kind({"role": "assistant", "archmax": {"note": "decision"}}) == "decision"
    assert runtime_note_kind({"role": "tool", "additional_kwargs": {"archmax": {"note": "after"}}}) == "after"
    assert runtime_note_kind(make_note("event", "x")[1].model_dump()) == "event"


def test_provider_style_objects_are_read_through_their_attributes() -> None:
    message = SimpleNamespace(content="x", additional_kwargs={"archmax": {"note": "sub-workflow"}})
    assert runtime_note_kind(message) == "sub-workflow"


@pytest.mark.parametrize(
    "message",
    [
        Message(role="user", content="[event] 'email_reply' arrived while the session waited in 'clarify'."),
        Message(role="assistant", content="[decision] I chose myself."),
        Message(role="tool", content="[error] x", name="archmax_note", tool_call_id="note_abc"),
        Message(role="assistant", tool_calls=[ToolCall(id="note_1", name="archmax_note", args={"note": "event"})]),
        {"role": "tool", "name": "archmax_note", "content": "[after] x"},
        {"role": "assistant", "archmax": {}},
        {"role": "assistant", "archmax": {"note": None}},
        {"role": "assistant", "archmax": "event"},
        {"role": "assistant", "additional_kwargs": None},
        {},
        None,
        "[event] a string",
    ],
)
def test_roles_names_and_bracket_prefixes_do_not_make_a_note(message: object) -> None:
    assert not is_runtime_note(message)
    assert runtime_note_kind(message) is None


# --------------------------------------------------------------------------- texts


def test_decision_text_with_type_and_comment() -> None:
    text = decision_note_text("review", "ship", "approve", "Looks good")
    assert text.startswith("[decision] A person chose approve → 'ship' at the 'review' checkpoint: Looks good.")
    assert "already in 'ship'" in text


@pytest.mark.parametrize("type_", [None, "none", ""])
def test_decision_text_omits_an_absent_or_none_type(type_: str | None) -> None:
    text = decision_note_text("review", "ship", type_, "ok")
    assert text.startswith("[decision] A person chose 'ship' at the 'review' checkpoint: ok.")
    assert "none" not in text


@pytest.mark.parametrize("comment", [None, "", "   "])
def test_decision_text_without_comment_ends_at_checkpoint(comment: str | None) -> None:
    text = decision_note_text("review", "rework", "reject", comment)
    assert text.startswith("[decision] A person chose reject → 'rework' at the 'review' checkpoint. ")
    assert "already in 'rework'" in text


def test_decision_comment_ending_a_sentence_is_not_doubled() -> None:
    text = decision_note_text("review", "ship", None, "Ship it!")
    assert "checkpoint: Ship it! " in text


def test_event_text_lists_variables_as_compact_json_in_delivery_order() -> None:
    text = event_note_text(
        "email_reply",
        "clarify",
        {"reply_body": "It's ORD-1001.", "meta": {"a": [1, 2]}, "n": 3, "ok": None, "name": "Zoë"},
        has_message=False,
    )
    assert text == (
        "[event] 'email_reply' arrived while the session waited in 'clarify': "
        'reply_body="It\'s ORD-1001.", meta={"a":[1,2]}, n=3, ok=null, name="Zoë" '
        "(also readable as session variables). You are still in 'clarify'; continue from here."
    )


def test_event_text_without_variables_ends_at_the_state() -> None:
    text = event_note_text("timer", "check-bank", {}, has_message=False)
    assert text == (
        "[event] 'timer' arrived while the session waited in 'check-bank'. "
        "You are still in 'check-bank'; continue from here."
    )


def test_event_text_announces_a_following_message() -> None:
    without = event_note_text("email_reply", "clarify", {}, has_message=False)
    with_message = event_note_text("email_reply", "clarify", {}, has_message=True)
    assert with_message.startswith(without)
    assert len(with_message) > len(without)
    assert "message" in with_message[len(without) :]


def test_error_text() -> None:
    assert error_note_text("check-bank", "state 'check-bank' exhausted its turn budget (maxTurns: 3)", "escalate") == (
        "[error] The 'check-bank' state failed: state 'check-bank' exhausted its turn budget (maxTurns: 3). "
        "Routing to the 'escalate' error handler."
    )


def test_after_text() -> None:
    assert after_note_text("answer", "the reply does not cite the order") == (
        "[after] The 'answer' completion check did not pass: the reply does not cite the order. "
        "Revise your work and give a corrected final response."
    )


def test_subworkflow_text() -> None:
    assert subworkflow_note_text("lookup-order", "Found ORD-1001.") == "[sub-workflow: lookup-order] Found ORD-1001."
