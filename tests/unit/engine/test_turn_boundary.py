"""The turn boundary and the reset instruction (BEHAVIOUR.md §8, §5.9, §9.4; seed "Waiting is not
finishing", "Starting versus resuming")."""

from __future__ import annotations

from archmax import RESET_INSTRUCTION, load_workflow

from ._support import CHAT, HUMAN, SUPPORT_INBOX, TWO, harness, wait_then

FIRST_TURN = [
    {"call": {"archmax_advance": {"to": "answer", "reason": "names ORD-1001"}}, "expect_state": "intake"},
    {"say": "ORD-1001 ships tomorrow.", "expect_state": "answer"},
]


def inbox(entries):
    return harness(load_workflow(SUPPORT_INBOX), FIRST_TURN + entries)


def first_turn(h):
    return h.agent.workflow.send(
        "AAQk-1",
        "Where is ORD-1001?",
        trigger="email_received",
        variables={"conversation_id": "AAQk-1"},
        files={"invoice": {"name": "invoice.txt", "content": "INV-1"}},
    )


def shows_reset(request) -> bool:
    return RESET_INSTRUCTION in request.state_block


def test_reset_from_a_terminal_state_returns_to_the_start_state_keeping_transcript_variables_and_files():
    h = inbox(
        [
            {"call": [{"archmax_set_variables": {"variables": {"agent_note": "vip"}}}]},
            {
                "call": {"archmax_reset": {"reason": "a new question about a different order"}},
                "expect_state": "answer",
            },
            {
                "call": {"archmax_advance": {"to": "answer", "reason": "names ORD-2002"}},
                "expect_state": "intake",
            },
            {"say": "ORD-2002 is delayed.", "expect_state": "answer"},
        ]
    )
    first_turn(h)
    before = h.load("AAQk-1")
    out = h.agent.workflow.send(
        "AAQk-1", "And ORD-2002?", trigger="email_reply", variables={"conversation_id": "AAQk-1"}
    )
    rec = h.load("AAQk-1")
    assert out.kind == "completed" and out.state == "answer"
    assert rec.messages[: len(before.messages)] == before.messages
    assert rec.variables["invoice"].value == "scratchpad/attachments/invoice.txt"
    assert rec.variables["agent_note"].value == "vip" and not rec.variables["agent_note"].locked
    assert h.store.get("AAQk-1", "scratchpad/attachments/invoice.txt") == b"INV-1"
    assert [(s.kind, s.to) for s in rec.trail] == [
        ("trigger", "intake"),
        ("agent", "answer"),
        ("trigger", "answer"),
        ("reset", "intake"),
        ("agent", "answer"),
    ]
    assert rec.entry_state == "intake"


def test_reset_instruction_appears_exactly_on_calls_of_a_turn_opened_in_a_terminal_non_entry_state():
    h = inbox(
        [
            {"call": {"archmax_get_variables": {}}, "expect_state": "answer"},
            {"call": {"archmax_reset": {"reason": "needs intake"}}, "expect_state": "answer"},
            {"call": {"archmax_advance": {"to": "answer", "reason": "ok"}}, "expect_state": "intake"},
            {"say": "Done.", "expect_state": "answer"},
        ]
    )
    first_turn(h)
    h.agent.workflow.send("AAQk-1", "And ORD-2002?", trigger="email_reply", variables={"conversation_id": "AAQk-1"})
    assert [shows_reset(r) for r in h.model.requests] == [False, False, True, True, False, False]


def test_the_reset_instruction_stays_across_a_delivery_while_the_position_is_unchanged():
    h = inbox([wait_then(), {"say": "Thanks.", "expect_state": "answer"}])
    first_turn(h)
    h.agent.workflow.send("AAQk-1", "Any update?", trigger="email_reply", variables={"conversation_id": "AAQk-1"})
    h.agent.workflow.deliver("AAQk-1", trigger="email_reply", variables={"reply_body": "ok"})
    assert [shows_reset(r) for r in h.model.requests] == [False, False, True, True]


def test_a_one_state_workflow_never_shows_the_reset_instruction():
    h = harness(CHAT, [{"say": "one"}, {"say": "two"}, {"say": "three"}])
    for text in ("a", "b", "c"):
        h.agent.workflow.send("s1", text)
    assert not any(shows_reset(r) for r in h.model.requests)


def test_the_static_prompt_always_tells_the_agent_about_reset_and_never_to_reset_in_the_entry_state():
    h = harness(CHAT, [{"say": "one"}])
    h.agent.workflow.send("s1", "a")
    system = h.model.requests[0].system
    assert "archmax_reset" in system
    assert "Never call archmax_reset while you are in the state the conversation began in" in system


