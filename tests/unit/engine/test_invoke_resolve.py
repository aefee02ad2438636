"""``agent.invoke`` and ``resolve_session`` (BEHAVIOUR.md §3.8, §3.9; seed "Starting versus resuming")."""

from __future__ import annotations

import pytest

from archmax import UnknownSessionTriggerError, UnknownTriggerError

from ._support import CHAT, HUMAN, TWO, harness, snapshot, wait_then


def test_resolve_session_classifies_each_state_without_writing_anything():
    h = harness(
        HUMAN,
        [wait_then(), {"call": {"archmax_advance": {"to": "review", "reason": "r"}}}, {"say": "Review!"}],
    )
    new = h.agent.workflow.resolve_session(session_id="fresh")
    assert (new.disposition, new.start_state, new.state, new.minted) == ("turn", "start", None, False)
    h.agent.workflow.send("waiting", "Hi")
    before = snapshot(h.store, "waiting")
    resume = h.agent.workflow.resolve_session(session_id="waiting", trigger="anything-at-all")
    assert (resume.disposition, resume.state, resume.start_state) == ("resume", "start", None)
    assert snapshot(h.store, "waiting") == before
    h.agent.workflow.send("deciding", "Hi")
    reply = h.agent.workflow.resolve_session(session_id="deciding")
    assert (reply.disposition, reply.state) == ("reply", "review")
    assert h.load("fresh") is None


def test_resolve_session_for_a_finished_session_is_a_turn_at_its_position_and_its_trigger_is_not_checked():
    h = harness(TWO, [{"call": {"archmax_advance": {"to": "done", "reason": "r"}}}, {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    r = h.agent.workflow.resolve_session(session_id="s1", trigger="not-declared")
    assert (r.disposition, r.start_state) == ("turn", "done")


def test_resolve_session_refuses_an_undeclared_trigger_for_a_new_session():
    h = harness(CHAT, [])
    with pytest.raises(UnknownSessionTriggerError) as err:
        h.agent.workflow.resolve_session(session_id="s1", trigger="nope")
    assert isinstance(err.value, UnknownTriggerError) and "manual" in str(err.value)


def test_invoke_on_an_input_park_abandons_it_with_a_warning_and_opens_a_new_turn():
    h = harness(TWO, [wait_then(), {"say": "Fresh turn.", "expect_state": "start"}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.invoke("s1", message="Something else")
    assert (out.kind, out.disposition) == ("completed", "turn")
    rec = h.load("s1")
    assert rec.pending_input is None
    assert any(e["scope"] == "park" for e in h.events_of("warning"))
    assert [s.kind for s in rec.trail] == ["trigger", "trigger"]
    assert [m.content for m in rec.messages if m.role == "user"] == ["Hi", "Something else"]


def test_invoke_on_a_decision_park_re_presents_the_decision_as_a_fresh_record():
    h = harness(
        HUMAN,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "r"}}},
            {"say": "Review!"},
            {"say": "Still waiting for your review."},
        ],
    )
    h.agent.sessions.seed("s1", {"scratchpad/policy.md": "p"})
    first = h.agent.workflow.send("s1", "Hi")
    h.clock.advance(minutes=5)
    out = h.agent.invoke("s1", message="Hello?")
    assert (out.kind, out.parked_channel, out.state) == ("parked", "decision", "review")
    assert out.pending.seq == first.pending.seq + 1
    assert out.pending.created_at == "2025-01-01T00:05:00.000Z" != first.pending.created_at
    assert h.model.requests[-1].handoff is True


def test_invoke_on_a_disabled_workflow_commits_a_rejected_turn_without_a_model_call():
    h = harness({**CHAT, "disabled": True}, [{"say": "never"}])
    out = h.agent.invoke("s1", message="Hi")
    assert out.kind == "rejected"
    assert out.rejected == "Refusing to start: workflow 'demo' is disabled."
    assert h.model.calls == 0
    assert h.agent.sessions.get("s1").status == "rejected"


def test_invoke_always_opens_a_turn_even_on_a_finished_session():
    h = harness(CHAT, [{"say": "a"}, {"say": "b"}])
    h.agent.invoke("s1", message="one")
    out = h.agent.invoke("s1", message="two")
    assert out.disposition == "turn" and out.reply == "b"


def test_invoke_without_an_id_resolves_it_by_precedence():
    doc = {"states": {"s": {"triggers": {"email": {"session": "thread"}}}}}
    h = harness(doc, [{"say": "ok"}])
    out = h.agent.invoke(message="Hi", trigger="email", variables={"thread": "T-1"})
    assert out.session_id == "T-1" and h.store.list() == ["T-1"]


def test_invoke_with_a_blank_message_or_unknown_trigger_writes_nothing():
    from archmax import EmptyMessageError

    h = harness(CHAT, [])
    with pytest.raises(EmptyMessageError):
        h.agent.invoke("s1", message=" ")
    with pytest.raises(UnknownTriggerError):
        h.agent.invoke("s1", message="Hi", trigger="nope")
    assert h.load("s1") is None
