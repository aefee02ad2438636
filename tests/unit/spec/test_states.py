"""BEHAVIOUR.md §2.1 (state keys, transitions, human states) and §2.3 (budget, on_error)."""

from __future__ import annotations

import pytest

from archmax.spec import Budget, Transition


def test_a_full_state_loads_every_key(load):
    wf = load(
        """
        states:
          review:
            type: human
            title: Review
            instructions: Check it.
            summary: A person checks.
            evidence: [scratchpad/refund.json]
            approvers: [ops-team]
            triggers: {manual: null}
            budget: {maxTurns: 8, maxParks: 5, timeoutMs: 30000}
            model: some-model
            on_error: done
            tools: {allow: [lookup], forbid: [shell]}
            skills: {allow: [order-data]}
            mounts: {allow: [catalogs/eu]}
            requires: [order_id]
            metadata: {x: 0, y: 40}
            transitions:
              - {to: done, description: Approved., type: approve}
          done: null
        """
    )
    review = wf.states["review"]
    assert review.type == "human"
    assert (review.title, review.instructions, review.summary) == ("Review", "Check it.", "A person checks.")
    assert review.evidence == ["scratchpad/refund.json"]
    assert review.approvers == ["ops-team"]
    assert review.budget == Budget(max_turns=8, max_parks=5, timeout_ms=30000)
    assert (review.model, review.on_error) == ("some-model", "done")
    assert (review.tools_allow, review.tools_forbid) == (["lookup"], ["shell"])
    assert review.requires == ["order_id"]
    assert review.transitions == [Transition(to="done", description="Approved.", type="approve")]
    assert review.is_terminal is False


def test_states_keep_document_order(load):
    wf = load(
        """
        states:
          zeta: {triggers: {manual: null}}
          alpha: null
          mid: {}
        """
    )
    assert list(wf.states) == ["zeta", "alpha", "mid"]


def test_a_null_state_is_an_empty_terminal_agent_state(load):
    wf = load(
        """
        states:
          intake: {triggers: {manual: null}, transitions: [{to: done, description: Finished.}]}
          done: null
        """
    )
    done = wf.states["done"]
    assert (done.type, done.is_terminal, done.transitions) == ("agent", True, [])


def test_an_empty_transitions_list_makes_a_terminal_state(load):
    wf = load("states:\n  intake: {triggers: {manual: null}, transitions: []}\n")
    assert wf.states["intake"].is_terminal is True


def test_an_unknown_state_key_is_reported_at_its_path(errors_of):
    assert errors_of(
        """
        states:
          review:
            triggers: {manual: null}
            transtions: []
        """
    ) == ["states.review.transtions: Unknown key 'transtions'"]


@pytest.mark.parametrize("slug", ["Review", "two--dashes", "-lead", "trail-", "under_score", "with space"])
def test_a_state_slug_must_be_kebab_case(errors_of, slug):
    errors = errors_of(f"states:\n  '{slug}': {{triggers: {{manual: null}}}}\n  ok: {{triggers: {{x: null}}}}\n")
    assert errors == [f"states.{slug}: a state slug must match ^[a-z0-9]+(-[a-z0-9]+)*$"]


def test_a_state_that_is_not_a_mapping_or_null_is_a_load_error(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}}\n  b: [1]\n") == [
        "states.b: must be a mapping (or null for an empty terminal state)"
    ]


def test_a_transition_to_an_undeclared_state_uses_the_fixed_message(errors_of):
    assert errors_of(
        """
        states:
          check-bank:
            triggers: {manual: null}
            transitions:
              - {to: reconcile, description: Found it.}
        """
    ) == ["states.check-bank.transitions.0.to: State 'check-bank' transitions to undefined state 'reconcile'"]


@pytest.mark.parametrize("description", ['""', '"   "', "null", "3", "[a]"])
def test_a_transition_description_must_be_a_non_blank_string(errors_of, description):
    assert errors_of(
        f"""
        states:
          check-bank:
            triggers: {{manual: null}}
            transitions:
              - {{to: done, description: ok}}
              - {{to: done, description: {description}}}
          done: null
        """
    ) == ["states.check-bank.transitions.1.description: must be a non-blank string"]


