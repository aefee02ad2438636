"""Every assertion kind, passing and failing, against real sessions driven by scripted models.

Rule source: BEHAVIOUR.md §10.2 (structural and content assertions), §7 (notes are skipped).
"""

from __future__ import annotations

import pytest

from .conftest import case_doc, write_case

LOOKUP = [{"tool": "lookup", "result": {"found": True}}]

SCENARIOS = {
    # start → done, with a host tool call and an agent variable on the way
    "completed": (
        [{"send": "Close ticket T-7."}],
        [
            {"call": {"lookup": {"q": "T-7", "tags": ["a", "b"]}}},
            {"call": {"archmax_set_variables": {"variables": {"ticket": {"id": "T-7", "lines": [1, 2]}}}}},
            {"call": {"archmax_advance": {"to": "done", "reason": "finished"}}},
            {"say": "All done: ticket T-7 closed."},
        ],
    ),
    # parks on input in start, with a resume_at
    "input": (
        [{"send": "Wait for it."}],
        [
            {
                "say": "Waiting for the export.",
                "call": {"archmax_wait": {"reason": "the export", "until": "2h"}},
            }
        ],
    ),
    # advances into the human state: one handoff call, parked on decision
    "decision": (
        [{"send": "Needs review."}],
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "a person must look"}}},
            {"say": "Please review the draft."},
        ],
    ),
    # the decision routes to done, where the agent answers
    "decided": (
        [{"send": "Needs review."}, {"decide": {"to": "done", "comment": "Looks right"}}],
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "a person must look"}}},
            {"say": "Please review the draft."},
            {"say": "Approved and filed."},
        ],
    ),
    "raised": (
        [{"send": "Fetch the data."}],
        [{"call": {"archmax_raise": {"code": "source-down", "reason": "The data source is down (HTTP 503)."}}}],
    ),
    # a forbidden tool is blocked; a bad wait is an error result; then plain text
    "blocked": (
        [{"send": "Try things."}],
        [
            {"call": [{"secret_tool": {"x": 1}}, {"archmax_wait": {"reason": " "}}]},
            {"say": "Could not do it."},
        ],
    ),
    "chat": ([{"send": "Hello?"}], [{"say": "Hello! How can I help?"}]),
    # a delivery into an input park
    "delivered": (
        [{"send": "Wait."}, {"deliver": {"trigger": "export_ready", "variables": {"rows": 42}}}],
        [
            {"say": "Waiting.", "call": {"archmax_wait": {"reason": "the export"}}},
            {"say": "The export has 42 rows."},
        ],
    ),
}

