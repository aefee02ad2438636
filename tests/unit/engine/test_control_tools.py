"""Control tools and tool governance (BEHAVIOUR.md §2.3, §5, §5.1, §5.9)."""

from __future__ import annotations

import json

import pytest

from archmax import HostTool, MemoryStore, ReservedToolNameError, create_agent

from ._support import CHAT, HUMAN, TWO, harness, results_of, wf

THREE = {
    "states": {
        "a": {
            "triggers": {"manual": None},
            "requires": ["order"],
            "transitions": [{"to": "b", "description": "to b"}, {"to": "c", "description": "to c"}],
        },
        "b": None,
        "c": None,
    }
}

ALLOW_LOOKUP = {"tools": {"allow_always": ["lookup"]}, **CHAT}


def only_result(out, name):
    found = results_of(out.messages, name)
    assert len(found) == 1
    return found[0]


def test_control_tools_are_offered_in_every_state_and_advance_only_where_there_are_edges():
    h = harness(TWO, [{"call": {"archmax_advance": {"to": "done", "reason": "ok"}}}, {"say": "answered"}])
    h.agent.workflow.send("s1", "Hi")
    first, second = ({t.name for t in r.tools} for r in h.model.requests)
    common = {
        "archmax_wait",
        "archmax_raise",
        "archmax_reset",
        "archmax_set_variables",
        "archmax_get_variables",
    }
    assert common | {"archmax_advance"} == first
    assert common == second
    assert all("archmax_note" not in {t.name for t in r.tools} for r in h.model.requests)


