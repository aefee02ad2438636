"""BEHAVIOUR.md §2.4: ``before``/``after`` hook shapes (the engine runs them)."""

from __future__ import annotations

import pytest


def _state(hooks_yaml: str) -> str:
    return f"states:\n  a:\n    triggers: {{manual: null}}\n{hooks_yaml}"


def test_a_single_hook_and_a_list_both_load_as_lists(load):
    wf = load(
        _state(
            "    before: {script: hooks/check.py}\n"
            "    after:\n"
            "      - {rubric: {instructions: Judge the tone., max_iterations: 2, model: judge}}\n"
            "      - {script: hooks/facts.py, max_iterations: 1}\n"
            "      - {webhook: approvals/refund}\n"
        ).replace("states:", "extensions: {hooks: [webhook]}\nstates:", 1)
    )
    state = wf.states["a"]
    assert state.before == [{"script": "hooks/check.py"}]
    assert [next(iter(h)) for h in state.after] == ["rubric", "script", "webhook"]
    assert wf.uses_hooks() is True


def test_a_workflow_without_hooks_says_so(load):
    assert load(_state("")).uses_hooks() is False


@pytest.mark.parametrize(
    "script",
    [
        "check.py",
        "hooks/../secret.py",
        "/hooks/check.py",
        "hooks/check.js",
        "hooks/",
        "hooks\\\\check.py",
        "hooks//x.py",
    ],
)
def test_a_script_hook_is_confined_to_the_hooks_folder(errors_of, script):
    assert errors_of(_state(f"    before: {{script: '{script}'}}\n")) == [
        "states.a.before.script: must be a path hooks/<file>.py inside the workflow's hooks/ folder, with no '..'"
    ]


def test_a_script_in_a_subfolder_of_hooks_is_accepted(load):
    assert load(_state("    after: {script: hooks/checks/tone.py}\n")).states["a"].after


def test_a_rubric_needs_instructions(errors_of):
    assert errors_of(_state("    after: {rubric: {model: judge}}\n")) == [
        "states.a.after.rubric.instructions: is required"
    ]


def test_a_rubric_is_strict(errors_of):
    assert errors_of(_state("    after: {rubric: {instructions: x, title: t}}\n")) == [
        "states.a.after.rubric.title: Unknown key 'title'"
    ]


def test_a_rubric_max_iterations_must_be_a_non_negative_integer(errors_of):
    assert errors_of(_state("    after: {rubric: {instructions: x, max_iterations: -1}}\n")) == [
        "states.a.after.rubric.max_iterations: must be a non-negative integer"
    ]


def test_the_sidecar_budget_is_refused_beside_a_rubric(errors_of):
    assert errors_of(_state("    after: {rubric: {instructions: x}, max_iterations: 2}\n")) == [
        "states.a.after.max_iterations: a rubric declares max_iterations inside 'rubric'"
    ]


def test_a_hook_with_two_kinds_is_malformed_and_indexed_in_a_list(errors_of):
    assert errors_of(
        _state("    after:\n      - {script: hooks/a.py}\n      - {script: hooks/b.py, rubric: {instructions: x}}\n")
    ) == ["states.a.after.1: a hook is a single-key mapping: {script: ...}, {rubric: {...}} or a custom kind"]


def test_a_hook_that_is_not_a_mapping_is_malformed(errors_of):
    assert errors_of(_state("    before: hooks/check.py\n")) == [
        "states.a.before: a hook is a single-key mapping: {script: ...}, {rubric: {...}} or a custom kind"
    ]


def test_a_before_hook_budget_is_a_load_error(errors_of):
    assert errors_of(_state("    before: {script: hooks/check.py, max_iterations: 2}\n")) == [
        "states.a.before: a before hook takes no max_iterations: it answers ok or veto"
    ]
    assert errors_of(_state("    before: {rubric: {instructions: x, max_iterations: 1}}\n")) == [
        "states.a.before: a before hook takes no max_iterations: it answers ok or veto"
    ]


def test_a_custom_kind_declared_in_extensions_is_accepted_as_written(load):
    wf = load("extensions: {hooks: [webhook]}\n" + _state("    after: {webhook: approvals/refund}\n"))
    assert wf.states["a"].after == [{"webhook": "approvals/refund"}]
    assert wf.hook_kinds == ["webhook"]


def test_an_undeclared_custom_kind_is_a_load_error_at_its_hook(errors_of):
    assert errors_of(_state("    after: {webhook: approvals/refund}\n")) == [
        "states.a.after: hook kind 'webhook' is not declared in extensions.hooks"
    ]
    assert errors_of(
        "extensions: {hooks: [other]}\n" + _state("    before: [{script: hooks/a.py}, {webhook: x}]\n")
    ) == ["states.a.before.1: hook kind 'webhook' is not declared in extensions.hooks"]


def test_extensions_hooks_must_list_kind_names(errors_of):
    assert errors_of("extensions: {hooks: webhook}\n" + _state("")) == [
        "extensions.hooks: must be a list of hook kind names"
    ]
