"""Argument guards on tool entries (§2.3 governance; seed: guards bind to delivered variables)."""

from __future__ import annotations

WORKFLOW = """
tools:
  allow_always:
    - {tool: lookup_order, args: {region: ['eu-*']}}
    - write_file
  forbid_always:
    - {tool: '*', paths: ['secrets/**']}
states:
  reply:
    triggers: {manual: null}
    tools:
      allow:
        - {tool: send_email, args: {to: ['${{customer_email}}']}}
        - {tool: write_file, paths: ['reports/*.json']}
      forbid:
        - {tool: send_email, args: {subject: ['*URGENT*']}}
  other:
    triggers: {x: null}
"""

VARS = {"customer_email": "ann@example.com"}


def test_a_guarded_grant_permits_only_matching_calls(load):
    wf = load(WORKFLOW)
    assert wf.guard_refusal("reply", "send_email", {"to": "ann@example.com"}, VARS) is None
    assert wf.guard_refusal("reply", "send_email", {"to": "eve@example.com"}, VARS) is not None
    assert wf.guard_refusal("reply", "send_email", {}, VARS) is not None


def test_a_variable_in_a_guard_is_matched_literally_so_it_cannot_widen_the_guard(load):
    wf = load(WORKFLOW)
    sneaky = {"customer_email": "*"}
    assert wf.guard_refusal("reply", "send_email", {"to": "eve@example.com"}, sneaky) is not None
    assert wf.guard_refusal("reply", "send_email", {"to": "*"}, sneaky) is None


def test_an_unresolvable_reference_refuses_the_grant(load):
    wf = load(WORKFLOW)
    assert wf.guard_refusal("reply", "send_email", {"to": "ann@example.com"}, {}) is not None


def test_the_state_entry_is_narrower_than_the_root_grant_and_wins(load):
    wf = load(WORKFLOW)
    assert wf.guard_refusal("other", "write_file", {"file_path": "anything.txt"}, VARS) is None
    assert wf.guard_refusal("reply", "write_file", {"file_path": "reports/a.json"}, VARS) is None
    assert wf.guard_refusal("reply", "write_file", {"file_path": "reports/deep/a.json"}, VARS) is not None


def test_double_star_spans_segments_and_covers_dotfiles_in_a_denial(load):
    wf = load(WORKFLOW)
    assert wf.guard_refusal("other", "write_file", {"file_path": "secrets/.env"}, VARS) is not None
    assert wf.guard_refusal("other", "write_file", {"file_path": "secrets/a/b.txt"}, VARS) is not None


def test_a_guarded_denial_blocks_matching_calls_only(load):
    wf = load(WORKFLOW)
    ok = {"to": "ann@example.com", "subject": "Your order"}
    urgent = {"to": "ann@example.com", "subject": "Re: URGENT refund"}
    assert wf.guard_refusal("reply", "send_email", ok, VARS) is None
    assert wf.guard_refusal("reply", "send_email", urgent, VARS) is not None


def test_root_grant_guards_apply_where_the_state_says_nothing(load):
    wf = load(WORKFLOW)
    assert wf.guard_refusal("other", "lookup_order", {"region": "eu-west"}, VARS) is None
    assert wf.guard_refusal("other", "lookup_order", {"region": "us-east"}, VARS) is not None
    assert wf.guard_refusal("other", "lookup_order", {"region": 7}, VARS) is not None


def test_a_denial_guard_that_cannot_be_evaluated_blocks(load):
    wf = load(WORKFLOW)
    assert wf.guard_refusal("other", "write_file", {"file_path": ["secrets/.env"]}, VARS) is not None
