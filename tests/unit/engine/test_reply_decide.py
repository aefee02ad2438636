"""Human states: ``reply`` and ``decide`` (BEHAVIOUR.md §3.6, §3.7, §5.5; seed "Parking a session")."""

from __future__ import annotations

import pytest

from archmax import EmptyMessageError, InvalidDecisionTargetError, SessionNotParkedError
from archmax.session.notes import is_runtime_note

from ._support import HUMAN, TWO, harness, notes_of, snapshot, wait_then

TO_REVIEW = [
    {"call": {"archmax_advance": {"to": "review", "reason": "ready", "evidence": ["scratchpad/calc.md"]}}},
    {"say": "Please review the refund."},
]


def parked(entries=(), **kwargs):
    h = harness(HUMAN, TO_REVIEW + list(entries), **kwargs)
    h.agent.sessions.seed("s1", {"scratchpad/calc.md": "42", "scratchpad/policy.md": "policy"})
    out = h.agent.workflow.send("s1", "Refund please")
    return h, out


def test_an_advance_into_a_human_state_commits_a_decision_record():
    h, out = parked()
    p = out.pending
    assert (p.state, p.title, p.seq, p.created_at) == (
        "review",
        "Review the refund",
        1,
        "2025-01-01T00:00:00.000Z",
    )
    assert [(t.to, t.type) for t in p.transitions] == [
        ("approved", "approve"),
        ("second-review", "refine"),
        ("start", None),
    ]
    assert p.evidence == ["scratchpad/policy.md", "scratchpad/calc.md"]
    assert h.agent.sessions.get("s1").status == "awaiting_decision"
    assert h.events_of("parked")[-1]["awaiting"] == "decision"


def test_reply_answers_with_one_reply_only_call_and_stays_parked_on_the_same_record():
    h, _first = parked(
        [{"say": "It will be decided today.", "call": {"archmax_advance": {"to": "approved", "reason": "x"}}}]
    )
    rec_before = h.load("s1")
    out = h.agent.workflow.reply("s1", "Any news?")
    rec = h.load("s1")
    assert (out.kind, out.disposition, out.parked_channel) == ("parked", "reply", "decision")
    assert out.reply == "It will be decided today."
    assert rec.pending_decision == rec_before.pending_decision
    assert rec.trail == rec_before.trail
    assert rec.position == "review" and rec.state_turns == rec_before.state_turns
    user = [m for m in rec.messages if m.role == "user"][-1]
    assert user.content == "Any news?" and not is_runtime_note(user)
    assert h.model.requests[-1].handoff is True
    assert "Instructions:" not in h.model.requests[-1].state_block
    assert [m.status for m in rec.messages if m.role == "tool"][-1] == "blocked"
    pm = h.events_of("park_message")
    assert [(e["direction"], e["text"]) for e in pm] == [
        ("inbound", "Any news?"),
        ("outbound", "It will be decided today."),
    ]


def test_reply_refusals():
    h = harness(TWO, [wait_then()])
    h.agent.workflow.send("s1", "Hi")
    with pytest.raises(SessionNotParkedError, match="awaiting_input"):
        h.agent.workflow.reply("s1", "hello")
    with pytest.raises(SessionNotParkedError):
        h.agent.workflow.reply("nobody", "hello")
    h2, _ = parked()
    before = snapshot(h2.store, "s1")
    with pytest.raises(EmptyMessageError):
        h2.agent.workflow.reply("s1", "  ")
    assert snapshot(h2.store, "s1") == before


def test_decide_moves_along_the_chosen_edge_and_the_model_runs_in_the_target():
    h, _ = parked([{"say": "Refund approved and sent.", "expect_state": "approved"}])
    out = h.agent.workflow.decide("s1", to="  approved ", comment="  fine by me ")
    assert (out.kind, out.disposition, out.state) == ("completed", "decide", "approved")
    rec = h.load("s1")
    step = rec.trail[-1]
    assert (step.kind, step.to, step.reason) == ("human", "approved", "fine by me")
    note = notes_of(rec.messages, "decision")[-1]
    assert note.content.startswith(
        "[decision] A person chose approve → 'approved' at the 'review' checkpoint: fine by me."
    )
    assert "already in 'approved'" in note.content
    assert rec.pending_decision is None
    decided = h.events_of("decided")[-1]
    assert (decided["state"], decided["to"]) == ("review", "approved")


