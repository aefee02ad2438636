"""``archmax_wait``, ``until`` and the handoff rule (BEHAVIOUR.md §5, §5.2, §5.3, §5.5; seed "Parking a
session", "Waiting for a time, not a reply")."""

from __future__ import annotations

import pytest

from archmax.session.records import SessionStatus

from ._support import CHAT, TWO, harness, results_of, wait_then

HINT = "Expected a duration such as 30m, 2h or 1d (units ms, s, m, h, d) or an ISO-8601 date or date-time."


@pytest.mark.parametrize(
    ("until", "resume_at"),
    [
        ("30m", "2025-01-01T00:30:00.000Z"),
        ("2h", "2025-01-01T02:00:00.000Z"),
        ("1d", "2025-01-02T00:00:00.000Z"),
        ("45s", "2025-01-01T00:00:45.000Z"),
        ("1500ms", "2025-01-01T00:00:01.500Z"),
        ("  2h  ", "2025-01-01T02:00:00.000Z"),
        ("2025-03-01", "2025-03-01T00:00:00.000Z"),
        ("2025-03-01T09:00", "2025-03-01T09:00:00.000Z"),
        ("2025-03-01 09:00+02:00", "2025-03-01T07:00:00.000Z"),
        ("2025-03-01T09:00:30Z", "2025-03-01T09:00:30.000Z"),
        ("2025-03-01T09:00:30.123456789-0130", "2025-03-01T10:30:30.123Z"),
        ("2024-06-01", "2024-06-01T00:00:00.000Z"),  # past instants are accepted and due at once
    ],
)
def test_each_until_form_becomes_an_absolute_resume_at_on_the_park(until, resume_at):
    h = harness(TWO, [wait_then(until=until)])
    out = h.agent.workflow.send("s1", "Check the bank")
    assert out.kind == "parked"
    assert out.pending.resume_at == resume_at
    assert h.agent.sessions.get("s1").resume_at == resume_at
    assert h.events_of("parked")[-1]["resume_at"] == resume_at
    result = results_of(out.messages, "archmax_wait")[-1]
    assert result.status == "success" and resume_at in result.content and "not scheduled" in result.content


