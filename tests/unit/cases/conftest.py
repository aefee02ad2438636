"""Helpers for case-runner tests: tiny workflows and case files written into tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax.cases import CaseResult, run_tests
from archmax.clock import FakeClock

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "workflows"

DESK = """\
title: Desk
instructions: A small workflow for exercising the case runner.
tests:
  caseTimeoutMs: 60000
states:
  start:
    triggers:
      manual: null
      ping:
        requires: [token]
    tools:
      allow: [lookup]
    transitions:
      - { to: review, description: The work needs a person's review. }
      - { to: done, description: The work is finished. }
  review:
    type: human
    title: Review
    transitions:
      - { to: done, description: Approved., type: approve }
      - { to: start, description: Sent back., type: refine }
  done: null
"""


def write_case(workflow_dir: Path, rel: str, doc: dict[str, Any] | str) -> Path:
    """Write ``tests/<rel>`` (a mapping is dumped as YAML, a string written verbatim)."""
    path = workflow_dir / "tests" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return path


def case_doc(steps: list[Any], model: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"title": "A case", "description": "What it checks."}
    doc.update(extra)
    if model is not None:
        doc["model"] = model
    doc["steps"] = steps
    return doc


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    """A fresh ``workflows/desk`` folder holding only ``workflow.yaml``."""
    folder = tmp_path / "workflows" / "desk"
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_text(DESK, encoding="utf-8")
    return folder


@pytest.fixture
def run(clock: FakeClock):
    """``run(folder, **kw)``: run_tests with the fake clock."""

    def _run(folder: Path, **kw: Any) -> dict[str, Any]:
        return run_tests(folder, clock=clock, **kw)

    return _run


@pytest.fixture
def run_one(run):
    """``run_one(folder, doc)``: write one case as ``tests/case.test.yaml``, run it, return its result."""

    def _run_one(folder: Path, doc: dict[str, Any], **kw: Any) -> CaseResult:
        write_case(folder, "case.test.yaml", doc)
        result = run(folder, **kw)
        assert len(result["results"]) == 1
        return result["results"][0]

    return _run_one


def statuses(result: CaseResult) -> list[tuple[str, str]]:
    return [(r.kind, r.status) for r in result.records]
