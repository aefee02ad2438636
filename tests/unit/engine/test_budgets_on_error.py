"""Park, turn and time budgets; ``on_error``; ``archmax_raise``; the ``returns`` check
(BEHAVIOUR.md §5.4, §5.6, §5.7, §5.8; seed "Bounding the loop", "How a session ended")."""

from __future__ import annotations

import threading

from archmax import HostTool, load_workflow
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel

from ._support import BANK_CHECK, CHAT, TWO, harness, notes_of, results_of, wait_then

LOOKUP = HostTool(
    "lookup_transaction",
    lambda reference: {"found": False, "reference": reference},
    "Look the transaction up.",
    {"type": "object", "properties": {"reference": {"type": "string"}}, "required": ["reference"]},
)


def check_and_wait(n: int) -> list[dict]:
    return [
        {"call": {"lookup_transaction": {"reference": "INV-7"}}, "expect_state": "check-bank"},
        {
            "say": f"Not posted yet (check {n}).",
            "call": {"archmax_wait": {"reason": "the transaction posts overnight", "until": "1d"}},
        },
    ]


def bank_script(parks: int) -> list[dict]:
    script = []
    for n in range(1, parks + 1):
        script += check_and_wait(n)
    script += [
        {"call": {"lookup_transaction": {"reference": "INV-7"}}, "expect_state": "check-bank"},
        {"call": {"archmax_wait": {"reason": "the transaction posts overnight", "until": "1d"}}},
        {"say": "Finance: the payment never posted.", "expect_state": "escalate"},
    ]
    return script


def test_the_sixth_park_under_max_parks_five_lands_in_the_on_error_state():
    h = harness(load_workflow(BANK_CHECK), bank_script(5), tools=[LOOKUP])
    out = h.agent.workflow.send("pay-1", "Expect INV-7", trigger="payment_expected", variables={"reference": "INV-7"})
    for day in range(1, 6):
        assert out.kind == "parked" and h.load("pay-1").park_counts == {"check-bank": day}
        h.clock.advance(days=1)
        out = h.agent.workflow.deliver("pay-1", trigger="timer", variables={"now": f"day {day}"})
    assert (out.kind, out.state) == ("completed", "escalate")
    rec = h.load("pay-1")
    refused = results_of(rec.messages, "archmax_wait")[-1]
    assert refused.status == "error"
    assert refused.content == (
        "archmax_wait rejected: state 'check-bank' exhausted its park budget (maxParks: 5) — "
        "it asked to wait again for: the transaction posts overnight"
    )
    step = rec.trail[-1]
    assert (step.kind, step.to) == ("on_error", "escalate") and "maxParks: 5" in step.reason
    assert rec.park_counts == {"check-bank": 5}  # the refused wait did not count; routing keeps counts
    note = notes_of(rec.messages, "error")[-1]
    assert note.content.startswith("[error] The 'check-bank' state failed:")
    assert "Routing to the 'escalate' error handler." in note.content
    routed = h.events_of("state_error_routed")
    assert [(e["state"], e["to"]) for e in routed] == [("check-bank", "escalate")]
    assert h.model.inner.remaining == 0


def test_without_on_error_the_park_beyond_max_parks_rejects_the_turn():
    doc = {"states": {"check": {"triggers": {"manual": None}, "budget": {"maxParks": 1}}}}
    h = harness(doc, [wait_then(), wait_then(reason="again"), {"say": "never"}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="timer")
    assert out.kind == "rejected" and out.exit is None
    assert out.rejected == "state 'check' exhausted its park budget (maxParks: 1)"
    assert h.model.inner.remaining == 1  # the failing state got no further model call
    assert h.load("s1").pending_input is None


def test_a_refused_park_lets_the_other_calls_of_its_message_run_before_routing():
    doc = {"states": {"check": {"triggers": {"manual": None}, "budget": {"maxParks": 1}}}}
    h = harness(
        doc,
        [
            wait_then(),
            {
                "call": [
                    {"archmax_wait": {"reason": "again"}},
                    {"archmax_set_variables": {"variables": {"tried": True}}},
                ]
            },
        ],
    )
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="timer")
    assert out.kind == "rejected" and h.load("s1").variables["tried"].value is True


