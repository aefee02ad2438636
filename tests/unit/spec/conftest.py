"""Helpers for spec tests: workflows written as small YAML strings."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from archmax.errors import Diagnostic, WorkflowSpecError
from archmax.spec import Workflow, parse_yaml, workflow_from_dict


def _doc(text: str):
    doc, problems = parse_yaml(textwrap.dedent(text))
    assert not problems, problems
    return doc


@pytest.fixture
def load() -> Callable[[str], Workflow]:
    """Load a workflow from YAML text (dedented); raises like ``load_workflow``."""

    def _load(text: str) -> Workflow:
        return workflow_from_dict(_doc(text), "demo")

    return _load


@pytest.fixture
def errors_of() -> Callable[[str], list[str]]:
    """The ``<path>: <message>`` lines of the error diagnostics a YAML text produces."""

    def _errors(text: str) -> list[str]:
        with pytest.raises(WorkflowSpecError) as caught:
            workflow_from_dict(_doc(text), "demo")
        return [str(d) for d in caught.value.diagnostics if d.severity == "error"]

    return _errors


@pytest.fixture
def diagnostics_of() -> Callable[[str], list[Diagnostic]]:
    """Every diagnostic (errors and warnings) for a YAML text, without raising."""

    def _diagnostics(text: str) -> list[Diagnostic]:
        try:
            return list(workflow_from_dict(_doc(text), "demo").warnings)
        except WorkflowSpecError as exc:
            return exc.diagnostics

    return _diagnostics
