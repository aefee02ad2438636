"""`archmax sweep` is idempotent for one instant: two processes sweeping at once wake a session once (issue 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from archmax import FilesystemStore

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SCRIPT = f"scripted:{EXAMPLES / 'workflows' / 'bank-check' / 'model.yaml'}"


def _archmax(store: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "archmax", "--root", str(EXAMPLES), "--store", str(store), "--model", SCRIPT, *args]


def test_two_processes_sweeping_the_same_instant_wake_the_session_exactly_once(tmp_path):
    store = tmp_path / "sessions"
    env = {**os.environ, "NO_COLOR": "1"}
    parked = subprocess.run(
        _archmax(
            store,
            "run",
            "bank-check",
            "Payment due",
            "--session",
            "b-1",
            "--trigger",
            "payment_expected",
            "--variables",
            '{"reference": "INV-1042"}',
        ),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert parked.returncode == 0, parked.stderr
    due = FilesystemStore(store).load("b-1").pending_input.resume_at

    racers = [
        subprocess.Popen(
            _archmax(store, "sweep", "--now", due), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in racers]
    for p in racers:
        p.stdout.close()
        p.stderr.close()

    assert [code for code, _out, _err in results] == [0, 0], results
    outs = sorted(out for _code, out, _err in results)
    # exactly one process woke it (and prints the message it parked with); the other found it
    # already resumed (skipped) or no longer due
    woke = "b-1  parked\n    Payment INV-1042 has not posted yet (check 2). I will look again tomorrow.\n"
    assert outs in (["", woke], [woke, "b-1  skipped\n"])
    record = FilesystemStore(store).load("b-1")
    assert [s.reason for s in record.trail if s.kind == "trigger"] == ["payment_expected", "timer"]
    assert record.park_counts["check-bank"] == 2
