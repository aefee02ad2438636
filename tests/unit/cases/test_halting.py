"""Actions, halting rules, dead cases, the model script and the case timeout.

Rule source: BEHAVIOUR.md §10.2 (actions), §10.3 (halting, records), §10.4 (``expect_state``,
exhaustion, ``model.unconsumed``).
"""

from __future__ import annotations

import threading

from archmax.cases import run_tests

from .conftest import case_doc, statuses, write_case

WAIT = [{"say": "Waiting.", "call": {"archmax_wait": {"reason": "the export"}}}]


def test_a_failed_structural_assertion_halts_the_case_and_marks_later_steps_not_executed(run, desk):
    steps = [
        {"send": "go"},
        {"succeeded": True},
        {"reply": {"includes": ["Waiting"]}},
        {"deliver": {"trigger": "x"}},
    ]
    write_case(desk, "c.test.yaml", case_doc(steps, WAIT + [{"say": "unused"}]))

    (case,) = run(desk)["results"]

    assert statuses(case) == [
        ("send", "passed"),
        ("succeeded", "failed"),
        ("reply", "not-executed"),
        ("deliver", "not-executed"),
    ]
    assert case.error is None
    assert case.verdict.failures == ["step 2 succeeded: the session is parked on 'input' in 'start'"]
    # a halted case never reached its end, so leftover script entries are not reported
    assert all(r.kind != "model.unconsumed" for r in case.records)


def test_a_failed_content_assertion_lets_the_case_go_on(run, desk):
    steps = [
        {"send": "go"},
        {"reply": {"includes": ["nothing like this"]}},
        {"deliver": {"trigger": "x"}},
        {"succeeded": True},
    ]
    write_case(desk, "c.test.yaml", case_doc(steps, WAIT + [{"say": "Done."}]))

    (case,) = run(desk)["results"]

    assert statuses(case) == [
        ("send", "passed"),
        ("reply", "failed"),
        ("deliver", "passed"),
        ("succeeded", "passed"),
    ]
    assert case.verdict.status == "failed"


def test_send_deliver_and_decide_each_drive_the_session(run, desk):
    model = [
        {"call": {"archmax_advance": {"to": "review", "reason": "check"}}},
        {"say": "Please review."},
        {"call": {"archmax_wait": {"reason": "the signed copy"}}, "say": "Send the signed copy."},
        {"say": "Filed."},
    ]
    steps = [
        {"send": "draft ready"},
        {"parked": "decision"},
        {"decide": {"to": "start", "comment": "sign it first"}},
        {"parked": {"channel": "input", "state": "start"}},
        {"deliver": {"trigger": "signed", "variables": {"copy": "scan.pdf"}}},
        {"succeeded": True},
    ]
    write_case(desk, "c.test.yaml", case_doc(steps, model))

    (case,) = run(desk)["results"]

    assert case.verdict.status == "passed", case.verdict.failures
    assert [r.detail for r in case.records if r.kind in ("send", "decide", "deliver")] == [
        "turn → parked in 'review'",
        "decide → parked in 'start'",
        "deliver → completed in 'start'",
    ]


def test_a_delivery_to_a_session_that_is_not_parked_kills_the_case(run, desk):
    steps = [{"send": "hi"}, {"deliver": {"trigger": "timer"}}, {"succeeded": True}]
    write_case(desk, "c.test.yaml", case_doc(steps, [{"say": "Hello."}]))

    (case,) = run(desk)["results"]

    assert case.error.startswith("SessionNotAwaitingInputError: session 'test-")
    assert "is not parked awaiting an event: its status is 'completed'" in case.error
    assert statuses(case) == [("send", "passed"), ("deliver", "failed"), ("succeeded", "not-executed")]
    assert case.verdict.failures[0] == case.error  # the error is listed first


def test_a_decision_on_a_session_not_parked_at_a_human_state_kills_the_case(run, desk):
    write_case(desk, "c.test.yaml", case_doc([{"send": "hi"}, {"decide": {"to": "done"}}], [{"say": "Hello."}]))

    (case,) = run(desk)["results"]

    assert case.error.startswith("SessionNotParkedError:")
    assert statuses(case) == [("send", "passed"), ("decide", "failed")]