def test_a_decision_without_comment_or_type_ends_the_sentence_at_checkpoint():
    h, _ = parked([{"call": {"archmax_get_variables": {}}, "expect_state": "start"}, {"say": "ok"}])
    h.agent.workflow.decide("s1", to="start", comment="   ")
    rec = h.load("s1")
    note = notes_of(rec.messages, "decision")[-1]
    assert note.content.startswith("[decision] A person chose 'start' at the 'review' checkpoint. ")
    assert rec.trail[-1].reason is None


def test_a_decision_routing_into_another_human_state_presents_a_new_record_with_one_handoff_call():
    h, _first = parked([{"say": "A second reviewer must look at this now."}])
    out = h.agent.workflow.decide("s1", to="second-review")
    assert (out.kind, out.state, out.pending.seq) == ("parked", "second-review", 2)
    assert out.pending.evidence is None
    assert h.model.requests[-1].handoff is True
    assert out.reply == "A second reviewer must look at this now."


@pytest.mark.parametrize("to", ["nowhere", "review", ""])
def test_an_invalid_decision_target_is_refused_listing_the_valid_ones(to):
    h, _ = parked()
    before = snapshot(h.store, "s1")
    with pytest.raises(InvalidDecisionTargetError) as err:
        h.agent.workflow.decide("s1", to=to)
    assert "approved, second-review, start" in str(err.value)
    if to:
        assert str(err.value).startswith(f"'{to}' is not a valid decision target for session 's1'. Choose one of:")
    else:
        assert str(err.value).startswith("A decision target is required")
    assert snapshot(h.store, "s1") == before


def test_a_missing_decision_target_is_refused():
    h, _ = parked()
    with pytest.raises(InvalidDecisionTargetError, match="^A decision target is required"):
        h.agent.workflow.decide("s1")


def test_decide_on_a_session_not_parked_on_decision_is_refused():
    h = harness(TWO, [wait_then()])
    h.agent.workflow.send("s1", "Hi")
    with pytest.raises(SessionNotParkedError):
        h.agent.workflow.decide("s1", to="done")


def test_a_reply_does_not_count_toward_max_turns():
    doc = {
        **HUMAN,
        "states": {**HUMAN["states"], "review": {**HUMAN["states"]["review"], "budget": {"maxTurns": 1}}},
    }
    h = harness(doc, TO_REVIEW + [{"say": "r1"}, {"say": "r2"}, {"say": "r3"}])
    h.agent.sessions.seed("s1", {"scratchpad/calc.md": "42", "scratchpad/policy.md": "p"})
    h.agent.workflow.send("s1", "Refund")
    for text in ("a", "b", "c"):
        assert h.agent.workflow.reply("s1", text).kind == "parked"


def test_of_two_racing_decisions_exactly_one_moves_the_session_and_the_other_learns_it_is_not_parked():
    import threading

    h, _ = parked([{"say": "Refund approved and sent.", "expect_state": "approved"}, {"say": "spare"}])
    barrier = threading.Barrier(8)
    results: list[object] = []

    def decide() -> None:
        barrier.wait(timeout=30)
        try:
            results.append(h.agent.workflow.decide("s1", to="approved"))
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results.append(exc)

    threads = [threading.Thread(target=decide) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    winners = [r for r in results if not isinstance(r, Exception)]
    losers = [r for r in results if isinstance(r, Exception)]
    assert len(winners) == 1 and winners[0].kind == "completed"
    assert len(losers) == 7 and all(isinstance(e, SessionNotParkedError) for e in losers)
    assert [s.kind for s in h.load("s1").trail].count("human") == 1
