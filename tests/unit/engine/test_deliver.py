"""Deliveries into an ``input`` park (BEHAVIOUR.md §3.5, §3.3; seed "Delivering the event",
"Waiting for a time, not a reply")."""

from __future__ import annotations

import threading

import pytest

from archmax import (
    FilesystemStore,
    InvalidVariableNameError,
    MissingDeliveryTriggerError,
    SessionNotAwaitingInputError,
    load_workflow,
)
from archmax.session.notes import is_runtime_note

from ._support import HUMAN, SUPPORT_INBOX, TWO, harness, notes_of, snapshot, wait_then

SEED_SCRIPT = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}, "expect_state": "intake"},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
    {
        "call": {"archmax_advance": {"to": "answer", "reason": "reply names ORD-1001"}},
        "expect_state": "clarify",
    },
    {"say": "ORD-1001 ships tomorrow.", "expect_state": "answer"},
]


def parked_inbox(**kwargs):
    h = harness(load_workflow(SUPPORT_INBOX), SEED_SCRIPT, **kwargs)
    h.agent.workflow.send(
        "AAQk-1",
        "About the thing we discussed on the phone - can you sort it out?",
        trigger="email_received",
        variables={"conversation_id": "AAQk-1"},
    )
    return h


def test_seed_flow_parks_in_clarify_then_the_reply_is_answered_in_answer():
    h = harness(load_workflow(SUPPORT_INBOX), SEED_SCRIPT)
    first = h.agent.workflow.send(
        "AAQk-1",
        "About the thing we discussed",
        trigger="email_received",
        variables={"conversation_id": "AAQk-1"},
    )
    assert (first.kind, first.disposition, first.parked_channel, first.state) == (
        "parked",
        "turn",
        "input",
        "clarify",
    )
    assert first.pending.reason == "the order number"
    assert first.reply == "Which order is this about?"
    assert first.exit is None

    second = h.agent.workflow.deliver("AAQk-1", trigger="email_reply", variables={"reply_body": "It's ORD-1001."})
    assert (second.kind, second.disposition, second.state) == ("completed", "deliver", "answer")
    assert second.exit.success is True
    assert second.reply == "ORD-1001 ships tomorrow."
    assert [s.to for s in second.trail if s.kind != "trigger"] == ["clarify", "answer"]
    assert h.model.inner.remaining == 0


def test_second_delivery_of_a_double_fired_timer_is_refused_and_changes_nothing():
    h = parked_inbox()
    h.agent.workflow.deliver("AAQk-1", trigger="timer", variables={"now": "2025-01-02T00:00:00.000Z"})
    before = snapshot(h.store, "AAQk-1")
    calls = h.model.calls
    with pytest.raises(SessionNotAwaitingInputError) as err:
        h.agent.workflow.deliver("AAQk-1", trigger="timer", variables={"now": "2025-01-02T00:00:00.000Z"})
    assert snapshot(h.store, "AAQk-1") == before
    assert h.model.calls == calls
    assert err.value.session_id == "AAQk-1"
    assert "not parked awaiting an event" in str(err.value)
    assert "completed" in str(err.value)


