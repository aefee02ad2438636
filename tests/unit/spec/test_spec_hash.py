"""BEHAVIOUR.md §9.4: the stripped spec and its hash, computed independently here."""

from __future__ import annotations

import hashlib
import json

WORKFLOW = """
title: Bank check
metadata: {canvas: {zoom: 1}}
states:
  check-bank:
    metadata: {x: 0, y: 40}
    summary: Look for the transaction; naïve café ✓
    triggers: {manual: null}
    budget: {maxParks: 5}
    before: {rubric: {instructions: 'Is it a weekday?', metadata: {colour: red}}}
    after:
      - {rubric: {instructions: Judge it., metadata: {x: 1}}}
      - {script: hooks/check.py}
    transitions:
      - {to: reconcile, description: "Found on 2025-03-01"}
  reconcile:
    metadata: {x: 280}
"""

EXPECTED_SPEC = {
    "title": "Bank check",
    "states": {
        "check-bank": {
            "summary": "Look for the transaction; naïve café ✓",
            "triggers": {"manual": None},
            "budget": {"maxParks": 5},
            "before": {"rubric": {"instructions": "Is it a weekday?"}},
            "after": [{"rubric": {"instructions": "Judge it."}}, {"script": "hooks/check.py"}],
            "transitions": [{"to": "reconcile", "description": "Found on 2025-03-01"}],
        },
        "reconcile": {},
    },
}


def _expected_hash(spec: dict) -> str:
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def test_spec_strips_metadata_from_root_states_and_inline_rubrics_keeping_hook_shapes(load):
    wf = load(WORKFLOW)
    assert wf.spec == EXPECTED_SPEC
    assert isinstance(wf.spec["states"]["check-bank"]["before"], dict)  # a single hook stays single


def test_spec_hash_is_the_first_32_hex_of_sha256_of_the_canonical_json(load):
    wf = load(WORKFLOW)
    assert wf.spec_hash == _expected_hash(EXPECTED_SPEC)
    assert len(wf.spec_hash) == 32


def test_moving_states_on_a_canvas_does_not_change_the_hash(load):
    moved = WORKFLOW.replace("{x: 0, y: 40}", "{x: 999, y: -3}").replace("zoom: 1", "zoom: 2")
    assert load(moved).spec_hash == load(WORKFLOW).spec_hash


def test_changing_an_instruction_changes_the_hash(load):
    assert load(WORKFLOW.replace("Judge it.", "Judge it harder.")).spec_hash != load(WORKFLOW).spec_hash


def test_key_order_in_the_document_does_not_change_the_hash(load):
    a = load("title: t\nstates:\n  a: {triggers: {manual: null}, summary: s}\n")
    b = load("states:\n  a: {summary: s, triggers: {manual: null}}\ntitle: t\n")
    assert a.spec_hash == b.spec_hash


def test_yaml_timestamps_are_hashed_as_the_strings_written(load):
    wf = load("settings: {since: 2025-03-01, at: 2025-03-01 09:00:00}\nstates:\n  a: {triggers: {manual: null}}\n")
    assert wf.spec["settings"] == {"since": "2025-03-01", "at": "2025-03-01 09:00:00"}
    assert wf.spec_hash == _expected_hash(wf.spec)


def test_a_metadata_named_key_elsewhere_is_kept(load):
    wf = load("settings: {metadata: kept}\nstates:\n  a: {triggers: {manual: {metadata: kept-too}}}\n")
    assert wf.spec["settings"] == {"metadata": "kept"}
    assert wf.spec["states"]["a"]["triggers"]["manual"] == {"metadata": "kept-too"}


def test_non_string_keys_in_free_form_blocks_hash_as_json_writes_them(load):
    wf = load("settings: {1: one, false: off, null: z, x: 2}\nstates:\n  a: {triggers: {manual: null}}\n")
    assert wf.spec["settings"] == {"1": "one", "false": False, "null": "z", "x": 2}
    assert wf.spec_hash == _expected_hash(wf.spec)


def test_a_binary_value_is_a_load_error_because_json_cannot_hold_it(errors_of):
    assert errors_of("settings: {blob: !!binary aGVsbG8=}\nstates:\n  a: {triggers: {manual: null}}\n") == [
        "settings.blob: a bytes value has no JSON form"
    ]


def test_binary_inside_stripped_metadata_is_harmless(load):
    wf = load("metadata: {blob: !!binary aGVsbG8=}\nstates:\n  a: {triggers: {manual: null}}\n")
    assert "metadata" not in wf.spec
