"""BEHAVIOUR.md §2.3: control tools, host-tool grants, removals, ``*``, ``archmax_note``."""

from __future__ import annotations

import pytest

from archmax.spec import CONTROL_TOOLS

ALL_CONTROL = list(CONTROL_TOOLS)
NO_ADVANCE = [t for t in CONTROL_TOOLS if t != "archmax_advance"]
HOST = ["lookup_order", "send_email", "shell"]


def test_control_tools_are_the_six_runtime_tools():
    assert CONTROL_TOOLS == (
        "archmax_wait",
        "archmax_raise",
        "archmax_reset",
        "archmax_set_variables",
        "archmax_get_variables",
        "archmax_advance",
    )


def test_a_non_terminal_state_offers_every_control_tool_and_a_terminal_one_all_but_advance(load):
    wf = load("states:\n  a: {triggers: {manual: null}, transitions: [{to: b, description: d}]}\n  b: null\n")
    assert wf.offered_tools("a", []) == ALL_CONTROL
    assert wf.offered_tools("b", []) == NO_ADVANCE
    assert wf.tool_allowed("b", "archmax_advance", []) is False
    assert wf.tool_allowed("b", "archmax_wait", []) is True


def test_host_tools_are_closed_by_default(load):
    wf = load("states:\n  a: {triggers: {manual: null}}\n")
    assert wf.offered_tools("a", HOST) == NO_ADVANCE
    assert wf.tool_allowed("a", "lookup_order", HOST) is False


def test_state_allow_and_root_allow_always_grant_host_tools_in_host_order(load):
    wf = load(
        """
        tools: {allow_always: [shell]}
        states:
          a: {triggers: {manual: null}, tools: {allow: [lookup_order]}}
          b: {triggers: {x: null}}
        """
    )
    assert wf.offered_tools("a", HOST) == NO_ADVANCE + ["lookup_order", "shell"]
    assert wf.offered_tools("b", HOST) == NO_ADVANCE + ["shell"]


def test_a_granted_name_the_host_does_not_register_is_not_offered(load):
    wf = load("states:\n  a: {triggers: {manual: null}, tools: {allow: [missing_tool]}}\n")
    assert wf.offered_tools("a", HOST) == NO_ADVANCE


def test_forbid_beats_allow_in_the_same_state(load):
    wf = load("states:\n  a: {triggers: {manual: null}, tools: {allow: [shell, send_email], forbid: [shell]}}\n")
    assert wf.offered_tools("a", HOST) == NO_ADVANCE + ["send_email"]
    assert wf.tool_allowed("a", "shell", HOST) is False


def test_forbid_always_beats_every_grant_in_every_state(load):
    wf = load(
        """
        tools: {allow_always: [shell], forbid_always: [shell]}
        states:
          a: {triggers: {manual: null}, tools: {allow: [shell]}}
        """
    )
    assert wf.offered_tools("a", HOST) == NO_ADVANCE


def test_a_state_forbid_removes_a_tool_in_that_state_only(load):
    wf = load(
        """
        tools: {allow_always: [send_email]}
        states:
          a: {triggers: {manual: null}, tools: {forbid: [send_email]}}
          b: {triggers: {x: null}}
        """
    )
    assert wf.tool_allowed("a", "send_email", HOST) is False
    assert wf.tool_allowed("b", "send_email", HOST) is True


def test_policy_forbid_tools_removes_archmax_wait_workflow_wide(load):
    wf = load(
        """
        policy: {forbid_tools: [archmax_wait]}
        states:
          a: {triggers: {manual: null}, transitions: [{to: b, description: d}]}
          b: null
        """
    )
    assert "archmax_wait" not in wf.offered_tools("a", [])
    assert "archmax_wait" not in wf.offered_tools("b", [])
    assert wf.tool_allowed("b", "archmax_wait", []) is False


def test_policy_forbid_tools_and_forbid_always_are_merged(load):
    wf = load(
        """
        tools: {allow_always: [shell, send_email], forbid_always: [shell]}
        policy: {forbid_tools: [send_email, archmax_reset]}
        states:
          a: {triggers: {manual: null}}
        """
    )
    assert wf.offered_tools("a", HOST) == [t for t in NO_ADVANCE if t != "archmax_reset"]
    assert [r.tool for r in wf.forbid_always] == ["shell", "send_email", "archmax_reset"]