def test_a_transition_without_to_or_description_names_each_missing_key(errors_of):
    assert errors_of(
        """
        states:
          a:
            triggers: {manual: null}
            transitions: [{}]
        """
    ) == [
        "states.a.transitions.0.to: is required",
        "states.a.transitions.0.description: must be a non-blank string",
    ]


def test_a_transition_type_must_be_one_of_the_four_words(errors_of, load):
    assert errors_of(
        """
        states:
          a:
            triggers: {manual: null}
            transitions: [{to: b, description: d, type: maybe}]
          b: null
        """
    ) == ["states.a.transitions.0.type: must be one of approve|reject|refine|none"]
    for word in ("approve", "reject", "refine", "none"):
        wf = load(
            f"states:\n  a: {{triggers: {{manual: null}}, transitions: [{{to: b, description: d, type: {word}}}]}}\n  b: null\n"
        )
        assert wf.states["a"].transitions[0].type == word


def test_an_unknown_transition_key_is_a_load_error(errors_of):
    assert errors_of(
        "states:\n  a: {triggers: {manual: null}, transitions: [{to: b, description: d, when: x}]}\n  b: null\n"
    ) == ["states.a.transitions.0.when: Unknown key 'when'"]


def test_transitions_must_be_a_list(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, transitions: {to: a}}\n") == [
        "states.a.transitions: must be a list of {to, description, type?}"
    ]


def test_a_state_type_is_agent_or_human(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, type: robot}\n") == [
        "states.a.type: must be 'agent' or 'human'"
    ]


def test_a_human_state_without_a_transition_is_a_load_error(errors_of):
    assert errors_of("states:\n  review: {type: human, triggers: {manual: null}}\n") == [
        "states.review.transitions: a human state needs at least one transition to another state"
    ]


def test_a_human_state_whose_only_edge_loops_to_itself_is_a_load_error(errors_of):
    assert errors_of(
        "states:\n  review: {type: human, triggers: {manual: null}, transitions: [{to: review, description: again}]}\n"
    ) == ["states.review.transitions: a human state needs at least one transition to another state"]


def test_on_error_to_an_undeclared_state_uses_the_fixed_message(errors_of):
    assert errors_of("states:\n  check-bank: {triggers: {manual: null}, on_error: escalate}\n") == [
        "states.check-bank.on_error: State 'check-bank' on_error routes to undefined state 'escalate'"
    ]


def test_on_error_may_name_a_human_state(load):
    wf = load(
        """
        states:
          check-bank: {triggers: {manual: null}, on_error: escalate}
          escalate: {type: human, transitions: [{to: check-bank, description: Try again.}]}
        """
    )
    assert wf.states["check-bank"].on_error == "escalate"


def test_a_budget_with_no_keys_is_unbounded(load):
    wf = load("states:\n  a: {triggers: {manual: null}, budget: {}}\n")
    assert wf.states["a"].budget == Budget(max_turns=None, max_parks=None, timeout_ms=None)


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "2.0", "true", '"3"', "null"])
def test_budget_values_must_be_positive_integers(errors_of, value):
    assert errors_of(f"states:\n  a: {{triggers: {{manual: null}}, budget: {{maxParks: {value}}}}}\n") == [
        "states.a.budget.maxParks: must be a positive integer"
    ]


def test_an_unknown_budget_key_is_a_load_error(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, budget: {max_turns: 3}}\n") == [
        "states.a.budget.max_turns: Unknown key 'max_turns'"
    ]


def test_requires_names_must_be_variable_names(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, requires: [order_id, Order-Id]}\n") == [
        "states.a.requires.1: 'Order-Id' is not a variable name: names match ^[a-z][a-z0-9_]*$"
    ]


def test_evidence_paths_stay_inside_the_workspace(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, evidence: [ok.txt, /etc/passwd, ../up.txt]}\n") == [
        "states.a.evidence.1: must be a workspace-relative path with no leading '/' and no '..'",
        "states.a.evidence.2: must be a workspace-relative path with no leading '/' and no '..'",
    ]


def test_state_model_must_be_a_non_blank_string(errors_of):
    assert errors_of("states:\n  a: {triggers: {manual: null}, model: '  '}\n") == [
        "states.a.model: must be a non-blank string"
    ]
