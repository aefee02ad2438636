"""The soak's counts (tests/reliability/counters.py): a violation's text survives a soak stopped before its report."""

from __future__ import annotations

import json
import os
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


FAILING = """
import time
from pathlib import Path


def test_a_schedule_fails():
    assert 1 + 1 == 3, "falsifying schedule: state.open_sessions(...)"


def test_its_report_is_on_file_while_the_run_goes_on():
    failures = Path("{folder}") / "failures.txt"
    for _ in range(600):  # the controller writes it when the report arrives: wait for that, not for the end
        if failures.exists() and "test_a_schedule_fails" in failures.read_text():
            return
        time.sleep(0.05)
    raise AssertionError("no report on file while the run was going on")
"""


@pytest.mark.parametrize("xdist", [["-n", "1"], ["-p", "no:xdist"]], ids=["xdist", "one-process"])
def test_a_failed_tests_report_is_on_file_at_once(tmp_path: Path, xdist: list[str]):
    """``make soak -x``: the falsifying schedule is in ``failures.txt`` (and summary.py) before the run ends."""
    folder = tmp_path / "counts"
    folder.mkdir()
    (tmp_path / "test_failing.py").write_text(FAILING.format(folder=folder))
    tests_dir = Path(__file__).resolve().parents[1]
    env = {**os.environ, counters.COUNTS_DIR_VAR: str(folder), "PYTHONPATH": str(tests_dir)}
    env.pop("PYTEST_XDIST_WORKER", None)  # the run under test has its own controller
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "reliability.conftest",
            *xdist,
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_failing.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout[-2000:]
    assert "1 failed, 1 passed" in run.stdout
    text = (folder / counters.FAILURES_FILE).read_text()
    assert text.count("==== ") == 1 and "test_a_schedule_fails" in text  # once: the worker does not write it too
    assert "falsifying schedule: state.open_sessions(...)" in text
    summary = Path(__file__).with_name("summary.py")
    out = subprocess.run([sys.executable, str(summary), str(folder)], capture_output=True, text=True, check=True)
    assert "falsifying schedule: state.open_sessions(...)" in out.stdout
