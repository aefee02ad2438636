"""``format_results`` and the JSON form.

Rule source: issue 6 (a readable verdict line per case, ✔ / ✖ / ○, with the failure details),
BEHAVIOUR.md §11 (``suite skipped — disabled``).
"""

from __future__ import annotations

import json

from archmax.cases import format_results, results_to_json, run_tests

from .conftest import case_doc, write_case


def test_each_case_gets_a_verdict_line_and_failures_are_detailed(desk, clock):
    write_case(
        desk,
        "a-pass.test.yaml",
        case_doc([{"send": "x"}, {"succeeded": True}], [{"say": "ok"}], title="Passes"),
    )
    write_case(
        desk,
        "b-fail.test.yaml",
        case_doc([{"send": "x"}, {"reachedState": "done"}, {"succeeded": True}], [{"say": "ok"}], title="Fails"),
    )
    write_case(desk, "c-skip.test.yaml", case_doc([{"send": "x"}], title="Later", skip="not yet"))

    text = format_results(run_tests(desk, clock=clock))

    assert text.splitlines() == [
        "✔ a-pass — Passes",
        "✖ b-fail — Fails",
        "    step 2 reachedState: expected a move into 'done'; moves: (none)",
        "    (1 later step not executed)",
        "○ c-skip — Later (skipped: not yet)",
        "3 cases: 1 passed, 1 failed, 1 skipped",
    ]


def test_a_dead_case_shows_its_error_first(desk, clock):
    write_case(
        desk,
        "a.test.yaml",
        case_doc([{"send": "x"}, {"deliver": {"trigger": "t"}}], [{"say": "ok"}], title="Dies"),
    )

    lines = format_results(run_tests(desk, clock=clock)).splitlines()

    assert lines[0] == "✖ a — Dies"
    assert lines[1].startswith("    SessionNotAwaitingInputError: session 'test-1735689600000-a' is not parked")


def test_a_disabled_suite_and_an_empty_filter_say_so():
    assert format_results({"results": [], "exit_code": 0, "discovered": 3, "skipped": "disabled"}) == (
        "suite skipped — disabled"
    )
    assert format_results({"results": [], "exit_code": 1, "discovered": 0, "filter": "zz"}) == (
        "no case matches filter 'zz'"
    )


def test_the_json_form_round_trips_through_json(desk, clock):
    write_case(desk, "a.test.yaml", case_doc([{"send": "x"}, {"succeeded": True}], [{"say": "ok"}]))

    data = json.loads(json.dumps(results_to_json(run_tests(desk, clock=clock))))

    assert data["exit_code"] == 0
    assert data["results"][0]["verdict"] == {"status": "passed", "failures": []}
    assert data["results"][0]["records"][1] == {
        "kind": "succeeded",
        "status": "passed",
        "step": 2,
        "threshold": None,
        "score": None,
        "detail": "status 'completed' in 'start', no raise, no error results",
    }