def test_twenty_threads_delivering_to_one_park_on_a_filesystem_store_let_exactly_one_proceed(tmp_path):
    h = harness(TWO, [wait_then(), {"say": "Got it."}], store=FilesystemStore(tmp_path / "sessions"))
    h.agent.workflow.send("race", "Hello")
    barrier = threading.Barrier(20)
    outcomes, refusals, others = [], [], []

    def fire(i: int) -> None:
        barrier.wait()
        try:
            outcomes.append(h.agent.workflow.deliver("race", trigger="timer", variables={"shot": i}))
        except SessionNotAwaitingInputError as exc:
            refusals.append(exc)
        except Exception as exc:  # noqa: BLE001 - anything else is a bug the assertion below shows
            others.append(exc)

    threads = [threading.Thread(target=fire, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert others == []
    assert len(outcomes) == 1 and len(refusals) == 19
    assert outcomes[0].kind == "completed"
    rec = h.load("race")
    assert [s.reason for s in rec.trail if s.kind == "trigger"] == ["manual", "timer"]
    assert len(notes_of(rec.messages, "event")) == 1
    assert h.model.calls == 2


def test_delivery_to_an_unknown_session_is_refused_naming_no_such_session():
    h = harness(TWO, [])
    with pytest.raises(SessionNotAwaitingInputError, match="no such session"):
        h.agent.workflow.deliver("nobody", trigger="timer")
    assert h.load("nobody") is None


def test_delivery_to_a_decision_parked_session_is_refused():
    h = harness(HUMAN, [{"call": {"archmax_advance": {"to": "review", "reason": "ready"}}}, {"say": "Please review."}])
    h.agent.workflow.send("s1", "Refund please")
    before = snapshot(h.store, "s1")
    with pytest.raises(SessionNotAwaitingInputError, match="awaiting_decision"):
        h.agent.workflow.deliver("s1", trigger="timer")
    assert snapshot(h.store, "s1") == before


def test_blank_trigger_to_a_finished_session_reports_the_state_first():
    h = harness(TWO, [{"say": "Done."}])
    h.agent.workflow.send("s1", "Hi")
    with pytest.raises(SessionNotAwaitingInputError):
        h.agent.workflow.deliver("s1", trigger="   ")


@pytest.mark.parametrize("trigger", [None, "", "   "])
def test_delivery_with_no_trigger_id_is_refused_and_leaves_the_park_byte_for_byte(trigger):
    h = parked_inbox()
    before = snapshot(h.store, "AAQk-1")
    with pytest.raises(MissingDeliveryTriggerError) as err:
        h.agent.workflow.deliver("AAQk-1", trigger=trigger, variables={"reply_body": "x"})
    assert err.value.session_id == "AAQk-1"
    assert snapshot(h.store, "AAQk-1") == before
    assert h.agent.sessions.get("AAQk-1").status == "awaiting_input"


@pytest.mark.parametrize("name", ["Reply", "reply-body", "1st", "reply.body", ""])
def test_delivery_naming_an_unaddressable_variable_is_refused_and_leaves_the_park_byte_for_byte(name):
    h = parked_inbox()
    before = snapshot(h.store, "AAQk-1")
    with pytest.raises(InvalidVariableNameError, match="delivered to session 'AAQk-1'"):
        h.agent.workflow.deliver("AAQk-1", trigger="email_reply", variables={"ok_name": 1, name: "x"})
    assert snapshot(h.store, "AAQk-1") == before


def test_refused_delivery_on_a_filesystem_store_leaves_every_file_untouched(tmp_path):
    from ._support import tree

    root = tmp_path / "sessions"
    h = parked_inbox(store=FilesystemStore(root))
    before = tree(root)
    with pytest.raises(MissingDeliveryTriggerError):
        h.agent.workflow.deliver("AAQk-1", trigger="")
    with pytest.raises(InvalidVariableNameError):
        h.agent.workflow.deliver("AAQk-1", trigger="email_reply", variables={"Bad": 1})
    assert tree(root) == before


def test_an_undeclared_trigger_id_resumes_the_park_and_becomes_the_current_trigger():
    h = parked_inbox()
    out = h.agent.workflow.deliver("AAQk-1", trigger="carrier_webhook", variables={"reply_body": "ORD-1001"})
    assert out.kind == "completed"
    rec = h.load("AAQk-1")
    assert rec.trigger == "carrier_webhook"
    assert rec.variables["trigger"].value == "carrier_webhook" and rec.variables["trigger"].locked


def test_delivery_effects_are_committed_together_before_the_same_state_continues():
    h = harness(TWO, [wait_then(), {"say": "Thanks.", "expect_state": "start"}])
    h.agent.workflow.send("s1", "Hello", variables={"order": "old"})
    events_before = len(h.events)
    out = h.agent.workflow.deliver(
        "s1", trigger="email_reply", variables={"order": "ORD-7", "body": {"n": 1}}, message="Here it is."
    )
    rec = h.load("s1")
    assert rec.variables["order"].value == "ORD-7" and rec.variables["order"].locked
    assert rec.variables["body"].value == {"n": 1} and rec.variables["body"].locked
    assert rec.entry_state == "start"
    assert rec.pending_input is None and rec.park_phase is None
    step = rec.trail[-1]
    assert (step.kind, step.to, step.reason) == ("trigger", "start", "email_reply")
    # the note, then the person's message, then the continued model call's answer
    tail = rec.messages[-4:]
    assert is_runtime_note(tail[0]) and is_runtime_note(tail[1]) and tail[1].archmax == {"note": "event"}
    assert (tail[2].role, tail[2].content, tail[2].archmax) == ("user", "Here it is.", None)
    assert tail[3].content == "Thanks."
    inbound = [e for e in h.events[events_before:] if e["type"] == "park_message"]
    assert inbound == [{**inbound[0], "state": "start", "direction": "inbound", "text": "Here it is."}]
    delivered = [e for e in h.events[events_before:] if e["type"] == "delivered"]
    assert delivered[0]["trigger"] == "email_reply" and delivered[0]["state"] == "start"
    assert out.state == "start"


def test_delivery_before_resume_at_resumes_the_session_at_once():
    h = harness(TWO, [wait_then(until="1d"), {"say": "Resumed."}])
    h.agent.workflow.send("s1", "Check tomorrow")
    assert h.agent.sessions.get("s1").resume_at == "2025-01-02T00:00:00.000Z"
    out = h.agent.workflow.deliver("s1", trigger="email_reply")
    assert out.kind == "completed" and out.reply == "Resumed."


def test_delivery_keeps_the_max_turns_count_of_the_state_visit():
    doc = {
        "states": {
            "start": {"triggers": {"manual": None}, "budget": {"maxTurns": 2}},
        }
    }
    h = harness(doc, [wait_then(), {"say": "never"}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="reply")
    # one call before the park, one after: the second is within budget
    assert out.kind == "completed"
    h2 = harness(doc, [{"call": {"archmax_get_variables": {}}}, wait_then(), {"say": "never"}])
    h2.agent.workflow.send("s2", "Hi")
    out2 = h2.agent.workflow.deliver("s2", trigger="reply")
    assert out2.kind == "rejected"
    assert out2.rejected == "state 'start' exhausted its turn budget (maxTurns: 2)"
    assert h2.model.inner.remaining == 1


def test_delivery_keeps_the_park_counts_of_the_turn():
    doc = {"states": {"start": {"triggers": {"manual": None}, "budget": {"maxParks": 1}}}}
    h = harness(doc, [wait_then(), wait_then(reason="again")])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="timer")
    assert out.kind == "rejected"
    assert "exhausted its park budget (maxParks: 1)" in out.rejected


def test_a_delivery_to_a_finished_session_is_refused_from_the_head_without_reading_the_checkpoint():
    from archmax import MemoryStore, SessionNotAwaitingInputError, create_agent
    from archmax.clock import FakeClock
    from archmax.models.scripted import ScriptedModel
    from archmax.spec import workflow_from_dict

    class CountingStore(MemoryStore):
        loads = 0

        def load(self, session_id):
            CountingStore.loads += 1
            return super().load(session_id)

    store = CountingStore()
    wf = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "chat")
    agent = create_agent(wf, store, ScriptedModel([{"say": "done"}]), clock=FakeClock())
    agent.workflow.send("s", "hi")
    CountingStore.loads = 0
    with pytest.raises(SessionNotAwaitingInputError, match="completed"):
        agent.workflow.deliver("s", trigger="timer")
    assert CountingStore.loads == 0
