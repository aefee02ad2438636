"""Rules of BEHAVIOUR.md §5 (control tools, parks, budgets, handoffs) and §6 (variables) that the rule
audit (tests/RULES.md) found without a test."""

from __future__ import annotations

import json

import pytest

from ._support import HUMAN, harness, results_of, wait_then

REVIEW = {
    "states": {
        "draft": {
            "triggers": {"manual": None},
            "transitions": [
                {"to": "review", "description": "A person must look."},
                {"to": "sent", "description": "Send it."},
            ],
        },
        "review": {
            "type": "human",
            "evidence": ["scratchpad/policy.md"],
            "transitions": [{"to": "draft", "description": "Redo it."}],
        },
        "sent": None,
    }
}


def _advance(evidence, to="review"):
    return {"call": {"archmax_advance": {"to": to, "reason": "ready", "evidence": evidence}}}


# ------------------------------------------------------------------------------ §5.1 evidence


@pytest.mark.parametrize(
    ("evidence", "fragment"),
    [
        ([f"scratchpad/f{i}.md" for i in range(21)], "at most 20"),
        (["scratchpad/policy.md", "scratchpad/missing.md"], "scratchpad/missing.md"),
    ],
    ids=["twenty-one-paths", "unreadable-path"],
)
def test_advance_evidence_beyond_twenty_paths_or_naming_an_unreadable_file_is_blocked(evidence, fragment):
    h = harness(REVIEW, [_advance(evidence), {"say": "Stuck in draft."}])
    h.agent.sessions.seed("s1", {"scratchpad/policy.md": "p", **{f"scratchpad/f{i}.md": str(i) for i in range(21)}})
    out = h.agent.workflow.send("s1", "Hi")
    (result,) = results_of(out.messages, "archmax_advance")
    assert result.status == "blocked" and result.content.startswith("archmax_advance rejected:")
    assert fragment in result.content
    assert (out.kind, out.state) == ("completed", "draft")
    assert h.load("s1").pending_decision is None


def test_twenty_evidence_paths_are_accepted_and_the_record_lists_declared_paths_first_without_repeats():
    attached = ["scratchpad/policy.md"] + [f"scratchpad/f{i}.md" for i in range(18)] + ["scratchpad/f0.md"]
    assert len(attached) == 20
    h = harness(REVIEW, [_advance(attached), {"say": "Please review."}])
    h.agent.sessions.seed("s1", {"scratchpad/policy.md": "p", **{f"scratchpad/f{i}.md": str(i) for i in range(18)}})
    out = h.agent.workflow.send("s1", "Hi")
    assert out.kind == "parked"
    assert out.pending.evidence == ["scratchpad/policy.md"] + [f"scratchpad/f{i}.md" for i in range(18)]


def test_evidence_refusal_comes_before_an_unmet_requires():
    doc = {**REVIEW, "states": {**REVIEW["states"], "draft": {**REVIEW["states"]["draft"], "requires": ["order"]}}}
    h = harness(doc, [_advance(["x.md"], to="sent"), {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi")
    (result,) = results_of(out.messages, "archmax_advance")
    assert "human target" in result.content and "order" not in result.content


# ------------------------------------------------------------------------------ §5.4 maxTurns


def test_a_reset_starts_the_turn_count_of_the_state_afresh():
    doc = {"states": {"a": {"triggers": {"manual": None}, "budget": {"maxTurns": 2}}}}
    h = harness(
        doc,
        [
            {"call": {"archmax_get_variables": {}}},
            {"call": {"archmax_reset": {"reason": "start over"}}},
            {"call": {"archmax_get_variables": {}}},
            {"say": "Done after the reset."},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.reply) == ("completed", "Done after the reset.")
    assert h.model.calls == 4


def test_without_a_reset_the_same_calls_exhaust_the_turn_count():
    doc = {"states": {"a": {"triggers": {"manual": None}, "budget": {"maxTurns": 2}}}}
    h = harness(doc, [{"call": {"archmax_get_variables": {}}}] * 2 + [{"say": "never"}])
    assert h.agent.workflow.send("s1", "Hi").kind == "rejected"


def test_a_decision_back_into_a_state_starts_its_turn_count_afresh():
    doc = {
        "states": {
            "draft": {
                "triggers": {"manual": None},
                "budget": {"maxTurns": 1},
                "transitions": [{"to": "review", "description": "Ready."}],
            },
            "review": {"type": "human", "transitions": [{"to": "draft", "description": "Redo."}]},
        }
    }
    h = harness(
        doc,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "r"}}},
            {"say": "Please review."},
            {"say": "Redone.", "expect_state": "draft"},
        ],
    )
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.decide("s1", to="draft", comment="try again")
    assert (out.kind, out.state, out.reply) == ("completed", "draft", "Redone.")


