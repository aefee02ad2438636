"""Case file schema: strict keys, one-key steps, bodies; every error names the key and the case file.

Rule source: BEHAVIOUR.md §10.1, §10.2, §10.4; issue 6 ("schema errors name the key and the case file").
"""

from __future__ import annotations

import pytest

from .conftest import case_doc, write_case

SEND = {"send": "hello"}


def error_of(run, desk, doc):
    write_case(desk, "bad.test.yaml", doc)
    (case,) = run(desk)["results"]
    assert case.verdict.status == "failed"
    assert case.records == []
    return case.error


def test_an_unknown_top_level_key_names_the_file_and_the_key_and_lists_the_known_keys(run, desk):
    error = error_of(run, desk, case_doc([SEND], name="oops"))

    assert error.startswith("tests/bad.test.yaml at 'name': unknown key 'name'")
    assert "known keys: title, description, skip, trigger, variables, workspace, mocks, model, steps" in error


@pytest.mark.parametrize(
    ("change", "key", "fragment"),
    [
        ({"title": None}, "title", "is required"),
        ({"title": "x" * 61}, "title", "61 characters; at most 60"),
        ({"title": "two\nlines"}, "title", "must be one line"),
        ({"description": None}, "description", "is required"),
        ({"description": "word " * 41}, "description", "at most 200"),
        ({"skip": "  "}, "skip", "non-empty reason"),
        ({"trigger": "ping"}, "trigger", "mapping {id"),
        ({"trigger": {"id": "ping", "name": "x"}}, "trigger.name", "unknown key 'name'; known keys: id"),
        ({"variables": {"Bad-Name": 1}}, "variables.Bad-Name", "must match"),
        ({"mocks": [{"tool": "archmax_wait", "result": 1}]}, "mocks.0.tool", "cannot be mocked"),
        ({"mocks": [{"tool": "lookup"}]}, "mocks.0.result", "is required"),
        (
            {"mocks": [{"tool": "lookup", "result": 1, "when": {}}]},
            "mocks.0.when",
            "known keys: tool, whenInput, result",
        ),
        (
            {"mocks": [{"tool": "lookup", "whenInput": {"q": "/(/"}, "result": 1}]},
            "mocks.0.whenInput",
            "bad regex",
        ),
        ({"model": [{"sey": "hi"}]}, "model", "unknown key(s) 'sey'"),
        ({"workspace": {"../x.txt": "a"}}, "workspace.../x.txt", ""),
        (
            {"workspace": {"notes.md": {"from": "../../workflow.yaml"}}},
            "workspace.notes.md.from",
            "escapes tests/",
        ),
        (
            {"workspace": {"notes.md": {"from": "fixtures/none.md"}}},
            "workspace.notes.md.from",
            "does not exist",
        ),
    ],
)
def test_a_bad_top_level_value_names_its_key(run, desk, change, key, fragment):
    doc = case_doc([SEND])
    for k, v in change.items():
        if v is None:
            doc.pop(k)
        else:
            doc[k] = v

    error = error_of(run, desk, doc)

    assert error.startswith(f"tests/bad.test.yaml at '{key}':")
    assert fragment in error


def test_a_mock_may_name_a_sub_workflow_tool(run, desk):
    doc = case_doc(
        [SEND, {"succeeded": True}],
        [{"say": "done"}],
        mocks=[{"tool": "archmax_workflow_billing", "result": "ok"}],
    )
    write_case(desk, "ok.test.yaml", doc)

    (case,) = run(desk)["results"]

    assert case.verdict.status == "passed", case.verdict.failures


