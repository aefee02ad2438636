"""Discovery, filters, session ids, suite-level settings and the runner's result.

Rule source: BEHAVIOUR.md §10.1 (discovery, ids, one session per case), §10.3 (runner result,
disabled suites, ``tests.maxConcurrency``), §11 (``test`` exits 1 when the filter matches nothing).
"""

from __future__ import annotations

import pytest

from archmax.cases import discover_cases, run_tests
from archmax.errors import CaseSpecError
from archmax.stores.memory import MemoryStore

from .conftest import case_doc, write_case

OK = case_doc([{"send": "x"}, {"succeeded": True}], [{"say": "fine"}])


def test_cases_are_found_recursively_in_path_order_and_other_files_are_ignored(desk):
    for rel in (
        "z.test.yaml",
        "a/b.test.yml",
        "a/a.test.yaml",
        "notes.yaml",
        "a/x.test.json",
        "fixtures/f.txt",
    ):
        write_case(desk, rel, OK)

    found = discover_cases(desk)

    assert [c.id for c in found] == ["a/a", "a/b", "z"]
    assert [c.display for c in found] == ["tests/a/a.test.yaml", "tests/a/b.test.yml", "tests/z.test.yaml"]


def test_a_workflow_without_tests_discovers_nothing_and_passes(desk, clock):
    result = run_tests(desk, clock=clock)

    assert result == {"results": [], "exit_code": 0, "discovered": 0}


def test_the_filter_is_a_substring_of_the_case_path(desk, clock):
    for rel in ("timer/wake.test.yaml", "timer/double.test.yaml", "reply.test.yaml"):
        write_case(desk, rel, OK)

    result = run_tests(desk, filter="timer/", clock=clock)

    assert [r.id for r in result["results"]] == ["timer/double", "timer/wake"]
    assert result["discovered"] == 2
    assert result["exit_code"] == 0


def test_a_filter_that_matches_nothing_exits_1(desk, clock):
    write_case(desk, "reply.test.yaml", OK)

    result = run_tests(desk, filter="nothing-like-this", clock=clock)

    assert result["results"] == [] and result["exit_code"] == 1


def test_each_case_is_its_own_session_named_from_the_clock_and_the_case_id(desk, clock):
    write_case(desk, "timer/wake.test.yaml", OK)
    write_case(desk, "z.test.yaml", OK)
    store = MemoryStore()

    result = run_tests(desk, clock=clock, store=store)

    # 2025-01-01T00:00:00.000Z is 1735689600000 ms
    assert [r.session_id for r in result["results"]] == [
        "test-1735689600000-timer-wake",
        "test-1735689600000-z",
    ]
    assert sorted(store.list()) == ["test-1735689600000-timer-wake", "test-1735689600000-z"]


def test_each_case_gets_a_fresh_memory_store_by_default(desk, clock):
    # the same case twice under one id: a shared store would continue the first session's transcript
    write_case(
        desk,
        "a/same.test.yaml",
        case_doc([{"send": "x"}, {"reply": {"excludes": ["first"]}}], [{"say": "second"}]),
    )
    write_case(desk, "a-same.test.yaml", case_doc([{"send": "x"}], [{"say": "first"}]))

    result = run_tests(desk, clock=clock)

    assert [r.session_id for r in result["results"]] == ["test-1735689600000-a-same"] * 2
    assert [r.verdict.status for r in result["results"]] == ["passed", "passed"]


def test_a_skipped_case_runs_nothing(desk, clock):
    write_case(desk, "later.test.yaml", case_doc([{"send": "x"}], [{"say": "x"}], skip="waiting on the billing API"))

    result = run_tests(desk, clock=clock)

    (case,) = result["results"]
    assert case.verdict.status == "skipped"
    assert case.skip_reason == "waiting on the billing API"
    assert case.session_id is None and case.records == []
    assert result["exit_code"] == 0


def test_a_disabled_workflow_skips_the_suite(desk, clock):
    (desk / "workflow.yaml").write_text("disabled: true\n" + (desk / "workflow.yaml").read_text())
    write_case(desk, "a.test.yaml", OK)

    result = run_tests(desk, clock=clock)

    assert result == {"results": [], "exit_code": 0, "discovered": 1, "skipped": "disabled"}


def test_max_concurrency_above_one_is_refused(desk, clock):
    text = (desk / "workflow.yaml").read_text().replace("caseTimeoutMs: 60000", "maxConcurrency: 4")
    (desk / "workflow.yaml").write_text(text)

    with pytest.raises(CaseSpecError, match="at 'tests.maxConcurrency': is 4, but cases run one at a time"):
        run_tests(desk, clock=clock)


def test_a_workflow_that_does_not_load_fails_every_case(desk, clock):
    (desk / "workflow.yaml").write_text("states: {}\n")
    write_case(desk, "a.test.yaml", OK)

    result = run_tests(desk, clock=clock)

    (case,) = result["results"]
    assert case.error.startswith("the workflow does not load:")
    assert result["exit_code"] == 1


def test_one_failing_case_makes_the_exit_code_1(desk, clock):
    write_case(desk, "a.test.yaml", OK)
    write_case(desk, "b.test.yaml", case_doc([{"send": "x"}, {"reachedState": "done"}], [{"say": "x"}]))

    result = run_tests(desk, clock=clock)

    assert [r.verdict.status for r in result["results"]] == ["passed", "failed"]
    assert result["exit_code"] == 1
