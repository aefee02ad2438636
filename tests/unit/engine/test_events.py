"""Lifecycle events (BEHAVIOUR.md §3.11 "Events"; seed "Waiting is not finishing")."""

from __future__ import annotations

from archmax import HostTool

from ._support import CHAT, HUMAN, TWO, harness, wait_then

ENVELOPE = {"type", "ts", "seq", "session_id", "level"}


def test_every_event_has_the_envelope_and_seq_counts_up_across_operations():
    h = harness(TWO, [wait_then(), {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    h.clock.advance(seconds=5)
    h.agent.workflow.deliver("s1", trigger="t")
    assert h.events and all(ENVELOPE <= set(e) for e in h.events)
    assert [e["seq"] for e in h.events] == list(range(1, len(h.events) + 1))
    assert all(e["session_id"] == "s1" for e in h.events)
    assert h.events[-1]["ts"] == "2025-01-01T00:00:05.000Z"


def test_the_parked_event_alone_tells_a_waiting_session_from_a_finished_turn():
    h = harness(TWO, [wait_then(reason="the order number", until="1d"), {"say": "done"}])
    h.agent.workflow.send("s1", "Hi")
    parked = h.events_of("parked")
    assert len(parked) == 1
    p = parked[0]
    assert (p["state"], p["awaiting"], p["reason"], p["resume_at"], p["call_id"]) == (
        "start",
        "input",
        "the order number",
        "2025-01-02T00:00:00.000Z",
        "call_1",
    )
    h.agent.workflow.deliver("s1", trigger="timer")
    assert len(h.events_of("parked")) == 1


def test_a_decision_park_event_names_the_decision_channel_without_a_reason():
    h = harness(HUMAN, [{"call": {"archmax_advance": {"to": "review", "reason": "r"}}}, {"say": "Review."}])
    h.agent.sessions.seed("s1", {"scratchpad/policy.md": "p"})
    h.agent.workflow.send("s1", "Hi")
    p = h.events_of("parked")[-1]
    assert (p["awaiting"], p["state"]) == ("decision", "review") and "reason" not in p


def test_delivered_and_agent_text_events():
    h = harness(TWO, [wait_then(say="Which order?"), {"say": "Thanks."}])
    h.agent.workflow.send("s1", "Hi")
    h.agent.workflow.deliver("s1", trigger="email_reply")
    d = h.events_of("delivered")[-1]
    assert (d["state"], d["trigger"], d["to"]) == ("start", "email_reply", "start")
    assert [e["text"] for e in h.events_of("agent_text")] == ["Which order?", "Thanks."]


def test_variables_set_names_only_and_title_set():
    h = harness(
        CHAT,
        [
            {"call": {"archmax_set_variables": {"variables": {"secret": "hunter2", "title": " Order 7 "}}}},
            {"say": "ok"},
        ],
    )
    h.agent.workflow.send("s1", "Hi")
    vs = h.events_of("variables_set")[-1]
    assert vs["names"] == ["secret", "title"] and vs["locked"] is False and vs["state"] == "chat"
    assert "hunter2" not in repr(vs)
    assert h.events_of("title_set")[-1]["title"] == "Order 7"


def test_a_failing_subscriber_never_breaks_the_session():
    from archmax import MemoryStore, create_agent
    from archmax.models.scripted import ScriptedModel
    from archmax.spec import workflow_from_dict

    def boom(event):
        raise RuntimeError("subscriber bug")

    agent = create_agent(workflow_from_dict(CHAT, "demo"), MemoryStore(), ScriptedModel([{"say": "ok"}]), on_event=boom)
    assert agent.workflow.send("s1", "Hi").kind == "completed"


def test_warnings_carry_level_warning_and_a_scope():
    h = harness(TWO, [wait_then(), {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    h.agent.invoke("s1", message="new turn")
    w = h.events_of("warning")[-1]
    assert w["level"] == "warning" and w["scope"] == "park" and w["message"]


def test_raised_and_state_error_routed_events():
    doc = {
        "tools": {"allow_always": ["noop"]},
        "states": {
            "s": {"triggers": {"manual": None}, "budget": {"maxTurns": 1}, "on_error": "f"},
            "f": None,
        },
    }
    h = harness(
        doc,
        [{"call": {"noop": {}}}, {"call": {"archmax_raise": {"code": "c", "reason": "r"}}}],
        tools=[HostTool("noop", lambda: "ok")],
    )
    h.agent.workflow.send("s1", "Hi")
    routed = h.events_of("state_error_routed")[-1]
    assert (routed["state"], routed["to"]) == ("s", "f") and "maxTurns: 1" in routed["reason"]
    raised = h.events_of("raised")[-1]
    assert (raised["state"], raised["code"], raised["reason"]) == ("f", "c", "r")
