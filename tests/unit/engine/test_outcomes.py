"""The ``Outcome`` of each way a turn can end (BEHAVIOUR.md §3.11; seed "How a session ended")."""

from __future__ import annotations

from ._support import CHAT, TWO, harness, wait_then


def test_a_completed_outcome_carries_success_the_reply_and_what_was_spent():
    h = harness(CHAT, [{"say": "Hello there."}])
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.status, out.state, out.reply) == ("completed", "completed", "chat", "Hello there.")
    assert out.exit.model_dump() == {"success": True, "code": None, "reason": None}
    assert out.rejected is None and out.parked_channel is None and out.pending is None
    assert out.usage is not None and out.usage.output_tokens > 0
    assert out.recovered is False and out.warnings == []
    assert out.variables["trigger"] == {"value": "manual", "locked": True}


def test_a_parked_outcome_has_no_exit_and_names_the_record():
    h = harness(TWO, [wait_then()])
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.status, out.parked_channel, out.exit) == ("parked", "awaiting_input", "input", None)
    assert out.pending.reason == "the order number"


def test_a_rejected_outcome_carries_the_reason_and_no_exit():
    doc = {"states": {"s": {"triggers": {"manual": {"requires": ["ref"]}}}}}
    out = harness(doc, []).agent.workflow.send("s1", "Hi")
    assert (out.kind, out.exit) == ("rejected", None) and out.rejected.startswith("Refusing to start:")
    assert out.usage is None  # nothing was spent


def test_the_reply_is_only_what_this_operation_produced():
    h = harness(TWO, [wait_then(say="Which order?"), {"call": {"archmax_get_variables": {}}}, {"say": "  "}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="t")
    assert out.reply == ""