@pytest.mark.parametrize(
    ("steps", "key", "fragment"),
    [
        ([{"send": "a", "parked": True}], "steps.0", "a step declares exactly one key"),
        (["send"], "steps.0", "a step declares exactly one key"),
        (
            [SEND, {"finished": True}],
            "steps.1.finished",
            "unknown step key 'finished'; actions: send, decide, deliver",
        ),
        ([{"succeeded": True}, SEND], "steps.0.succeeded", "comes before the first action"),
        ([{"send": "  "}], "steps.0.send", "non-empty text"),
        ([{"deliver": {"trigger": " "}}], "steps.0.deliver", "'trigger' must be a non-empty string"),
        ([{"deliver": {"trigger": "t", "variables": {"Bad": 1}}}], "steps.0.deliver", "must match"),
        ([{"deliver": {"trigger": "t", "extra": 1}}], "steps.0.deliver", "extra"),
        ([{"decide": {"comment": "x"}}], "steps.0.decide", "to"),
        ([SEND, {"raised": {}}], "steps.1.raised", "an empty mapping is an error"),
        ([SEND, {"raised": {"reason": "/[/"}}], "steps.1.raised", "bad regex"),
        ([SEND, {"trail": {"count": 1}}], "steps.1.trail", "at least one matcher"),
        ([SEND, {"trail": {"to": "done"}}], "steps.1.trail", "count"),
        ([SEND, {"reply": {"includes": ["/(unclosed/"]}}], "steps.1.reply", "bad regex"),
        ([SEND, {"reply": {"includes": ["/x/q"]}}], "steps.1.reply", "unknown regex flag 'q'"),
        ([SEND, {"reply": {}}], "steps.1.reply", "includes"),
        ([SEND, {"succeeded": False}], "steps.1.succeeded", ""),
        ([SEND, {"parked": "later"}], "steps.1.parked", ""),
        (
            [SEND, {"variables": {"expect": {"a": 1}, "path": {"b": "x"}}}],
            "steps.1.variables",
            "'path' names 'b'",
        ),
        ([SEND, {"variables": {}}], "steps.1.variables", "expect"),
        ([SEND, {"grade": {"closedQA": "ok?", "atLeast": 2}}], "steps.1.grade", "atLeast"),
        ([SEND, {"ranWorkflow": {"status": "ok"}}], "steps.1.ranWorkflow", "workflow"),
    ],
)
def test_a_bad_step_names_its_position_and_key(run, desk, steps, key, fragment):
    error = error_of(run, desk, case_doc(steps))

    assert error.startswith(f"tests/bad.test.yaml at '{key}':"), error
    assert fragment in error


def test_missing_steps_is_an_error(run, desk):
    doc = case_doc([])
    del doc["steps"]

    assert "at 'steps': is required" in error_of(run, desk, doc)


def test_invalid_yaml_fails_that_case_and_the_suite_goes_on(run, desk):
    write_case(desk, "a-broken.test.yaml", "title: [unclosed\n")
    write_case(desk, "b-good.test.yaml", case_doc([SEND, {"succeeded": True}], [{"say": "hi"}]))

    result = run(desk)

    broken, good = result["results"]
    assert broken.verdict.status == "failed" and "tests/a-broken.test.yaml" in broken.error
    assert "not valid YAML" in broken.error
    assert good.verdict.status == "passed"
    assert result["exit_code"] == 1


def test_a_workspace_fixture_is_read_from_tests_and_seeded(run, desk):
    (desk / "tests" / "fixtures").mkdir(parents=True)
    (desk / "tests" / "fixtures" / "brief.md").write_text("# Brief\n", encoding="utf-8")
    doc = case_doc(
        [SEND, {"succeeded": True}],
        [{"say": "read it"}],
        workspace={"notes.md": {"from": "fixtures/brief.md"}, "scratchpad/data.json": {"a": 1}},
    )
    stores = []

    def factory():
        from archmax.stores.memory import MemoryStore

        stores.append(MemoryStore())
        return stores[-1]

    write_case(desk, "ws.test.yaml", doc)
    (case,) = run(desk, store_factory=factory)["results"]

    assert case.verdict.status == "passed", case.verdict.failures
    assert stores[0].get(case.session_id, "notes.md") == b"# Brief\n"
    assert b'"a": 1' in stores[0].get(case.session_id, "scratchpad/data.json")


def test_a_case_trigger_the_workflow_does_not_declare_kills_the_case_before_any_step(run, desk):
    write_case(desk, "t.test.yaml", case_doc([SEND, {"succeeded": True}], [{"say": "x"}], trigger={"id": "nope"}))

    (case,) = run(desk)["results"]

    assert "at 'trigger.id': trigger 'nope' is not declared; declared: 'manual', 'ping'" in case.error
    assert [r.status for r in case.records] == ["not-executed", "not-executed"]
