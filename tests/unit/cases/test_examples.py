"""The seed's case and every example workflow's cases, run the way CI runs ``archmax test``.

Rule source: seed "Testing a park-and-resume flow"; issue 6 ("Done when"); BEHAVIOUR.md §10.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from archmax.cases import run_tests

from .conftest import EXAMPLES

EXAMPLE_WORKFLOWS = sorted(p.parent for p in EXAMPLES.glob("*/workflow.yaml"))


def copy_workflow(slug: str, tmp_path: Path) -> Path:
    target = tmp_path / "workflows" / slug
    shutil.copytree(EXAMPLES / slug, target)
    return target


def test_the_seeds_case_runs_green_against_support_inbox(clock):
    result = run_tests(EXAMPLES / "support-inbox", filter="park-and-resume", clock=clock)

    (case,) = result["results"]
    assert case.verdict.status == "passed", case.verdict.failures
    assert [r.kind for r in case.records] == [
        "send",
        "parked",
        "deliver",
        "succeeded",
        "reachedState",
        "reply",
    ]
    assert result["exit_code"] == 0


def test_the_seeds_case_holds_the_seeds_steps_verbatim():
    doc = yaml.safe_load((EXAMPLES / "support-inbox/tests/park-and-resume.test.yaml").read_text(encoding="utf-8"))

    assert doc["variables"] == {"conversation_id": "AAQk-test-1"}
    assert doc["steps"] == [
        {"send": "About the thing we discussed on the phone — can you sort it out?"},
        {"parked": {"channel": "input", "state": "clarify"}},
        {"deliver": {"trigger": "email_reply", "variables": {"reply_body": "It's ORD-1001."}}},
        {"succeeded": True},
        {"reachedState": "answer"},
        {"reply": {"includes": ["ORD-1001"]}},
    ]


def test_the_seeds_case_turns_red_when_clarify_can_no_longer_reach_answer(tmp_path, clock):
    folder = copy_workflow("support-inbox", tmp_path)
    spec = yaml.safe_load((folder / "workflow.yaml").read_text(encoding="utf-8"))
    spec["states"]["clarify"]["transitions"] = [
        t for t in spec["states"]["clarify"]["transitions"] if t["to"] != "answer"
    ]
    (folder / "workflow.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")

    result = run_tests(folder, filter="park-and-resume", clock=clock)

    (case,) = result["results"]
    assert case.verdict.status == "failed"
    assert result["exit_code"] == 1
    # the advance to answer is refused, so the script's answer entry finds the session still in clarify
    assert "model response 4 expected state 'answer' but the session is in 'clarify'" in case.error


def test_the_seeds_case_turns_red_when_clarify_stops_waiting(tmp_path, clock):
    folder = copy_workflow("support-inbox", tmp_path)
    text = (folder / "workflow.yaml").read_text(encoding="utf-8")
    (folder / "workflow.yaml").write_text(
        text.replace("states:\n", 'policy:\n  forbid_tools: ["archmax_wait"]\nstates:\n', 1)
    )

    result = run_tests(folder, filter="park-and-resume", clock=clock)

    (case,) = result["results"]
    assert case.verdict.status == "failed"
    parked = next(r for r in case.records if r.kind == "parked")
    assert parked.status == "failed"
    assert {r.status for r in case.records[2:]} == {"not-executed"}


@pytest.mark.parametrize("folder", EXAMPLE_WORKFLOWS, ids=lambda p: p.name)
def test_every_example_workflows_cases_pass(folder, clock):
    result = run_tests(folder, clock=clock)

    assert result["discovered"] >= 4
    failed = {r.id: r.verdict.failures for r in result["results"] if r.verdict.status == "failed"}
    assert failed == {}
    assert result["exit_code"] == 0


@pytest.mark.parametrize(
    ("slug", "case_path"),
    [
        ("support-inbox", "refused/reply-after-close.test.yaml"),
        ("bank-check", "refused/double-fired-timer.test.yaml"),
    ],
)
def test_the_skipped_refused_delivery_examples_fail_on_the_refusal_when_run(tmp_path, clock, slug, case_path):
    folder = copy_workflow(slug, tmp_path)
    path = folder / "tests" / case_path
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    del doc["skip"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")

    result = run_tests(folder, filter=case_path, clock=clock)

    (case,) = result["results"]
    assert case.verdict.status == "failed"
    assert case.error.startswith("SessionNotAwaitingInputError:")
    assert "its status is 'completed'" in case.error
    assert [(r.kind, r.status) for r in case.records] == [
        ("send", "passed"),
        ("deliver", "passed"),
        ("succeeded", "passed"),
        ("deliver", "failed"),
        ("succeeded", "not-executed"),
    ]