def test_a_handoff_call_does_not_count_toward_max_turns():
    doc = {"states": {"a": {"triggers": {"manual": None}, "budget": {"maxTurns": 1}}}}
    h = harness(doc, [wait_then(say=None), {"say": "Waiting for your order number."}])
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.reply) == ("parked", "Waiting for your order number.")
    assert h.model.calls == 2 and h.model.requests[1].handoff


# ------------------------------------------------------------------------------ §5.5 handoff directives

DIRECTIVES = {
    "introduce": "introducing this checkpoint",
    "routed": "A decision routed the session",
    "wait": "waiting for: the order number",
    "reply": "A person wrote the last message",
}


def _directives_in(request) -> list[str]:
    return [kind for kind, phrase in DIRECTIVES.items() if phrase in request.state_block]


def test_each_handoff_prompt_says_the_session_is_parked_and_carries_exactly_its_own_directive():
    h = harness(
        HUMAN,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "ready"}}},
            {"say": "Please review the refund."},  # introduce
            {"say": "It will be decided today."},  # reply
            {"say": "A second reviewer must look."},  # routed
        ],
    )
    h.agent.workflow.send("s1", "Refund")
    h.agent.workflow.reply("s1", "Any news?")
    h.agent.workflow.decide("s1", to="second-review")
    handoffs = [r for r in h.model.requests if r.handoff]
    assert [_directives_in(r) for r in handoffs] == [["introduce"], ["reply"], ["routed"]]
    assert all("parked" in r.state_block for r in handoffs)
    assert not any(_directives_in(r) for r in h.model.requests if not r.handoff)

    w = harness({"states": {"a": {"triggers": {"manual": None}}}}, [wait_then(say=None), {"say": "Waiting."}])
    w.agent.workflow.send("s1", "Hi")
    assert _directives_in(w.model.requests[1]) == ["wait"] and "parked" in w.model.requests[1].state_block


# ------------------------------------------------------------------------------ §5.9 get_variables


def test_blank_get_variables_arguments_count_as_absent():
    h = harness(
        {"states": {"a": {"triggers": {"manual": None}}}},
        [
            {
                "call": [
                    {"archmax_get_variables": {"name": "  "}},
                    {"archmax_get_variables": {"name": "n", "path": " "}},
                ]
            },
            {"say": "ok"},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi", variables={"n": {"k": 1}})
    every, one = results_of(out.messages, "archmax_get_variables")
    assert set(json.loads(every.content)) == {"n", "trigger"}
    assert json.loads(one.content) == {"value": {"k": 1}, "locked": True}


# ------------------------------------------------------------------------------ §6 carrying variables


def test_variables_carry_across_a_decision_and_an_on_error_route():
    doc = {
        "states": {
            "draft": {
                "triggers": {"manual": None},
                "transitions": [{"to": "review", "description": "Ready."}],
            },
            "review": {"type": "human", "transitions": [{"to": "work", "description": "Go on."}]},
            "work": {"budget": {"maxTurns": 1}, "on_error": "fallback"},
            "fallback": None,
        }
    }
    h = harness(
        doc,
        [
            {"call": {"archmax_set_variables": {"variables": {"mine": "kept"}}}},
            {"call": {"archmax_advance": {"to": "review", "reason": "r"}}},
            {"say": "Please decide."},
            {"call": {"archmax_get_variables": {}}, "expect_state": "work"},
            {"call": {"archmax_get_variables": {"name": "mine"}}, "expect_state": "fallback"},
            {"say": "Fallback done."},
        ],
    )
    h.agent.workflow.send("s1", "Hi", variables={"host": 1})
    out = h.agent.workflow.decide("s1", to="work")
    assert (out.kind, out.state) == ("completed", "fallback")
    assert [s.kind for s in out.trail][-2:] == ["human", "on_error"]
    assert out.variables["mine"] == {"value": "kept", "locked": False}
    assert out.variables["host"] == {"value": 1, "locked": True}
    assert json.loads(results_of(out.messages, "archmax_get_variables")[-1].content)["value"] == "kept"
