"""``agent.workflow.send`` and the firing rule (BEHAVIOUR.md §3.2, §3.3, §3.4; seed "Starting versus resuming")."""

from __future__ import annotations

import pytest

from archmax import (
    EmptyMessageError,
    InvalidVariableNameError,
    UnknownTriggerError,
    WorkflowDisabledError,
)

from ._support import CHAT, HUMAN, TWO, harness, snapshot, wait_then


def test_first_firing_on_a_new_id_opens_a_turn_at_the_trigger_entry_state():
    doc = {
        "states": {
            "a": {"triggers": {"manual": None}, "transitions": [{"to": "b", "description": "go"}]},
            "b": {"triggers": {"webhook": None}},
        }
    }
    h = harness(doc, [{"say": "hi", "expect_state": "b"}])
    out = h.agent.workflow.send("s1", "Hello", trigger="webhook")
    assert (out.kind, out.disposition, out.state) == ("completed", "turn", "b")
    rec = h.load("s1")
    assert rec.entry_state == "b"
    assert (rec.trail[0].kind, rec.trail[0].to, rec.trail[0].reason) == ("trigger", "b", "webhook")
    assert rec.messages[0].role == "user" and rec.messages[0].content == "Hello"


def test_a_finished_session_takes_its_next_turn_on_the_same_id_in_the_state_it_ended_in():
    h = harness(
        TWO,
        [
            {"call": {"archmax_advance": {"to": "done", "reason": "ok"}}},
            {"say": "Answered."},
            {"say": "Still here.", "expect_state": "done"},
        ],
    )
    h.agent.workflow.send("s1", "First")
    first = h.load("s1")
    out = h.agent.workflow.send("s1", "Second")
    rec = h.load("s1")
    assert (out.disposition, out.state, out.kind) == ("turn", "done", "completed")
    assert rec.messages[: len(first.messages)] == first.messages
    assert rec.created_at == first.created_at
    assert (rec.trail[-1].kind, rec.trail[-1].to) == ("trigger", "done")


def test_a_finished_session_whose_position_the_current_spec_no_longer_declares_opens_at_the_entry():
    h = harness(TWO, [{"call": {"archmax_advance": {"to": "done", "reason": "ok"}}}, {"say": "Answered."}])
    h.agent.workflow.send("s1", "First")
    renamed = {
        "states": {
            "start": {"triggers": {"manual": None}, "transitions": [{"to": "end", "description": "x"}]},
            "end": None,
        }
    }
    h2 = harness(renamed, [{"say": "Back at start.", "expect_state": "start"}], store=h.store)
    out = h2.agent.workflow.send("s1", "Second")
    assert out.state == "start" and out.kind == "completed"


def test_send_to_an_input_park_is_a_delivery_under_manual_by_default():
    h = harness(TWO, [wait_then(), {"say": "Thanks.", "expect_state": "start"}])
    h.agent.workflow.send("s1", "Hello")
    out = h.agent.workflow.send("s1", "It's ORD-1.", variables={"order": "ORD-1"})
    assert out.disposition == "deliver" and out.kind == "completed"
    rec = h.load("s1")
    assert rec.trigger == "manual" and rec.variables["order"].locked
    assert rec.messages[-2].content == "It's ORD-1." and rec.messages[-2].role == "user"


def test_send_to_an_input_park_with_an_undeclared_trigger_delivers_it():
    h = harness(TWO, [wait_then(), {"say": "Thanks."}])
    h.agent.workflow.send("s1", "Hello")
    out = h.agent.workflow.send("s1", trigger="timer")
    assert out.disposition == "deliver" and h.load("s1").trigger == "timer"


def test_send_to_an_input_park_with_a_blank_message_delivers_without_a_user_message():
    h = harness(TWO, [wait_then(), {"say": "Thanks."}])
    h.agent.workflow.send("s1", "Hello")
    n = len(h.load("s1").messages)
    h.agent.workflow.send("s1", "   ", trigger="timer")
    added = h.load("s1").messages[n:]
    assert [m.role for m in added] == ["assistant", "tool", "assistant"]  # note pair, then the answer