def test_a_decision_to_an_edge_the_park_does_not_offer_kills_the_case(run, desk):
    model = [{"call": {"archmax_advance": {"to": "review", "reason": "check"}}}, {"say": "Please review."}]
    write_case(desk, "c.test.yaml", case_doc([{"send": "x"}, {"decide": {"to": "nowhere"}}], model))

    (case,) = run(desk)["results"]

    assert case.error.startswith("InvalidDecisionTargetError: 'nowhere' is not a valid decision target")


def test_a_refused_start_kills_the_case(run, desk):
    # trigger 'ping' requires 'token', which the case does not supply
    write_case(
        desk,
        "c.test.yaml",
        case_doc([{"send": "hi"}, {"succeeded": True}], [{"say": "x"}], trigger={"id": "ping"}),
    )

    (case,) = run(desk)["results"]

    assert case.error == (
        "the start was refused: Refusing to start: trigger 'ping' requires 'token', which this firing does not supply."
    )
    assert statuses(case) == [("send", "failed"), ("succeeded", "not-executed")]


def test_case_variables_are_seeded_locked_on_each_driven_turn(run, desk):
    steps = [
        {"send": "first"},
        {"send": "second"},
        {"variables": {"expect": {"token": "abc"}, "locked": {"token": True}}},
        {"trail": {"kind": "trigger", "reason": "ping", "count": 2}},
    ]
    write_case(
        desk,
        "c.test.yaml",
        case_doc(steps, [{"say": "one"}, {"say": "two"}], trigger={"id": "ping"}, variables={"token": "abc"}),
    )

    (case,) = run(desk)["results"]

    assert case.verdict.status == "passed", case.verdict.failures


def test_an_expect_state_mismatch_kills_the_case_with_the_scripts_message(run, desk):
    model = [{"say": "hi", "expect_state": "done"}]
    write_case(desk, "c.test.yaml", case_doc([{"send": "hi"}, {"succeeded": True}], model))

    (case,) = run(desk)["results"]

    assert case.error == "ModelScriptError: model response 1 expected state 'done' but the session is in 'start'"
    assert statuses(case) == [("send", "failed"), ("succeeded", "not-executed")]


def test_an_exhausted_script_kills_the_case(run, desk):
    steps = [{"send": "hi"}, {"deliver": {"trigger": "x"}}, {"succeeded": True}]
    write_case(desk, "c.test.yaml", case_doc(steps, WAIT))

    (case,) = run(desk)["results"]

    assert case.error == "ModelScriptError: model script exhausted after 1 responses (state 'start')"
    assert statuses(case) == [("send", "passed"), ("deliver", "failed"), ("succeeded", "not-executed")]


def test_leftover_script_entries_fail_the_case_as_model_unconsumed(run, desk):
    write_case(
        desk,
        "c.test.yaml",
        case_doc([{"send": "hi"}, {"succeeded": True}], [{"say": "a"}, {"say": "b"}, {"say": "c"}]),
    )

    (case,) = run(desk)["results"]

    assert case.records[-1].kind == "model.unconsumed"
    assert case.records[-1].status == "failed"
    assert case.records[-1].detail == "2 script entries were never used"
    assert case.verdict.status == "failed"


def test_tool_call_ids_count_from_one_in_every_case(run, desk):
    model = [{"call": {"lookup": {"q": 1}}}, {"say": "ok"}]
    mocks = [{"tool": "lookup", "result": "fine"}]
    for name in ("a", "b"):
        write_case(desk, f"{name}.test.yaml", case_doc([{"send": "x"}, {"succeeded": True}], model, mocks=mocks))
    stores = []

    def factory():
        from archmax.stores.memory import MemoryStore

        stores.append(MemoryStore())
        return stores[-1]

    results = run(desk, store_factory=factory)["results"]

    for case, store in zip(results, stores, strict=True):
        calls = [c.id for m in store.load(case.session_id).messages for c in m.tool_calls if c.name == "lookup"]
        assert calls == ["call_1"]


