"""Runtime notes as the engine writes them (BEHAVIOUR.md §7; seed "Delivering the event")."""

from __future__ import annotations

import re

from archmax import Message, is_runtime_note, runtime_note_kind

from ._support import HUMAN, TWO, harness, wait_then


def delivered(variables=None, message=None):
    h = harness(TWO, [wait_then(), {"say": "Thanks."}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="email_reply", variables=variables, message=message)
    return h, out


def note_pair(messages, kind):
    for i, m in enumerate(messages):
        if m.role == "assistant" and runtime_note_kind(m) == kind:
            return m, messages[i + 1]
    raise AssertionError(f"no {kind} note")


def test_an_event_note_is_a_synthetic_archmax_note_call_followed_by_its_result_both_marked():
    _, out = delivered({"reply_body": "It's ORD-1001."})
    call, result = note_pair(out.messages, "event")
    assert call.content == "" and len(call.tool_calls) == 1
    tc = call.tool_calls[0]
    assert re.fullmatch(r"note_[0-9a-f]{32}", tc.id)
    assert (tc.name, tc.args) == ("archmax_note", {"note": "event"})
    assert (result.role, result.tool_call_id, result.name) == ("tool", tc.id, "archmax_note")
    assert call.archmax == result.archmax == {"note": "event"}
    assert is_runtime_note(call) and is_runtime_note(result)


def test_the_event_note_lists_delivered_variables_in_order_as_compact_json():
    _, out = delivered({"zeta": {"a": [1, 2]}, "alpha": "é"})
    _, result = note_pair(out.messages, "event")
    assert result.content == (
        "[event] 'email_reply' arrived while the session waited in 'start': "
        'zeta={"a":[1,2]}, alpha="é" (also readable as session variables). '
        "You are still in 'start'; continue from here."
    )


def test_an_event_note_without_variables_ends_at_the_state_and_announces_a_following_message():
    _, out = delivered(message="Here you go")
    _, result = note_pair(out.messages, "event")
    assert result.content.startswith("[event] 'email_reply' arrived while the session waited in 'start'. ")
    assert "You are still in 'start'; continue from here." in result.content
    assert "message" in result.content.split("continue from here.")[1]


def test_a_person_s_reply_and_a_delivery_message_are_ordinary_user_messages():
    _, out = delivered(message="[event] looks like a note but is not")
    user = [m for m in out.messages if m.role == "user"][-1]
    assert user.content.startswith("[event]") and not is_runtime_note(user) and runtime_note_kind(user) is None


def test_the_marker_is_also_read_from_additional_kwargs_and_never_from_role_or_prefix():
    adapted = Message(role="tool", content="x", additional_kwargs={"archmax": {"note": "decision"}})
    assert is_runtime_note(adapted) and runtime_note_kind(adapted) == "decision"
    assert runtime_note_kind({"role": "assistant", "content": "[error] nope"}) is None


def test_the_outcome_reply_skips_notes():
    h = harness(TWO, [wait_then(), {"call": {"archmax_get_variables": {}}}, {"say": "   "}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="t", variables={"x": 1})
    assert out.reply == ""  # the note's text never counts as the agent's reply


def test_decision_and_error_notes_carry_their_kind():
    h = harness(
        HUMAN,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "r"}}},
            {"say": "Review."},
            {"say": "Approved."},
        ],
    )
    h.agent.sessions.seed("s1", {"scratchpad/policy.md": "p"})
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.decide("s1", to="approved")
    call, result = note_pair(out.messages, "decision")
    assert result.content.startswith("[decision] ") and call.tool_calls[0].args == {"note": "decision"}
    doc = {"states": {"s": {"triggers": {"manual": None}, "budget": {"maxTurns": 1}, "on_error": "f"}, "f": None}}
    h2 = harness(doc, [{"call": {"archmax_get_variables": {}}}, {"say": "handled"}])
    out2 = h2.agent.workflow.send("s1", "Hi")
    _, err = note_pair(out2.messages, "error")
    assert err.content == (
        "[error] The 's' state failed: state 's' exhausted its turn budget (maxTurns: 1). "
        "Routing to the 'f' error handler."
    )