def test_a_terminal_state_reached_mid_turn_does_not_show_the_reset_instruction():
    h = harness(TWO, [{"call": {"archmax_advance": {"to": "done", "reason": "ok"}}}, {"say": "answered"}])
    h.agent.workflow.send("s1", "Hi")
    assert [shows_reset(r) for r in h.model.requests] == [False, False]


def test_opening_a_turn_resets_the_turns_mechanics_and_carries_the_conversation():
    doc = {"states": {"chat": {"triggers": {"manual": None}, "budget": {"maxParks": 3}}}}
    h = harness(
        doc,
        [
            {"call": {"archmax_set_variables": {"variables": {"mine": 1}}}},
            wait_then(),
            {"say": "Opened fresh."},
        ],
    )
    h.agent.workflow.send("s1", "Hi", variables={"host": "h"})
    parked = h.load("s1")
    assert parked.park_counts == {"chat": 1} and parked.pending_input is not None
    out = h.agent.invoke("s1", message="New turn")
    rec = h.load("s1")
    assert out.kind == "completed"
    assert rec.park_counts == {} and rec.pending_input is None and rec.park_phase is None
    assert rec.raised is None and rec.rejected is None and rec.hook_iterations == {} and rec.before_done == []
    assert rec.variables["mine"].value == 1 and rec.variables["host"].value == "h"
    assert rec.usage.output_tokens > parked.usage.output_tokens
    assert [s.reason for s in rec.trail if s.kind == "trigger"] == ["manual", "manual"]


def test_assembly_seeds_then_firing_variables_then_trigger_are_applied_locked():
    h = harness(CHAT, [{"say": "ok"}], variables={"tenant": "acme", "region": "eu"})
    out = h.agent.workflow.send("s1", "Hi", variables={"region": "us"})
    assert out.variables["tenant"] == {"value": "acme", "locked": True}
    assert out.variables["region"] == {"value": "us", "locked": True}
    assert out.variables["trigger"] == {"value": "manual", "locked": True}


def test_a_host_title_applies_only_when_the_session_has_none_and_a_bad_one_is_skipped_with_a_warning():
    h = harness(
        CHAT,
        [
            {"call": {"archmax_set_variables": {"variables": {"title": "Agent title"}}}},
            {"say": "ok"},
            {"say": "ok"},
            {"say": "ok"},
        ],
    )
    h.agent.workflow.send("s1", "Hi", variables={"title": "Host title"})
    out = h.agent.workflow.send("s1", "Again", variables={"title": "Another host title"})
    assert out.variables["title"] == {"value": "Agent title", "locked": False}
    h2 = harness(CHAT, [{"say": "ok"}])
    out2 = h2.agent.workflow.send("s2", "Hi", variables={"title": "two\nlines", "other": 1})
    assert "title" not in out2.variables and out2.variables["other"]["value"] == 1
    assert any(w.startswith("Title ignored:") for w in out2.warnings)


def test_unmet_trigger_requires_reject_the_start_without_a_model_call():
    doc = {"states": {"s": {"triggers": {"manual": {"requires": ["reference", {"name": "amount", "type": "number"}]}}}}}
    h = harness(doc, [{"say": "never"}])
    out = h.agent.workflow.send("s1", "Hi", variables={"amount": "12"})
    assert out.kind == "rejected"
    assert out.rejected == (
        "Refusing to start: trigger 'manual' requires 'reference', 'amount', which this firing does not supply."
    )
    assert h.model.calls == 0


def test_requires_are_satisfied_by_assembly_seeds_firing_variables_and_files():
    doc = {
        "states": {
            "s": {"triggers": {"manual": {"requires": ["tenant", "reference", {"name": "invoice", "type": "file"}]}}}
        }
    }
    h = harness(doc, [{"say": "ok"}], variables={"tenant": "acme"})
    out = h.agent.workflow.send(
        "s1",
        "Hi",
        variables={"reference": None},
        files={"invoice": {"name": "inv.pdf", "content": b"%PDF\x00\x01"}},
    )
    assert out.kind == "completed"


def test_a_turn_opening_writes_the_spec_snapshot_once_per_hash():
    h = harness(CHAT, [{"say": "ok"}, {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    rec = h.load("s1")
    assert h.store.get_spec(rec.spec_hash) is not None
    h.agent.workflow.send("s1", "Again")
    assert h.load("s1").spec_hash == rec.spec_hash


def test_a_turn_opening_on_a_human_state_re_parks_at_once_with_a_fresh_record_and_a_handoff():
    h = harness(
        HUMAN,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "ready"}}},
            {"say": "Please review."},
            {"say": "Still needs your review."},
        ],
    )
    first = h.agent.workflow.send("s1", "Refund")
    out = h.agent.invoke("s1", message="Hello again")
    assert (out.kind, out.parked_channel, out.state) == ("parked", "decision", "review")
    assert out.pending.seq == first.pending.seq + 1
    assert h.model.requests[-1].handoff is True and out.reply == "Still needs your review."
