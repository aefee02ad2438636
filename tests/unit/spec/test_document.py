"""The workflow.yaml / test-case schema and reference cannot drift (issue 15 item 4).

The document models must accept exactly the keys the loader and the case parser accept; the shipped
examples must validate against the JSON Schema (checked by the ``jsonschema`` library, the way an
editor would); ``docs/workflow.md`` must be exactly the reference generated from the models.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from archmax.cases import schema as case_parser
from archmax.models.scripted import ScriptEntry
from archmax.spec import check_hooks, check_states, check_tools, check_triggers, loader
from archmax.spec import document as d
from archmax.spec.reference import render_reference

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "workflows"


def keys(model) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize(
    ("model", "accepted"),
    [
        (d.WorkflowDocument, loader.ROOT_KEYS),
        (d.RootTools, loader._ROOT_TOOL_KEYS),
        (d.Policy, loader._POLICY_KEYS),
        (d.State, check_states.STATE_KEYS),
        (d.Transition, check_states._TRANSITION_KEYS),
        (d.Budget, tuple(check_states._BUDGET_KEYS)),
        (d.StateTools, check_states._STATE_TOOL_KEYS),
        (d.ToolRule, check_tools._RULE_KEYS),
        (d.Trigger, check_triggers._KNOWN),
        (d.Signature, check_triggers._ENTRY_KEYS),
        (d.WebhookSignature, check_triggers._SIGNATURE_KEYS),
        (d.Rubric, check_hooks._RUBRIC_KEYS),
        (d.CaseDocument, case_parser.TOP_LEVEL_KEYS),
        (d.ScriptedAnswer, tuple(ScriptEntry.model_fields)),
    ],
)
def test_each_document_model_has_exactly_the_keys_the_validators_accept(model, accepted):
    assert keys(model) == set(accepted)


def test_the_case_steps_are_the_parsers_step_keys_and_bodies():
    assert list(d.STEP_MODELS) == list(case_parser.STEP_KEYS)
    assert d.STEP_MODELS["decide"].model_fields["decide"].annotation is case_parser.DecideBody


@pytest.fixture(scope="module")
def validators():
    return {which: jsonschema.Draft202012Validator(d.json_schema(which)) for which in ("workflow", "case")}


@pytest.mark.parametrize("workflow", sorted(p.name for p in EXAMPLES.iterdir() if (p / "workflow.yaml").is_file()))
def test_the_example_workflows_and_their_cases_validate_against_the_schema(workflow, validators):
    doc = yaml.safe_load((EXAMPLES / workflow / "workflow.yaml").read_text(encoding="utf-8"))
    assert list(validators["workflow"].iter_errors(doc)) == []
    cases = sorted((EXAMPLES / workflow / "tests").rglob("*.test.yaml"))
    assert cases
    for case in cases:
        errors = list(validators["case"].iter_errors(yaml.safe_load(case.read_text(encoding="utf-8"))))
        assert errors == [], (case, errors[0].message if errors else None)


def test_the_schema_refuses_what_the_loader_refuses(validators):
    ok = {
        "states": {
            "a": {"triggers": {"manual": None}, "type": "human", "transitions": [{"to": "b", "description": "x"}]},
            "b": None,
        }
    }
    assert list(validators["workflow"].iter_errors(ok)) == []
    for bad in (
        {"states": {"a": {"transition": []}}},  # a misspelt key
        {"states": {"a": {"type": "robot"}}},
        {"states": {"a": {"budget": {"maxTurns": 0}}}},
        {"states": {}},
        {"name": "x", "states": {"a": None}},
    ):
        assert list(validators["workflow"].iter_errors(bad)), bad
    assert list(validators["case"].iter_errors({"title": "t", "description": "d", "steps": [{"sned": "hi"}]}))


def test_docs_workflow_md_is_the_reference_generated_from_the_models():
    assert (REPO / "docs" / "workflow.md").read_text(encoding="utf-8") == render_reference(), (
        "regenerate it: archmax schema --markdown > docs/workflow.md"
    )
    text = render_reference()
    for words in ("type: human", "`human`", "hooks/<file>.py", "archmax_workflow_<slug>", "`maxParks`", "`requires`"):
        assert words in text


def test_the_readme_shows_the_line_that_points_an_editor_at_the_schema():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "# yaml-language-server: $schema=" in readme and "archmax schema workflow > " in readme


def test_archmax_schema_prints_the_schemas_and_the_reference(capsys):
    from archmax.cli import main

    assert main(["schema"]) == 0
    workflow = json.loads(capsys.readouterr().out)
    assert workflow["$schema"].endswith("2020-12/schema") and workflow["title"] == "archmax workflow.yaml"
    assert main(["schema", "case"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "archmax test case"
    assert main(["schema", "--markdown"]) == 0
    assert capsys.readouterr().out == render_reference()
