"""BEHAVIOUR.md §2.1 (root keys) and §2.5 (diagnostic format)."""

from __future__ import annotations

import textwrap

import pytest

from archmax.errors import WorkflowSpecError
from archmax.spec import parse_yaml, workflow_from_dict

MINIMAL_STATES = """
states:
  intake:
    triggers: {manual: null}
"""


def test_a_minimal_workflow_loads_with_its_root_fields(load):
    wf = load(
        """
        title: Support inbox
        instructions: Answer politely.
        disabled: false
        states:
          intake:
            triggers: {manual: null}
        """
    )
    assert (wf.slug, wf.title, wf.instructions, wf.disabled) == (
        "demo",
        "Support inbox",
        "Answer politely.",
        False,
    )
    assert list(wf.states) == ["intake"]
    assert wf.warnings == []


def test_every_accepted_root_key_loads(load):
    wf = load(
        """
        title: t
        instructions: i
        disabled: true
        metadata: {canvas: {zoom: 1}}
        tools: {allow_always: [lookup], forbid_always: [shell]}
        policy: {forbid_tools: [archmax_wait]}
        tests: {caseTimeoutMs: 1000}
        settings: {model: m}
        skills: {allow_always: []}
        mounts: {allow_always: []}
        extensions: {hooks: [webhook]}
        runtime: {engine: archmax, version: "1"}
        states:
          intake:
            triggers: {manual: null}
        """
    )
    assert wf.disabled is True


@pytest.mark.parametrize("key", ["name", "description", "version"])
def test_an_unknown_root_key_is_reported_at_its_own_path(errors_of, key):
    assert errors_of(f"{key}: x\n" + MINIMAL_STATES) == [f"{key}: Unknown key '{key}'"]


def test_unknown_keys_inside_tools_and_policy_are_reported_at_their_paths(errors_of):
    assert errors_of("tools: {allow: [x], forbid_always: []}\npolicy: {forbid: [y]}\n" + MINIMAL_STATES) == [
        "tools.allow: Unknown key 'allow'",
        "policy.forbid: Unknown key 'forbid'",
    ]


@pytest.mark.parametrize("value", ['"no"', "1", "null", "yes-please"])
def test_a_non_boolean_disabled_is_a_load_error(errors_of, value):
    assert errors_of(f"disabled: {value}\n" + MINIMAL_STATES) == ["disabled: must be a boolean (true or false)"]


@pytest.mark.parametrize("value", ['""', '"   "', "3", "[a]"])
def test_root_instructions_must_be_a_non_empty_string(errors_of, value):
    assert errors_of(f"instructions: {value}\n" + MINIMAL_STATES) == ["instructions: must be a non-empty string"]


def test_states_is_required(errors_of):
    assert errors_of("title: x\n") == ["states: is required"]


@pytest.mark.parametrize("value", ["{}", "[]", "null", "3"])
def test_states_must_be_a_non_empty_mapping(errors_of, value):
    assert errors_of(f"states: {value}\n") == ["states: must be a non-empty mapping of state slug to state"]


def test_a_document_that_is_not_a_mapping_is_a_load_error():
    with pytest.raises(WorkflowSpecError) as caught:
        workflow_from_dict(["states"], "demo")
    assert len(caught.value.diagnostics) == 1
    assert caught.value.diagnostics[0].path == ""


def test_all_errors_are_collected_and_str_has_one_path_message_line_per_error():
    text = """
        name: x
        disabled: maybe
        states:
          check-bank:
            triggers: {manual: null}
            transitions:
              - {to: nowhere, description: "  "}
        """
    with pytest.raises(WorkflowSpecError) as caught:
        workflow_from_dict(parse_yaml(textwrap.dedent(text))[0], "demo")
    assert str(caught.value).splitlines() == [
        "name: Unknown key 'name'",
        "disabled: must be a boolean (true or false)",
        "states.check-bank.transitions.0.to: State 'check-bank' transitions to undefined state 'nowhere'",
        "states.check-bank.transitions.0.description: must be a non-blank string",
    ]
    assert all(d.severity == "error" for d in caught.value.diagnostics)


def test_warnings_never_raise_and_are_kept_on_the_workflow(load):
    wf = load(
        """
        states:
          intake:
            triggers:
              manual: {colour: blue}
        """
    )
    assert [(d.path, d.message, d.severity) for d in wf.warnings] == [
        ("states.intake.triggers.manual.colour", "Unknown key 'colour'", "warning")
    ]


def test_warnings_are_not_lines_of_the_error_text(errors_of):
    text = """
        bogus: 1
        states:
          intake:
            triggers:
              manual: {colour: blue}
        """
    assert errors_of(text) == ["bogus: Unknown key 'bogus'"]