def test_mocks_answer_by_input_first_match_wins_and_an_unmatched_call_is_an_error_result(run, desk):
    mocks = [
        {"tool": "lookup", "whenInput": {"q": "/^A/"}, "result": "alpha"},
        {"tool": "lookup", "whenInput": {"q": "/^A/"}, "result": "shadowed"},
        {"tool": "lookup", "whenInput": {"q": "B"}, "result": {"b": True}},
    ]
    model = [
        {"call": [{"lookup": {"q": "Apple"}}, {"lookup": {"q": "B"}}, {"lookup": {"q": "C"}}]},
        {"say": "done"},
    ]
    stores = []

    def factory():
        from archmax.stores.memory import MemoryStore

        stores.append(MemoryStore())
        return stores[-1]

    write_case(desk, "c.test.yaml", case_doc([{"send": "x"}, {"reachedState": "done"}], model, mocks=mocks))
    (case,) = run(desk, store_factory=factory)["results"]

    results = [(m.status, m.content) for m in stores[0].load(case.session_id).messages if m.role == "tool"]
    assert results[0] == ("success", "alpha")
    assert results[1] == ("success", '{"b": true}')
    assert results[2][0] == "error" and "no mock of 'lookup' matches the input" in results[2][1]


def test_a_mock_falls_through_to_a_real_host_tool_when_no_mock_matches(run, desk):
    def lookup(q: str) -> str:
        return f"real:{q}"

    mocks = [{"tool": "lookup", "whenInput": {"q": "A"}, "result": "mocked"}]
    model = [{"call": [{"lookup": {"q": "A"}}, {"lookup": {"q": "Z"}}]}, {"say": "done"}]
    steps = [{"send": "x"}, {"succeeded": True}]
    stores = []

    def factory():
        from archmax.stores.memory import MemoryStore

        stores.append(MemoryStore())
        return stores[-1]

    write_case(desk, "c.test.yaml", case_doc(steps, model, mocks=mocks))
    (case,) = run(desk, store_factory=factory, tools=[lookup])["results"]

    assert case.verdict.status == "passed", case.verdict.failures
    results = [m.content for m in stores[0].load(case.session_id).messages if m.role == "tool"]
    assert results == ["mocked", "real:Z"]


def test_a_case_that_exceeds_case_timeout_ms_dies_and_the_suite_goes_on(desk, clock):
    text = (desk / "workflow.yaml").read_text().replace("caseTimeoutMs: 60000", "caseTimeoutMs: 1")
    (desk / "workflow.yaml").write_text(text)
    release = threading.Event()

    def lookup(q: str) -> str:
        release.wait()  # holds the action until the test lets go: the case's budget runs out meanwhile
        return "late"

    model = [{"call": {"lookup": {"q": "x"}}}, {"say": "done"}]
    write_case(desk, "a.test.yaml", case_doc([{"send": "x"}, {"succeeded": True}], model))
    write_case(desk, "b.test.yaml", case_doc([{"send": "x"}], [{"say": "hi"}]))
    try:
        result = run_tests(desk, clock=clock, tools=[lookup])
    finally:
        release.set()

    slow, other = result["results"]
    assert slow.error == "the case exceeded tests.caseTimeoutMs (1 ms)"
    assert statuses(slow) == [("send", "failed"), ("succeeded", "not-executed")]
    assert other.id == "b"


def test_a_case_without_model_uses_the_model_given_to_run_tests(run, desk):
    from archmax.models.scripted import ScriptedModel

    write_case(desk, "c.test.yaml", case_doc([{"send": "x"}, {"reply": {"includes": ["from the host"]}}]))

    (case,) = run(desk, model=ScriptedModel([{"say": "from the host model"}]))["results"]

    assert case.verdict.status == "passed", case.verdict.failures


def test_a_case_without_model_and_no_configured_model_dies_with_the_configuration_error(run, desk, monkeypatch):
    monkeypatch.delenv("ARCHMAX_MODEL", raising=False)
    write_case(desk, "c.test.yaml", case_doc([{"send": "x"}, {"succeeded": True}]))

    (case,) = run(desk)["results"]

    assert case.error.startswith("ModelConfigurationError: no model is configured")
