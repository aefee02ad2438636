"""`make demo` as a test: examples/demo.py drives the `archmax` CLI through both stories (issue 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_tells_the_email_and_timer_stories_and_exits_0():
    env = {k: v for k, v in os.environ.items() if k != "ARCHMAX_MODEL"}
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "SCRIPTED" in out and "ARCHMAX_MODEL=bedrock:" in out
    conversation = "mail:3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"  # a mail-opened session (issue 21 item 3)
    assert f"waiting: session '{conversation}' awaits input in state 'clarify'" in out
    assert f"-> session '{conversation}' (email_reply: resume)" in out
    assert f"{conversation}  completed  finished  state=answer" in out
    assert out.count("bank-INV-1042  parked") == 4
    assert "bank-INV-1042  completed  finished  state=escalate" in out
    assert "✔ demo complete" in out
    # issue 15: where each demo session's page is, and one story as --log
    pages = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("-> page of '")]
    assert len(pages) == 2 and all(p.startswith("file://") and p.endswith(".html") for p in pages)
    assert "bank-INV-1042'  workflow bank-check  completed (finished)" in out
    assert (
        out.count("  PARK ") == 5 and out.count("  DELIVERY ") == 5 and "  ON_ERROR " in out
    )  # the 6th wait was refused
