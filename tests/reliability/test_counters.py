"""The soak's counts (tests/reliability/counters.py): a violation's text survives a soak stopped before its report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from . import counters


@pytest.fixture
def fresh(monkeypatch):
    for name in ("TABLES", "KINDS", "TEXTS"):
        monkeypatch.setattr(counters, name, type(getattr(counters, name))(getattr(counters, name).default_factory))


def test_the_first_violations_texts_are_kept_and_counted(fresh):
    store = counters.for_store("filesystem+pairs")
    for n in range(counters.VIOLATIONS_KEPT + 2):
        store.violation(f"broken {n}")
    data = counters.export()
    assert data["tables"]["filesystem+pairs"]["violations"] == counters.VIOLATIONS_KEPT + 2
    assert data["violations"] == {"filesystem+pairs": [f"broken {n}" for n in range(counters.VIOLATIONS_KEPT)]}


def test_summary_prints_the_texts_the_processes_wrote(tmp_path: Path):
    (tmp_path / "1.json").write_text(
        json.dumps({"tables": {"aws": {"schedules": 3, "violations": 1}}, "violations": {"aws": ["lost d2"]}})
    )
    (tmp_path / "2.json").write_text(json.dumps({"tables": {"aws": {"schedules": 2}}}))
    summary = Path(__file__).with_name("summary.py")
    out = subprocess.run([sys.executable, str(summary), str(tmp_path)], capture_output=True, text=True, check=True)
    assert "aws violation: lost d2" in out.stdout
    assert out.stdout.splitlines()[1].split()[:2] == ["aws", "5"]  # schedules merged from both processes