def test_send_to_a_decision_park_is_a_reply_that_drops_trigger_variables_and_files_with_warnings():
    h = harness(
        HUMAN,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "ready"}}},
            {"say": "Please review."},
            {"say": "Soon."},
        ],
    )
    h.agent.workflow.send("s1", "Refund please")
    out = h.agent.workflow.send(
        "s1",
        "Any news?",
        trigger="email_reply",
        variables={"x": 1},
        files={"doc": {"name": "a.txt", "content": "a"}},
    )
    assert (out.kind, out.disposition, out.parked_channel) == ("parked", "reply", "decision")
    assert len(out.warnings) == 3
    assert any("'trigger'" in w for w in out.warnings)
    assert any("'variables'" in w for w in out.warnings)
    assert any("'files'" in w for w in out.warnings)
    rec = h.load("s1")
    assert "x" not in rec.variables and rec.trigger == "manual"
    assert h.store.list_files("s1", "scratchpad/") == []


def test_blank_message_to_a_decision_park_is_refused():
    h = harness(HUMAN, [{"call": {"archmax_advance": {"to": "review", "reason": "ready"}}}, {"say": "Please review."}])
    h.agent.workflow.send("s1", "Refund please")
    with pytest.raises(EmptyMessageError):
        h.agent.workflow.send("s1", " ")


@pytest.mark.parametrize("message", [None, "", "  \n "])
def test_a_turn_with_a_blank_message_is_refused_and_writes_nothing(message):
    h = harness(CHAT, [])
    with pytest.raises(EmptyMessageError) as err:
        h.agent.workflow.send("s1", message)
    assert err.value.session_id == "s1"
    assert h.load("s1") is None and h.store.list_files("s1", "") == []


def test_an_undeclared_trigger_opening_a_turn_is_refused_for_new_and_finished_sessions():
    h = harness(CHAT, [{"say": "ok"}])
    with pytest.raises(UnknownTriggerError, match="'nope'"):
        h.agent.workflow.send("s1", "Hi", trigger="nope")
    assert h.load("s1") is None
    h.agent.workflow.send("s1", "Hi")
    before = snapshot(h.store, "s1")
    with pytest.raises(UnknownTriggerError) as err:
        h.agent.workflow.send("s1", "Hi", trigger="nope")
    assert "manual" in str(err.value)
    assert snapshot(h.store, "s1") == before


@pytest.mark.parametrize("name", ["Order", "order-id", "9lives", "a b"])
def test_a_bad_variable_name_is_refused_before_anything_is_written(name):
    h = harness(CHAT, [])
    with pytest.raises(InvalidVariableNameError):
        h.agent.workflow.send("s1", "Hi", variables={name: 1})
    assert h.load("s1") is None


def test_a_name_given_both_as_variable_and_file_is_refused():
    h = harness(CHAT, [])
    with pytest.raises(InvalidVariableNameError, match="invoice"):
        h.agent.workflow.send(
            "s1", "Hi", variables={"invoice": 1}, files={"invoice": {"name": "a.txt", "content": "x"}}
        )
    assert h.load("s1") is None and h.store.list_files("s1", "") == []


def test_a_disabled_workflow_refuses_a_new_turn_from_send():
    h = harness({**CHAT, "disabled": True}, [])
    with pytest.raises(WorkflowDisabledError, match="'demo'"):
        h.agent.workflow.send("s1", "Hi")
    assert h.load("s1") is None


def test_a_disabled_workflow_still_accepts_a_delivery_into_an_existing_park():
    h = harness(TWO, [wait_then()])
    h.agent.workflow.send("s1", "Hello")
    disabled = {**TWO, "disabled": True}
    h2 = harness(disabled, [{"say": "Thanks."}], store=h.store)
    out = h2.agent.workflow.deliver("s1", trigger="email_reply")
    assert out.kind == "completed"
    out_send = None
    with pytest.raises(WorkflowDisabledError):
        out_send = h2.agent.workflow.send("s1", "again")
    assert out_send is None


def test_a_disabled_workflow_still_accepts_replies_and_decisions():
    h = harness(HUMAN, [{"call": {"archmax_advance": {"to": "review", "reason": "ready"}}}, {"say": "Please review."}])
    h.agent.workflow.send("s1", "Refund please")
    h2 = harness({**HUMAN, "disabled": True}, [{"say": "Soon."}, {"say": "Approved."}], store=h.store)
    assert h2.agent.workflow.reply("s1", "news?").kind == "parked"
    assert h2.agent.workflow.decide("s1", to="approved").kind == "completed"


def test_the_session_is_extended_never_copied():
    h = harness(CHAT, [{"say": "one"}, {"say": "two"}])
    h.agent.workflow.send("s1", "a")
    v1 = h.load("s1").version
    h.agent.workflow.send("s1", "b")
    rec = h.load("s1")
    assert rec.version > v1
    assert h.store.list() == ["s1"]
    assert [m.content for m in rec.messages if m.role == "user"] == ["a", "b"]