@pytest.mark.parametrize(
    ("until", "why"),
    [
        ("", "'until' is empty."),
        ("   ", "'until' is empty."),
        ("0m", "must be a positive duration"),
        ("1.5h", "is neither a duration nor an instant"),
        ("2H", "is neither a duration nor an instant"),
        ("2 h", "is neither a duration nor an instant"),
        ("tomorrow", "is neither a duration nor an instant"),
        ("2025-02-30", ""),
        ("2025-03-01T25:00", ""),
        ("9999-12-31T23:59:59.999-01:00", ""),
    ],
)
def test_an_unparseable_until_is_a_tool_error_and_no_park_happens(until, why):
    h = harness(TWO, [wait_then(until=until), {"say": "Understood, finishing."}])
    out = h.agent.workflow.send("s1", "Check the bank")
    result = results_of(out.messages, "archmax_wait")[0]
    assert result.status == "error"
    assert result.content.startswith("archmax_wait rejected:")
    assert why in result.content
    assert result.content.endswith(HINT)
    assert out.kind == "completed"  # the model got the error and carried on
    rec = h.load("s1")
    assert rec.pending_input is None and rec.park_counts == {}
    assert h.events_of("parked") == []


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_a_blank_reason_is_refused_and_no_park_happens(reason):
    args = {} if reason is None else {"reason": reason}
    h = harness(TWO, [{"call": {"archmax_wait": args}}, {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi")
    result = results_of(out.messages, "archmax_wait")[0]
    assert result.status == "error" and result.content.startswith("archmax_wait rejected:")
    assert out.kind == "completed" and h.load("s1").park_counts == {}


def test_a_successful_wait_commits_the_park_record_and_counts_it():
    h = harness(
        {**TWO, "states": {**TWO["states"], "start": {**TWO["states"]["start"], "title": " Start "}}},
        [wait_then(reason="  the order number ")],
    )
    out = h.agent.workflow.send("s1", "Hi")
    rec = h.load("s1")
    assert rec.status == SessionStatus.AWAITING_INPUT
    p = rec.pending_input
    assert (p.state, p.title, p.reason, p.parked_at, p.resume_at) == (
        "start",
        "Start",
        "the order number",
        "2025-01-01T00:00:00.000Z",
        None,
    )
    assert rec.park_counts == {"start": 1}
    assert rec.lease is None and rec.park_phase == "suspend"
    result = results_of(out.messages, "archmax_wait")[0]
    assert "'start'" in result.content and "stop working" in result.content


def test_a_question_in_the_waiting_message_suspends_without_a_handoff_call():
    h = harness(TWO, [wait_then(say="Which order?")])
    out = h.agent.workflow.send("s1", "Hi")
    assert h.model.calls == 1
    assert out.reply == "Which order?"


def test_text_said_earlier_in_the_turn_also_spares_the_handoff_call():
    h = harness(TWO, [{"say": "Let me look.", "call": {"archmax_get_variables": {}}}, wait_then(say=None)])
    h.agent.workflow.send("s1", "Hi")
    assert h.model.calls == 2


def test_a_silent_wait_spends_one_tool_less_handoff_call_whose_text_is_the_park_message():
    h = harness(
        TWO,
        [
            wait_then(say=None),
            {
                "say": "We are waiting for your order number.",
                "call": {"archmax_advance": {"to": "done", "reason": "sneaky"}},
            },
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    assert h.model.calls == 2
    handoff = h.model.requests[1]
    assert handoff.handoff is True and "the order number" in handoff.state_block
    assert out.reply == "We are waiting for your order number."
    blocked = results_of(out.messages, "archmax_advance")
    assert [r.status for r in blocked] == ["blocked"]
    rec = h.load("s1")
    assert rec.position == "start" and rec.park_phase == "suspend"
    assert any(e["text"] == "We are waiting for your order number." for e in h.events_of("agent_text"))


def test_a_handoff_answer_with_only_tool_calls_parks_without_a_message_and_no_retry():
    h = harness(TWO, [wait_then(say=None), {"call": {"archmax_raise": {"code": "x", "reason": "y"}}}])
    out = h.agent.workflow.send("s1", "Hi")
    assert out.kind == "parked" and out.reply == ""
    assert h.model.calls == 2
    assert [r.status for r in results_of(out.messages, "archmax_raise")] == ["blocked"]
    assert h.load("s1").raised is None


def test_after_a_delivery_the_event_note_counts_as_a_turn_opening_message_for_the_handoff_rule():
    h = harness(TWO, [wait_then(), wait_then(say=None, reason="a second answer"), {"say": "Still waiting."}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="reply")
    assert out.kind == "parked" and out.reply == "Still waiting."
    assert h.model.calls == 3


def test_a_terminal_state_can_park_and_the_session_stays_open():
    h = harness(CHAT, [wait_then()])
    out = h.agent.workflow.send("s1", "Hi")
    assert out.kind == "parked" and out.state == "chat"
    summary = h.agent.sessions.get("s1")
    assert summary.classification == "open" and summary.wait_reason == "the order number"


def test_moves_after_a_park_in_the_same_message_are_blocked_but_other_calls_run():
    h = harness(
        TWO,
        [
            {
                "say": "Q?",
                "call": [
                    {"archmax_wait": {"reason": "answer"}},
                    {"archmax_advance": {"to": "done", "reason": "r"}},
                    {"archmax_reset": {"reason": "r"}},
                    {"archmax_wait": {"reason": "again"}},
                    {"archmax_set_variables": {"variables": {"note": "kept"}}},
                ],
            }
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    statuses = [(m.name, m.status) for m in results_of(out.messages)]
    assert statuses == [
        ("archmax_wait", "success"),
        ("archmax_advance", "blocked"),
        ("archmax_reset", "blocked"),
        ("archmax_wait", "blocked"),
        ("archmax_set_variables", "success"),
    ]
    assert all(m.content == f"{m.name} rejected: the session is parked" for m in results_of(out.messages)[1:4])
    rec = h.load("s1")
    assert rec.variables["note"].value == "kept" and rec.position == "start" and rec.park_counts == {"start": 1}
    assert h.model.calls == 1


def test_policy_forbid_tools_removes_archmax_wait_from_view_and_blocks_its_call():
    h = harness({**TWO, "policy": {"forbid_tools": ["archmax_wait"]}}, [wait_then(), {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi")
    assert "archmax_wait" not in [t.name for t in h.model.requests[0].tools]
    assert [r.status for r in results_of(out.messages, "archmax_wait")] == ["blocked"]
    assert out.kind == "completed" and h.load("s1").pending_input is None


def test_nothing_is_scheduled_a_due_park_stays_parked_until_someone_delivers():
    h = harness(TWO, [wait_then(until="30m")])
    h.agent.workflow.send("s1", "Hi")
    h.clock.advance(days=3)
    summary = h.agent.sessions.get("s1")
    assert summary.status == "awaiting_input" and summary.resume_at < "2025-01-04"
