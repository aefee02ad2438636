"""Loading from disk: ``load_workflow``, ``validate_workflow``, the YAML reader (§2.5, §9.4)."""

from __future__ import annotations

import pytest

from archmax.errors import WorkflowSpecError
from archmax.spec import load_workflow, parse_yaml, validate_workflow

GOOD = "title: Demo\nstates:\n  intake:\n    triggers: {manual: null}\n"


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "workflows" / "support-inbox"
    path.mkdir(parents=True)
    return path


def test_a_workflow_folder_loads_with_its_name_as_slug_and_root(folder):
    (folder / "workflow.yaml").write_text(GOOD, encoding="utf-8")
    wf = load_workflow(folder)
    assert (wf.slug, wf.root, wf.title) == ("support-inbox", folder, "Demo")


def test_the_workflow_file_itself_can_be_given(folder):
    (folder / "workflow.yaml").write_text(GOOD, encoding="utf-8")
    wf = load_workflow(str(folder / "workflow.yaml"))
    assert (wf.slug, wf.root) == ("support-inbox", folder)


def test_a_missing_file_raises_workflow_spec_error(folder):
    with pytest.raises(WorkflowSpecError) as caught:
        load_workflow(folder)
    assert "cannot read" in str(caught.value)


def test_invalid_yaml_raises_workflow_spec_error_naming_the_line(folder):
    (folder / "workflow.yaml").write_text("states:\n  a: [unclosed\n", encoding="utf-8")
    with pytest.raises(WorkflowSpecError) as caught:
        load_workflow(folder)
    assert "is not valid YAML" in str(caught.value)
    assert "line " in str(caught.value)


def test_a_duplicate_key_is_a_yaml_error_rather_than_a_silent_overwrite(folder):
    (folder / "workflow.yaml").write_text(
        "states:\n  a:\n    triggers:\n      manual: null\n      manual: {session: x}\n", encoding="utf-8"
    )
    with pytest.raises(WorkflowSpecError) as caught:
        load_workflow(folder)
    assert "found duplicate key 'manual'" in str(caught.value)


def test_keys_python_would_collapse_are_duplicates_too():
    doc, problems = parse_yaml("settings: {1: a, true: b}\n")
    assert doc is None
    assert "found duplicate key True" in problems[0].message


def test_yaml_merge_keys_may_be_overridden_without_a_duplicate_error():
    doc, problems = parse_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n")
    assert problems == []
    assert doc["other"] == {"x": 3, "y": 2}


def test_timestamps_load_as_strings_implicit_and_explicit():
    doc, _ = parse_yaml("a: 2025-03-01\nb: 2025-03-01T09:00:00Z\nc: !!timestamp 2025-03-01\n")
    assert doc == {"a": "2025-03-01", "b": "2025-03-01T09:00:00Z", "c": "2025-03-01"}


def test_validate_reports_every_diagnostic_without_raising(folder):
    (folder / "workflow.yaml").write_text(
        "name: x\nstates:\n  a:\n    triggers:\n      manual: {colour: blue}\n", encoding="utf-8"
    )
    diagnostics = validate_workflow(folder)
    assert [(d.path, d.severity) for d in diagnostics] == [
        ("name", "error"),
        ("states.a.triggers.manual.colour", "warning"),
    ]


def test_validate_of_a_clean_workflow_is_empty(folder):
    (folder / "workflow.yaml").write_text(GOOD, encoding="utf-8")
    assert validate_workflow(folder) == []


def test_validate_reports_unreadable_yaml_as_one_error(folder):
    (folder / "workflow.yaml").write_text("states: [\n", encoding="utf-8")
    diagnostics = validate_workflow(folder)
    assert len(diagnostics) == 1 and diagnostics[0].severity == "error"


def test_load_error_diagnostics_ride_on_the_exception(folder):
    (folder / "workflow.yaml").write_text("states:\n  a: {on_error: b}\n", encoding="utf-8")
    with pytest.raises(WorkflowSpecError) as caught:
        load_workflow(folder)
    assert [d.path for d in caught.value.diagnostics] == ["states.a.on_error", "states"]
