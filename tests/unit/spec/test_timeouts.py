"""A human state's ``timeout`` and its ``on_timeout`` edge (BEHAVIOUR.md §5.11, §5.3's duration grammar, §2.5 paths)."""

from __future__ import annotations

import json

import pytest

from archmax.spec.document import json_schema

REVIEW = """
states:
  start:
    triggers: {{manual: null}}
    transitions: [{{to: review, description: Ready.}}]
  review:
    type: human
{review}
    transitions:
      - {{to: done, description: Approved.{first}}}
      - {{to: start, description: Start over.{second}}}
  done: null
"""


def _doc(review: str = "", first: str = "", second: str = "") -> str:
    return REVIEW.format(review=review, first=first, second=second)


def test_a_human_state_takes_a_timeout_and_one_on_timeout_edge(load):
    wf = load(_doc("    timeout: 3d", first=", on_timeout: true"))
    review = wf.states["review"]
    assert review.timeout == "3d"
    assert review.timeout_transition is not None and review.timeout_transition.to == "done"
    assert [t.on_timeout for t in review.transitions] == [True, False]


def test_a_human_state_may_time_out_with_no_on_timeout_edge(load):
    review = load(_doc("    timeout: 90m")).states["review"]
    assert review.timeout == "90m" and review.timeout_transition is None


def test_a_state_without_a_timeout_has_none(load):
    review = load(_doc()).states["review"]
    assert review.timeout is None and review.timeout_transition is None


@pytest.mark.parametrize("value", ["1.5h", "3 d", "3D", "2025-03-01", "PT3H", "-1d", "3", "[3d]", "true"])
def test_a_timeout_outside_the_duration_grammar_is_a_load_error_at_its_path(errors_of, value):
    [error] = errors_of(_doc(f"    timeout: {value}"))
    assert error.startswith("states.review.timeout: 'timeout' value ")
    assert error.endswith("is not a duration. Expected a duration such as 30m, 2h or 1d (units ms, s, m, h, d).")


def test_a_zero_timeout_is_refused(errors_of):
    assert errors_of(_doc("    timeout: 0s")) == [
        "states.review.timeout: 'timeout' value '0s' must be a positive duration. "
        "Expected a duration such as 30m, 2h or 1d (units ms, s, m, h, d)."
    ]


def test_an_agent_state_takes_no_timeout_key(errors_of):
    text = _doc().replace("  start:\n", "  start:\n    timeout: 1d\n")
    assert errors_of(text) == [
        "states.start.timeout: only a human state takes a timeout: an agent waits with archmax_wait's timeout"
    ]


def test_on_timeout_must_be_a_boolean(errors_of):
    assert errors_of(_doc("    timeout: 1d", first=", on_timeout: 'yes'")) == [
        "states.review.transitions.0.on_timeout: must be a boolean"
    ]


def test_on_timeout_needs_the_states_timeout(errors_of):
    assert errors_of(_doc(first=", on_timeout: true")) == [
        "states.review.transitions.0.on_timeout: State 'review' marks a transition on_timeout but declares no timeout"
    ]


def test_only_one_edge_may_be_marked_on_timeout(errors_of):
    assert errors_of(_doc("    timeout: 1d", first=", on_timeout: true", second=", on_timeout: true")) == [
        "states.review.transitions.1.on_timeout: State 'review' marks more than one transition on_timeout"
    ]


def test_an_agent_states_edge_cannot_be_marked_on_timeout(errors_of):
    text = _doc().replace(
        "[{to: review, description: Ready.}]", "[{to: review, description: Ready., on_timeout: true}]"
    )
    assert errors_of(text) == [
        "states.start.transitions.0.on_timeout: only a human state's transition can be taken on a timeout"
    ]


def test_the_editor_schema_takes_timeout_and_on_timeout():
    defs = json_schema("workflow")["$defs"]
    assert "timeout" in defs["State"]["properties"] and "on_timeout" in defs["Transition"]["properties"]
    assert "3d" in json.dumps(defs["State"]["properties"]["timeout"])
