"""`make demo`: two archmax workflows driven through the `archmax` command line.

1. support-inbox: a real-shaped email starts a conversation; the agent asks for the order number
   and parks (archmax_wait). The customer's reply (In-Reply-To the question) resumes the same
   session, which answers and completes. `archmax sessions` shows it.
2. bank-check: the agent looks for a payment, does not find it and waits a day (until: 1d).
   `archmax sweep --now <day N>` wakes it day after day; the sixth wait exceeds maxParks: 5 and
   the runtime routes the session to `escalate`.

Everything runs on a fresh temporary filesystem store, with no AWS account and no network. The
model is SCRIPTED (examples/workflows/<slug>/model.yaml), so the story is the same every time.
Exits non-zero if the story does not happen.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
EMAILS = EXAMPLES / "workflows" / "support-inbox" / "emails"
BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else ("", "", "")


class StoryError(Exception):
    """The demo did not tell the story it should."""


def step(title: str) -> None:
    print(f"\n{BOLD}== {title}{RESET}")


def archmax(store: Path, *args: str, model: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `archmax <args>` as its own process on the demo's workspace and store; print what it said."""
    shown = shlex.join(args)
    flags = ["--root", str(EXAMPLES), "--store", str(store)]
    if model is not None:
        flags += ["--model", f"scripted:{EXAMPLES / 'workflows' / model / 'model.yaml'}"]
        shown += f" --model scripted:workflows/{model}/model.yaml"
    print(f"{DIM}$ archmax {shown}{RESET}")
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "archmax", *flags, *args], capture_output=True, text=True, env=env, check=False
    )
    for line in done.stdout.rstrip().splitlines():
        print(f"  {line}")
    for line in done.stderr.rstrip().splitlines():
        print(f"  {DIM}{line}{RESET}")
    print(f"  {DIM}(exit {done.returncode}){RESET}")
    return done


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise StoryError(what)


def summary(store: Path, session_id: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "archmax", "--root", str(EXAMPLES), "--store", str(store), "sessions", session_id, "--json"],
        capture_output=True, text=True, check=False,
    )
    expect(done.returncode == 0, f"archmax sessions {session_id} --json failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def support_inbox(store: Path) -> None:
    step("1. A customer's first email starts support-inbox (email_received)")
    first = archmax(store, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox", model="support-inbox")
    expect(first.returncode == 0, "the first email should park the session (exit 0)")
    expect("awaits input in state 'clarify'" in first.stderr, "the session should wait in 'clarify'")
    session_id = first.stderr.split("waiting: session '", 1)[1].split("'", 1)[0]
    print(f"-> parked: session '{session_id}' (the email thread's root Message-ID) waits for the order number.")

    step("2. `archmax sessions` shows the parked conversation")
    listing = archmax(store, "sessions", "--workflow", "support-inbox")
    expect(f"{session_id}  awaiting_input" in listing.stdout, "sessions should list the parked session")

    step("3. The customer's reply (In-Reply-To the question) resumes the same session (email_reply)")
    reply = archmax(store, "email", str(EMAILS / "02-reply.eml"), "--workflow", "support-inbox", model="support-inbox")
    expect(reply.returncode == 0, "the reply should complete the session (exit 0)")
    expect(f"session '{session_id}'" in reply.stderr, "the reply should land on the same session")
    expect("ORD-1001" in reply.stdout, "the answer should name ORD-1001")

    step("4. `archmax sessions <id>` shows it completed, in 'answer'")
    archmax(store, "sessions", session_id)
    shown = summary(store, session_id)
    expect(shown["status"] == "completed" and shown["workflow_state"] == "answer", "the session should complete in 'answer'")
    print("-> one session, one id, two emails: parked on the question, resumed by the reply, completed.")


def bank_check(store: Path) -> None:
    session_id = "bank-INV-1042"
    step("5. bank-check looks for payment INV-1042; it has not posted, so the agent waits a day")
    run = archmax(
        store, "run", "bank-check", "Payment for invoice INV-1042 is expected.", "--session", session_id,
        "--trigger", "payment_expected", "--variables", '{"reference": "INV-1042"}', model="bank-check",
    )
    expect(run.returncode == 0 and "(due " in run.stderr, "bank-check should park with a resume_at")
    for day in range(1, 6):
        due = summary(store, session_id)["resume_at"]
        expect(due is not None, f"day {day}: the session should be parked with a resume_at")
        step(f"{5 + day}. Day {day}: the host's timer runs `archmax sweep --now {due}`")
        swept = archmax(store, "sweep", "--now", due, model="bank-check")
        expect(swept.returncode == 0 and session_id in swept.stdout, f"day {day}: the sweep should wake {session_id}")
        again = archmax(store, "sweep", "--now", due, model="bank-check")
        expect(session_id not in again.stdout, f"day {day}: a second sweep at the same instant should wake nothing")
        if day < 5:
            expect(f"{session_id}  parked" in swept.stdout, f"day {day}: the session should check and park again")
    step("11. Where it ended: the sixth wait exceeded maxParks: 5, so on_error routed it to 'escalate'")
    archmax(store, "sessions", session_id)
    shown = summary(store, session_id)
    expect(shown["workflow_state"] == "escalate", f"the session should end in 'escalate', not {shown['workflow_state']!r}")
    expect(shown["status"] == "completed", "the escalation message should complete the session")


def main() -> int:
    print(f"{BOLD}archmax demo{RESET}: sessions that park and resume, through the `archmax` command line.")
    print(
        "The model here is SCRIPTED (examples/workflows/<slug>/model.yaml, passed with --model scripted:...),\n"
        "so every run tells the same story offline. To drive these workflows with a real model, use the same\n"
        "commands without --model and set ARCHMAX_MODEL=bedrock:<model id> (Amazon Bedrock) or\n"
        "ARCHMAX_MODEL=openai:<model> with ARCHMAX_API_BASE_URL and ARCHMAX_API_KEY."
    )
    with tempfile.TemporaryDirectory(prefix="archmax-demo-") as tmp:
        store = Path(tmp) / "sessions"
        print(f"Sessions are kept in a fresh filesystem store: {store}")
        try:
            support_inbox(store)
            bank_check(store)
        except StoryError as exc:
            print(f"\n✖ demo failed: {exc}", file=sys.stderr)
            return 1
    print(f"\n{BOLD}✔ demo complete{RESET}: an email conversation parked and resumed; a daily check woke five times and escalated.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
