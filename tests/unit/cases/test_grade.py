"""The ``grade`` assertion against a judge model (here a scripted one standing in for ``tests.judge``).

Rule source: BEHAVIOUR.md §10.2 (``grade``: score clamped to 0..1, ≥ ``atLeast``; needs
``tests.judge``; a non-JSON answer gets one retry, then scores 0), §7 (notes in grader evidence).
"""

from __future__ import annotations

from archmax.cases import run_tests
from archmax.cases.judge import evidence
from archmax.models.scripted import ScriptedModel
from archmax.session.notes import make_note
from archmax.session.records import Message

from .conftest import case_doc, write_case

STEPS = [
    {"send": "Where is ORD-1?"},
    {"grade": {"closedQA": "Does the reply name the order?", "atLeast": 0.7}},
]
AGENT = [{"say": "ORD-1 ships tomorrow."}]


def grade_record(desk, clock, judge):
    write_case(desk, "g.test.yaml", case_doc(STEPS, AGENT))
    (case,) = run_tests(desk, clock=clock, judge=judge)["results"]
    (record,) = [r for r in case.records if r.kind == "grade"]
    return case, record


def test_a_score_at_or_above_the_threshold_passes(desk, clock):
    case, record = grade_record(desk, clock, ScriptedModel([{"say": '{"score": 0.9, "reason": "it does"}'}]))

    assert (record.status, record.score, record.threshold) == ("passed", 0.9, 0.7)
    assert case.verdict.status == "passed"


def test_a_score_below_the_threshold_fails_without_halting(desk, clock):
    case, record = grade_record(desk, clock, ScriptedModel([{"say": '```json\n{"score": 0.2}\n```'}]))

    assert (record.status, record.score) == ("failed", 0.2)
    assert case.verdict.status == "failed"


def test_a_score_outside_0_to_1_is_clamped(desk, clock):
    _, record = grade_record(desk, clock, ScriptedModel([{"say": '{"score": 7}'}]))

    assert (record.status, record.score) == ("passed", 1.0)


def test_a_non_json_answer_gets_one_retry(desk, clock):
    judge = ScriptedModel([{"say": "Yes, clearly."}, {"say": '{"score": 1}'}])

    _, record = grade_record(desk, clock, judge)

    assert (record.status, record.score) == ("passed", 1.0)
    assert judge.remaining == 0


def test_two_non_json_answers_score_zero(desk, clock):
    _, record = grade_record(desk, clock, ScriptedModel([{"say": "Yes."}, {"say": "I said yes."}]))

    assert (record.status, record.score) == ("failed", 0.0)
    assert "scored 0" in record.detail


def test_grade_without_a_judge_fails_and_says_tests_judge_is_needed(desk, clock):
    _, record = grade_record(desk, clock, None)

    assert record.status == "failed"
    assert record.detail == "grade needs a judge: set tests.judge in workflow.yaml"


def test_tests_judge_in_the_workflow_names_the_judge_model(desk, clock):
    (desk / "judge.yaml").write_text("- say: '{\"score\": 0.8}'\n")
    text = (desk / "workflow.yaml").read_text().replace("caseTimeoutMs: 60000", "judge: scripted:judge.yaml")
    (desk / "workflow.yaml").write_text(text)

    _, record = grade_record(desk, clock, None)

    assert (record.status, record.score) == ("passed", 0.8)


def test_grader_evidence_shows_notes_as_runtime_lines():
    call, result = make_note("event", "[event] 'timer' arrived while the session waited in 'start'.")
    messages = [Message(role="user", content="hi"), call, result, Message(role="assistant", content="Done.")]

    assert evidence(messages).splitlines() == [
        "[user] hi",
        "[runtime:event] [event] 'timer' arrived while the session waited in 'start'.",
        "[assistant] Done.",
    ]