def test_a_state_without_max_parks_may_park_any_number_of_times():
    h = harness(TWO, [wait_then(reason=f"r{i}") for i in range(8)])
    h.agent.workflow.send("s1", "Hi")
    for _ in range(7):
        out = h.agent.workflow.deliver("s1", trigger="timer")
    assert out.kind == "parked" and h.load("s1").park_counts == {"start": 8}


def test_park_counts_start_fresh_at_each_turn_boundary():
    doc = {"states": {"chat": {"triggers": {"manual": None}, "budget": {"maxParks": 1}}}}
    h = harness(doc, [wait_then(), {"say": "done"}, wait_then(reason="next turn")])
    h.agent.workflow.send("s1", "Hi")
    h.agent.workflow.deliver("s1", trigger="reply")
    out = h.agent.workflow.send("s1", "Another question")
    assert out.kind == "parked" and h.load("s1").park_counts == {"chat": 1}


def test_max_turns_exhausted_rejects_the_turn_before_the_extra_call():
    doc = {"states": {"s": {"triggers": {"manual": None}, "budget": {"maxTurns": 2}}}}
    h = harness(doc, [{"call": {"archmax_get_variables": {}}}] * 2 + [{"say": "never"}])
    out = h.agent.workflow.send("s1", "Hi")
    assert out.kind == "rejected"
    assert out.rejected == "state 's' exhausted its turn budget (maxTurns: 2)"
    assert h.model.calls == 2


def test_max_turns_routes_by_on_error_and_the_first_call_in_the_target_counts_one():
    doc = {
        "states": {
            "s": {"triggers": {"manual": None}, "budget": {"maxTurns": 1}, "on_error": "fallback"},
            "fallback": {"budget": {"maxTurns": 1}},
        }
    }
    h = harness(doc, [{"call": {"archmax_get_variables": {}}}, {"say": "Handled.", "expect_state": "fallback"}])
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.state, out.reply) == ("completed", "fallback", "Handled.")


def test_a_successful_advance_resets_the_turn_count():
    doc = {
        "states": {
            "a": {
                "triggers": {"manual": None},
                "budget": {"maxTurns": 1},
                "transitions": [{"to": "b", "description": "next"}],
            },
            "b": {"budget": {"maxTurns": 1}},
        }
    }
    h = harness(doc, [{"call": {"archmax_advance": {"to": "b", "reason": "go"}}}, {"say": "In b."}])
    assert h.agent.workflow.send("s1", "Hi").kind == "completed"