def test_a_state_forbid_can_remove_a_control_tool(load):
    wf = load("states:\n  a: {triggers: {manual: null}, tools: {forbid: [archmax_raise]}}\n")
    assert "archmax_raise" not in wf.offered_tools("a", [])


def test_star_in_a_state_forbid_removes_every_tool_there_control_tools_included(load):
    wf = load(
        """
        tools: {allow_always: [shell]}
        states:
          a: {triggers: {manual: null}, tools: {forbid: ['*']}, transitions: [{to: b, description: d}]}
          b: null
        """
    )
    assert wf.offered_tools("a", HOST) == []
    assert wf.offered_tools("b", HOST) == NO_ADVANCE + ["shell"]


def test_star_in_forbid_always_removes_every_tool_everywhere(load):
    wf = load("tools: {forbid_always: ['*']}\nstates:\n  a: {triggers: {manual: null}}\n")
    assert wf.offered_tools("a", HOST) == []


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("tools: {allow_always: ['*']}\nstates:\n  a: {triggers: {manual: null}}\n", "tools.allow_always.0"),
        ("states:\n  a: {triggers: {manual: null}, tools: {allow: [x, '*']}}\n", "states.a.tools.allow.1"),
    ],
)
def test_star_in_an_allow_list_is_a_load_error(errors_of, text, path):
    assert errors_of(text) == [f"{path}: '*' is accepted only in forbid lists"]


def test_archmax_note_is_never_offered_nor_allowed_even_when_granted(load):
    wf = load("tools: {allow_always: [archmax_note]}\nstates:\n  a: {triggers: {manual: null}}\n")
    assert "archmax_note" not in wf.offered_tools("a", ["archmax_note"])
    assert wf.tool_allowed("a", "archmax_note", ["archmax_note"]) is False


def test_unknown_tools_are_not_allowed(load):
    wf = load("states:\n  a: {triggers: {manual: null}}\n")
    assert wf.tool_allowed("a", "no_such_tool", HOST) is False


def test_allow_entries_may_be_guarded_mappings_and_stay_offered(load):
    wf = load(
        """
        states:
          a:
            triggers: {manual: null}
            tools:
              allow:
                - {tool: send_email, args: {to: ['${{customer_email}}']}, connection: outlook}
              forbid:
                - {tool: shell, paths: ['logs/**']}
        tools: {allow_always: [shell]}
        """
    )
    assert wf.offered_tools("a", HOST) == NO_ADVANCE + ["send_email", "shell"]
    rule = wf.states["a"].allow_rules[0]
    assert (rule.tool, rule.args, rule.connection, rule.guarded) == (
        "send_email",
        {"to": ["${{customer_email}}"]},
        "outlook",
        True,
    )
    assert wf.states["a"].tools_forbid == []


def test_a_tool_entry_mapping_is_strict(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, tools: {allow: [{tool: x, argz: {}}]}}\n") == [
        "states.a.tools.allow.0.argz: Unknown key 'argz'"
    ]


def test_an_unknown_key_in_state_tools_is_a_load_error(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, tools: {allow_always: [x]}}\n") == [
        "states.a.tools.allow_always: Unknown key 'allow_always'"
    ]


def test_an_unknown_state_raises_key_error(load):
    wf = load("states:\n  a: {triggers: {manual: null}}\n")
    with pytest.raises(KeyError):
        wf.offered_tools("nope", [])


def test_subworkflow_use_is_detected_from_allow_lists(load):
    plain = load("states:\n  a: {triggers: {manual: null}, tools: {allow: [lookup]}}\n")
    calling = load("states:\n  a: {triggers: {manual: null}, tools: {allow: [archmax_workflow_enrich-order]}}\n")
    assert plain.uses_subworkflows() is False
    assert calling.uses_subworkflows() is True
    assert calling.subworkflows_for("a") == ["enrich-order"]