CHECKS = [
    ("completed", {"succeeded": True}, "passed"),
    ("raised", {"succeeded": True}, "failed"),
    ("input", {"succeeded": True}, "failed"),
    ("blocked", {"succeeded": True}, "failed"),  # an error tool result anywhere fails it
    ("input", {"parked": True}, "passed"),
    ("input", {"parked": "input"}, "passed"),
    ("input", {"parked": "decision"}, "failed"),
    ("input", {"parked": {"channel": "input", "state": "start"}}, "passed"),
    ("input", {"parked": {"state": "review"}}, "failed"),
    ("decision", {"parked": {"channel": "decision", "state": "review"}}, "passed"),
    ("completed", {"parked": True}, "failed"),
    ("raised", {"raised": True}, "passed"),
    ("raised", {"raised": "source-down"}, "passed"),
    ("raised", {"raised": "other"}, "failed"),
    ("raised", {"raised": {"reason": "The data source is down (HTTP 503)."}}, "passed"),
    ("raised", {"raised": {"code": "source-down", "reason": "/http 50\\d/i"}}, "passed"),
    ("raised", {"raised": {"reason": "/timeout/"}}, "failed"),
    ("completed", {"raised": True}, "failed"),
    ("completed", {"reachedState": "done"}, "passed"),
    ("completed", {"reachedState": "review"}, "failed"),
    ("chat", {"reachedState": "start"}, "failed"),  # the trigger step into start is not a move
    ("decided", {"reachedState": "done"}, "passed"),
    ("completed", {"trail": {"kind": "agent", "to": "done", "count": 1}}, "passed"),
    ("completed", {"trail": {"kind": "trigger", "reason": "manual", "count": 1}}, "passed"),
    ("completed", {"trail": {"to": "done", "count": 2}}, "failed"),
    ("decided", {"trail": {"kind": "human", "to": "done", "reason": "Looks right", "count": 1}}, "passed"),
    ("chat", {"noTraversal": True}, "passed"),
    ("input", {"noTraversal": True}, "passed"),
    ("completed", {"noTraversal": True}, "failed"),
    ("chat", {"triggerArrival": "manual"}, "passed"),
    ("delivered", {"triggerArrival": "export_ready"}, "passed"),
    ("chat", {"triggerArrival": "export_ready"}, "failed"),
    (
        "delivered",
        {"variables": {"expect": {"rows": 42, "trigger": "export_ready"}, "locked": {"rows": True}}},
        "passed",
    ),
    ("delivered", {"variables": {"expect": {"rows": 42.0}}}, "passed"),
    ("delivered", {"variables": {"expect": {"rows": "42"}}}, "failed"),
    ("completed", {"variables": {"expect": {"ticket": "T-7"}, "path": {"ticket": "id"}}}, "passed"),
    ("completed", {"variables": {"expect": {"ticket": 2}, "path": {"ticket": "lines.-1"}}}, "passed"),
    ("completed", {"variables": {"expect": {"ticket": 2}, "path": {"ticket": "lines.5"}}}, "failed"),
    ("completed", {"variables": {"expect": {"missing": 1}}}, "failed"),
    ("completed", {"variables": {"locked": {"ticket": False}}}, "passed"),
    ("completed", {"variables": {"locked": {"ticket": True}}}, "failed"),
    ("completed", {"reply": {"includes": ["T-7 closed"]}}, "passed"),
    ("completed", {"reply": {"includes": ["/ticket t-\\d/i"]}}, "passed"),
    ("completed", {"reply": {"includes": ["reopened"]}}, "failed"),
    ("completed", {"reply": {"excludes": ["reopened"]}}, "passed"),
    ("completed", {"reply": {"excludes": ["/T-\\d/"]}}, "failed"),
    (
        "delivered",
        {"reply": {"excludes": ["arrived while the session waited"]}},
        "passed",
    ),  # notes are not replies
    ("decision", {"reply": {"includes": ["Please review"]}}, "passed"),  # a handoff message is assistant text
    ("completed", {"calledTool": {"name": "lookup"}}, "passed"),
    ("completed", {"calledTool": "lookup"}, "passed"),
    ("completed", {"calledTool": {"name": "lookup", "input": {"q": "/^T-/", "tags": ["a", "b"]}}}, "passed"),
    ("completed", {"calledTool": {"name": "lookup", "input": {"tags": ["a"]}}}, "failed"),
    ("completed", {"calledTool": {"name": "lookup", "input": {"q": "T-8"}}}, "failed"),
    ("chat", {"calledTool": "lookup"}, "failed"),
    ("delivered", {"calledTool": "archmax_note"}, "failed"),  # note pairs are not calls
    ("chat", {"notCalledTool": "lookup"}, "passed"),
    ("completed", {"notCalledTool": {"name": "lookup", "input": {"q": "T-8"}}}, "passed"),
    ("completed", {"notCalledTool": "lookup"}, "failed"),
    ("blocked", {"blockedTool": "secret_tool"}, "passed"),
    ("blocked", {"blockedTool": {"name": "secret_tool", "input": {"x": 2}}}, "failed"),
    ("blocked", {"blockedTool": "archmax_wait"}, "failed"),  # an error result is not a block
    ("completed", {"blockedTool": "lookup"}, "failed"),
    ("chat", {"usedNoTools": True}, "passed"),
    ("delivered", {"usedNoTools": True}, "failed"),
    ("chat", {"ranWorkflow": {"workflow": "billing", "count": 0}}, "passed"),
    ("chat", {"ranWorkflow": {"workflow": "billing"}}, "failed"),
]


@pytest.mark.parametrize(("scenario", "assertion", "expected"), CHECKS, ids=lambda v: str(v))
def test_assertion_outcome(run, desk, scenario, assertion, expected):
    actions, model = SCENARIOS[scenario]
    write_case(desk, "case.test.yaml", case_doc([*actions, assertion], model, mocks=LOOKUP))

    (case,) = run(desk)["results"]

    kind = next(iter(assertion))
    checks = [r for r in case.records if r.kind.split(".")[0] == kind]
    assert case.error is None, case.error
    assert checks, case.records
    assert {r.status for r in checks} == {expected}, [r.detail for r in checks]
    assert case.verdict.status == expected


def test_reply_records_one_result_per_token(run, desk):
    actions, model = SCENARIOS["completed"]
    doc = case_doc([*actions, {"reply": {"includes": ["T-7", "nope"], "excludes": ["zzz"]}}], model, mocks=LOOKUP)
    write_case(desk, "case.test.yaml", doc)

    (case,) = run(desk)["results"]

    replies = [(r.status, r.detail.split(";")[0]) for r in case.records if r.kind == "reply"]
    assert replies == [
        ("passed", "includes 'T-7'"),
        ("failed", "includes 'nope'"),
        ("passed", "excludes 'zzz'"),
    ]


def test_variables_record_values_and_locks_separately(run, desk):
    actions, model = SCENARIOS["delivered"]
    doc = case_doc([*actions, {"variables": {"expect": {"rows": 42}, "locked": {"rows": False}}}], model)
    write_case(desk, "case.test.yaml", doc)

    (case,) = run(desk)["results"]

    got = [(r.kind, r.status) for r in case.records if r.kind.startswith("variables")]
    assert got == [("variables", "passed"), ("variables.locked", "failed")]


def test_an_assertion_reads_the_view_of_the_nearest_preceding_action(run, desk):
    actions, model = SCENARIOS["delivered"]
    steps = [actions[0], {"parked": "input"}, actions[1], {"succeeded": True}]
    write_case(desk, "case.test.yaml", case_doc(steps, model))

    (case,) = run(desk)["results"]

    assert case.verdict.status == "passed", case.verdict.failures