class BlockingModel:
    """A model whose first call blocks until the test releases it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.returned = threading.Event()

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.release.wait()
        self.returned.set()
        return ModelResponse(text="A late answer that must never be seen.")


def test_a_model_call_beyond_timeout_ms_is_discarded_and_fails_the_turn():
    doc = {"states": {"s": {"triggers": {"manual": None}, "budget": {"timeoutMs": 50}}}}
    model = BlockingModel()
    h = harness(doc, model=model)
    try:
        out = h.agent.workflow.send("s1", "Hi")
    finally:
        model.release.set()
    assert out.kind == "rejected"
    assert out.rejected == "state 's' model call exceeded its time budget (timeoutMs: 50)"
    assert model.returned.wait(5)
    rec = h.load("s1")
    assert all("late answer" not in m.content for m in rec.messages)
    assert all(m.role != "assistant" for m in rec.messages)


def test_a_timed_out_call_routes_by_on_error():
    doc = {
        "states": {
            "s": {"triggers": {"manual": None}, "budget": {"timeoutMs": 50}, "on_error": "fallback"},
            "fallback": None,
        }
    }

    class FirstBlocks(BlockingModel):
        def __init__(self) -> None:
            super().__init__()
            self.after = ScriptedModel([{"say": "Fallback answer.", "expect_state": "fallback"}])
            self.n = 0

        def complete(self, request):
            self.n += 1
            return super().complete(request) if self.n == 1 else self.after.complete(request)

    model = FirstBlocks()
    h = harness(doc, model=model)
    try:
        out = h.agent.workflow.send("s1", "Hi")
    finally:
        model.release.set()
    assert (out.kind, out.state, out.reply) == ("completed", "fallback", "Fallback answer.")


def test_raise_ends_the_session_failed_at_once_without_on_error_or_returns():
    doc = {
        "states": {
            "s": {"triggers": {"manual": {"returns": ["answer"]}}, "on_error": "fallback"},
            "fallback": None,
        }
    }
    h = harness(
        doc,
        [
            {
                "say": "Sorry.",
                "call": {"archmax_raise": {"code": "orders-unavailable", "reason": "The order API is down."}},
            },
            {"say": "never"},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.state) == ("failed", "s")
    assert out.exit.model_dump() == {
        "success": False,
        "code": "orders-unavailable",
        "reason": "The order API is down.",
    }
    assert h.model.calls == 1
    rec = h.load("s1")
    assert [s.kind for s in rec.trail] == ["trigger"]
    assert rec.raised.state == "s"
    assert h.agent.sessions.get("s1").exit.code == "orders-unavailable"
    raised = h.events_of("raised")[0]
    assert (raised["code"], raised["call_id"]) == ("orders-unavailable", "call_1")


def test_raise_beside_another_call_is_an_error_and_the_other_call_still_runs():
    h = harness(
        CHAT,
        [
            {
                "call": [
                    {"archmax_raise": {"code": "x", "reason": "y"}},
                    {"archmax_set_variables": {"variables": {"a": 1}}},
                ]
            },
            {"say": "ok"},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    assert [r.status for r in results_of(out.messages)] == ["error", "success"]
    assert out.kind == "completed" and out.variables["a"]["value"] == 1


def test_raise_with_a_bad_code_or_blank_reason_is_an_error():
    h = harness(
        CHAT,
        [
            {"call": {"archmax_raise": {"code": "a\nb", "reason": "r"}}},
            {"call": {"archmax_raise": {"code": "x" * 65, "reason": "r"}}},
            {"call": {"archmax_raise": {"code": "ok", "reason": " "}}},
            {"say": "fine"},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    assert [r.status for r in results_of(out.messages)] == ["error", "error", "error"]
    assert out.kind == "completed"


def test_the_next_turn_clears_a_raise():
    h = harness(CHAT, [{"call": {"archmax_raise": {"code": "x", "reason": "y"}}}, {"say": "Better now."}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.send("s1", "Again")
    assert out.kind == "completed" and out.exit.success and h.load("s1").raised is None


def test_completing_without_a_declared_return_is_rejected_without_on_error():
    doc = {
        "states": {
            "s": {"triggers": {"manual": {"returns": ["answer"]}}, "on_error": "fallback"},
            "fallback": None,
        }
    }
    h = harness(doc, [{"say": "Done."}, {"say": "never"}])
    out = h.agent.workflow.send("s1", "Hi")
    assert out.kind == "rejected" and out.exit is None
    assert out.rejected == (
        "Completed in state 's' without setting 'answer', which trigger 'manual' declares in its 'returns'. "
        "Set it with 'archmax_set_variables' before finishing."
    )
    assert h.model.calls == 1


def test_completing_with_the_return_set_is_completed_and_a_mistyped_return_is_refused():
    doc = {"states": {"s": {"triggers": {"manual": {"returns": [{"name": "count", "type": "integer"}]}}}}}
    h = harness(
        doc,
        [
            {"call": {"archmax_set_variables": {"variables": {"count": "three"}}}},
            {"call": {"archmax_set_variables": {"variables": {"count": 3}}}},
            {"say": "Done."},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    assert [r.status for r in results_of(out.messages)] == ["error", "success"]
    assert out.kind == "completed" and out.exit.success


def test_a_park_skips_the_returns_check():
    doc = {"states": {"s": {"triggers": {"manual": {"returns": ["answer"]}}}}}
    h = harness(doc, [wait_then()])
    assert h.agent.workflow.send("s1", "Hi").kind == "parked"


def test_completion_can_happen_in_a_non_terminal_state():
    h = harness(TWO, [{"say": "All done here."}])
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.state) == ("completed", "start")


def test_on_error_into_a_human_state_parks_there_with_a_new_record_and_one_handoff_call():
    doc = {
        "states": {
            "s": {"triggers": {"manual": None}, "budget": {"maxTurns": 1}, "on_error": "triage"},
            "triage": {"type": "human", "transitions": [{"to": "s", "description": "Try again."}]},
        }
    }
    h = harness(doc, [{"call": {"archmax_get_variables": {}}}, {"say": "A person must look at this."}])
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.parked_channel, out.state, out.pending.seq) == ("parked", "decision", "triage", 1)
    assert h.model.requests[-1].handoff is True and out.reply == "A person must look at this."