@pytest.mark.parametrize(
    ("calls", "fragment"),
    [
        ([{"archmax_advance": {"to": "nowhere", "reason": "r"}}], "'nowhere' is not a transition of 'a'"),
        ([{"archmax_advance": {"to": "b", "reason": "  "}}], "a non-empty 'reason' is required"),
        (
            [{"archmax_advance": {"to": "b", "reason": "r", "evidence": ["x.md"]}}],
            "only accepted for a human target",
        ),
        ([{"archmax_advance": {"to": "b", "reason": "r"}}], "requires 'order'"),
    ],
)
def test_advance_refusals_are_blocked_and_leave_the_session_in_place(calls, fragment):
    h = harness(THREE, [{"call": calls}, {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi")
    result = only_result(out, "archmax_advance")
    assert result.status == "blocked" and result.content.startswith("archmax_advance rejected:")
    assert fragment in result.content
    assert out.state == "a" and [s.kind for s in out.trail] == ["trigger"]


def test_a_second_advance_in_one_message_is_blocked_naming_where_the_first_landed():
    h = harness(
        THREE,
        [
            {
                "call": [
                    {"archmax_advance": {"to": "b", "reason": "r"}},
                    {"archmax_advance": {"to": "c", "reason": "r"}},
                ]
            },
            {"say": "ok"},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi", variables={"order": "ORD-1"})
    first, second = results_of(out.messages, "archmax_advance")
    assert first.status == "success" and first.content.startswith("Advanced to state 'b'.")
    assert second.status == "blocked" and "'b'" in second.content
    assert out.state == "b"


def test_advance_order_of_refusals_puts_the_edge_check_before_the_reason():
    h = harness(THREE, [{"call": {"archmax_advance": {"to": "zzz", "reason": ""}}}, {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi")
    assert "is not a transition" in only_result(out, "archmax_advance").content


def test_a_successful_advance_moves_and_records_the_agent_step():
    h = harness(THREE, [{"call": {"archmax_advance": {"to": "c", "reason": " order known "}}}, {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi", variables={"order": 1})
    step = out.trail[-1]
    assert (step.kind, step.to, step.reason) == ("agent", "c", "order known")


def test_an_advance_into_a_human_state_always_spends_one_handoff_call():
    h = harness(
        HUMAN,
        [
            {"say": "I checked everything.", "call": {"archmax_advance": {"to": "review", "reason": "ok"}}},
            {"say": "Please approve the refund."},
        ],
    )
    out = h.agent.workflow.send("s1", "Refund")
    assert h.model.calls == 2 and h.model.requests[1].handoff
    assert (out.kind, out.parked_channel, out.reply) == ("parked", "decision", "Please approve the refund.")


def test_reset_returns_to_the_entry_state_and_a_blank_reason_is_an_error():
    h = harness(
        TWO,
        [
            {"call": {"archmax_advance": {"to": "done", "reason": "ok"}}},
            {"call": {"archmax_reset": {"reason": " "}}},
            {"call": {"archmax_reset": {"reason": "new question"}}},
            {"say": "back", "expect_state": "start"},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    bad, good = results_of(out.messages, "archmax_reset")
    assert (bad.status, bad.content) == ("error", "archmax_reset rejected: a non-empty 'reason' is required")
    assert good.status == "success"
    assert (out.trail[-1].kind, out.trail[-1].to, out.trail[-1].reason) == ("reset", "start", "new question")


def test_set_variables_is_atomic_and_a_refusal_writes_nothing():
    h = harness(
        CHAT,
        [{"call": {"archmax_set_variables": {"variables": {"fine": 1, "customer": "x"}}}}, {"say": "ok"}],
    )
    out = h.agent.workflow.send("s1", "Hi", variables={"customer": "ACME"})
    result = only_result(out, "archmax_set_variables")
    assert result.status == "error"
    assert "'customer' is locked (current value: \"ACME\")" in result.content
    assert result.content.endswith("Nothing was written.")
    assert "fine" not in out.variables


@pytest.mark.parametrize(
    ("variables", "lock", "fragment"),
    [
        ({}, False, "non-empty mapping"),
        ({"order.id": 1}, False, "Sub-paths cannot be written"),
        ({"Order": 1}, False, "not a valid variable name"),
        ({"title": "A title"}, True, "'title' cannot be locked"),
        ({"title": "two\nlines"}, False, "title"),
    ],
)
def test_set_variables_refusals_end_with_nothing_was_written(variables, lock, fragment):
    h = harness(CHAT, [{"call": {"archmax_set_variables": {"variables": variables, "lock": lock}}}, {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi")
    result = only_result(out, "archmax_set_variables")
    assert result.status == "error" and fragment in result.content
    assert result.content.endswith("Nothing was written.")


def test_set_variables_success_and_one_way_locking():
    h = harness(
        CHAT,
        [
            {"call": {"archmax_set_variables": {"variables": {"a": 1, "b": [2]}}}},
            {"call": {"archmax_set_variables": {"variables": {"a": 5}, "lock": True}}},
            {"call": {"archmax_set_variables": {"variables": {"a": 6}}}},
            {"say": "ok"},
        ],
    )
    out = h.agent.workflow.send("s1", "Hi")
    texts = [r.content for r in results_of(out.messages)]
    assert texts[0] == "Set a, b." and texts[1] == "Set a (locked)."
    assert out.variables["a"] == {"value": 5, "locked": True}
    assert out.variables["b"] == {"value": [2], "locked": False}
    ev = h.events_of("variables_set")
    assert ev[0]["names"] == ["a", "b"] and "value" not in ev[0] and "values" not in ev[0]


def test_get_variables_reads_all_one_a_path_or_reports_what_is_set():
    h = harness(
        CHAT,
        [
            {
                "call": [
                    {"archmax_get_variables": {}},
                    {"archmax_get_variables": {"name": "order"}},
                    {"archmax_get_variables": {"name": "order", "path": "lines.-1.sku"}},
                    {"archmax_get_variables": {"name": "missing"}},
                    {"archmax_get_variables": {"name": "order", "path": "nope"}},
                ]
            },
            {"say": "ok"},
        ],
    )
    order = {"lines": [{"sku": "A"}, {"sku": "B"}]}
    out = h.agent.workflow.send("s1", "Hi", variables={"order": order})
    everything, one, at_path, missing, bad_path = results_of(out.messages)
    assert json.loads(everything.content)["trigger"] == {"value": "manual", "locked": True}
    assert json.loads(one.content) == {"value": order, "locked": True}
    assert json.loads(at_path.content) == {"value": "B"}
    assert (missing.status, missing.content) == (
        "error",
        "Variable 'missing' is not set. Set: order, trigger",
    )
    assert (bad_path.status, bad_path.content) == (
        "error",
        "Path 'nope' does not resolve against variable 'order'.",
    )


def test_archmax_note_unknown_and_forbidden_tools_are_blocked_and_nothing_happens():
    calls = []
    doc = {"tools": {"allow_always": ["lookup"], "forbid_always": ["lookup"]}, **CHAT}  # forbid beats allow
    h = harness(
        doc,
        [
            {"call": [{"archmax_note": {"note": "event"}}, {"no_such_tool": {}}, {"lookup": {}}]},
            {"say": "ok"},
        ],
        tools=[HostTool("lookup", lambda: calls.append(1) or "x")],
    )
    out = h.agent.workflow.send("s1", "Hi")
    assert [r.status for r in results_of(out.messages)] == ["blocked", "blocked", "blocked"]
    assert calls == []
    assert "lookup" not in {t.name for t in h.model.requests[0].tools}


def test_a_state_forbid_removes_a_tool_in_that_state_only_and_star_removes_control_tools_too():
    doc = {
        "states": {
            "a": {
                "triggers": {"manual": None},
                "tools": {"forbid": ["*"]},
                "transitions": [{"to": "b", "description": "go"}],
            },
            "b": None,
        }
    }
    h = harness(doc, [{"call": {"archmax_advance": {"to": "b", "reason": "r"}}}, {"say": "stuck"}])
    out = h.agent.workflow.send("s1", "Hi")
    assert h.model.requests[0].tools == []
    assert only_result(out, "archmax_advance").status == "blocked" and out.state == "a"


def test_a_host_tool_runs_with_its_arguments_and_its_exception_is_an_error_result():
    def lookup(order: str) -> dict:
        if order == "bad":
            raise RuntimeError("backend down")
        return {"order": order, "status": "shipped"}

    h = harness(
        ALLOW_LOOKUP,
        [{"call": [{"lookup": {"order": "ORD-1"}}, {"lookup": {"order": "bad"}}]}, {"say": "ok"}],
        tools=[lookup],
    )
    out = h.agent.workflow.send("s1", "Hi")
    good, bad = results_of(out.messages, "lookup")
    assert good.status == "success" and json.loads(good.content) == {"order": "ORD-1", "status": "shipped"}
    assert bad.status == "error" and "backend down" in bad.content


def test_variable_references_in_host_tool_arguments_are_substituted():
    seen = []
    h = harness(
        ALLOW_LOOKUP,
        [
            {
                "call": [
                    {"lookup": {"order": "${{order.id}}"}},
                    {"lookup": {"order": "$${{order.id}}"}},
                    {"lookup": {"order": "${{missing}}"}},
                ]
            },
            {"say": "ok"},
        ],
        tools=[HostTool("lookup", lambda order: seen.append(order) or "ok")],
    )
    out = h.agent.workflow.send("s1", "Hi", variables={"order": {"id": "ORD-9"}})
    assert seen == ["ORD-9", "${{order.id}}"]
    assert results_of(out.messages, "lookup")[2].status == "error"


def test_a_host_tool_named_archmax_is_refused_at_create_agent():
    with pytest.raises(ReservedToolNameError):
        create_agent(wf(CHAT), MemoryStore(), None, tools=[HostTool("archmax_lookup", lambda: "x")])


def test_a_host_tool_no_allow_list_grants_is_not_offered_and_its_call_is_blocked():
    calls = []
    h = harness(CHAT, [{"call": {"lookup": {}}}, {"say": "ok"}], tools=[HostTool("lookup", lambda: calls.append(1))])
    out = h.agent.workflow.send("s1", "Hi")
    assert "lookup" not in {t.name for t in h.model.requests[0].tools}
    assert only_result(out, "lookup").status == "blocked" and calls == []
