"""`make demo`: two archmax workflows driven through the `archmax` command line.

1. support-inbox: a real-shaped email starts a conversation; the agent asks for the order number
   and parks (archmax_wait), and the question is mailed back (the .eml the outbox wrote is shown).
   The customer's reply, threaded only to OUR Message-ID, resumes the same session, which answers;
   the answer is mailed back too. `archmax sessions` shows it.
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
import re
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


def show_mail(path: Path, title: str) -> None:
    """Print one raw mail the way it lies on disk, indented."""
    print(f"{DIM}--- {title}: {path}{RESET}")
    for line in path.read_text(encoding="utf-8").rstrip().splitlines():
        print(f"  | {line}")


def sent_mail(output: str) -> Path:
    """The .eml an `archmax email` run says it wrote (its `sent: mail to ... -> <path>` line)."""
    found = re.search(r"^sent: mail to .* -> (\S+\.eml)$", output, re.MULTILINE)
    expect(found is not None, "the run should say where it wrote the mail it sent")
    return Path(found.group(1))


def reply_to_our_message(our_mail: Path, out: Path) -> Path:
    """Dana's reply, as a client that keeps only In-Reply-To writes it: threaded to OUR Message-ID alone.

    It starts from emails/02-reply.eml and replaces its threading headers, so the only thing tying it
    to the conversation is the Message-ID archmax gave the question it mailed.
    """
    ours = re.search(r"^Message-ID: (<[^>]+>)", our_mail.read_text(encoding="utf-8"), re.MULTILINE).group(1)
    lines, skip = [], False
    for line in (EMAILS / "02-reply.eml").read_text(encoding="utf-8").splitlines():
        if skip and line[:1] in (" ", "\t"):
            continue  # a folded continuation of a dropped header
        skip = line.split(":", 1)[0].lower() in ("references", "in-reply-to")
        if not skip:
            lines.append(line)
    lines.insert(1, f"In-Reply-To: {ours}")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def support_inbox(store: Path) -> str:
    step("1. A customer's first email starts support-inbox (email_received)")
    first = archmax(store, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox", model="support-inbox")
    expect(first.returncode == 0, "the first email should park the session (exit 0)")
    expect("awaits input in state 'clarify'" in first.stderr, "the session should wait in 'clarify'")
    session_id = first.stderr.split("waiting: session '", 1)[1].split("'", 1)[0]
    print(f"-> parked: session '{session_id}' (mail: + the email thread's root Message-ID) waits for the order number.")

    step("2. Our question went out by mail: the .eml the outbox wrote (SMTP with ARCHMAX_SMTP_URL, SES on AWS)")
    question = sent_mail(first.stderr)
    show_mail(question, "our question, threaded on Dana's mail")
    text = question.read_text(encoding="utf-8")
    expect(f"In-Reply-To: <{session_id.removeprefix('mail:')}>" in text, "our question should answer Dana's Message-ID")
    expect("Subject: Re: " in text and "To: dana.rivers@example.org" in text, "our question should go back to Dana")

    step("3. `archmax sessions` shows the parked conversation")
    listing = archmax(store, "sessions", "--workflow", "support-inbox")
    expect(f"{session_id}  awaiting_input" in listing.stdout, "sessions should list the parked session")

    step("4. Dana replies to OUR message; her client kept only In-Reply-To: <our Message-ID>")
    reply = reply_to_our_message(question, store.parent / "03-reply-to-our-question.eml")
    show_mail(reply, "Dana's reply")
    answered = archmax(store, "email", str(reply), "--workflow", "support-inbox", model="support-inbox")
    expect(answered.returncode == 0, "the reply should complete the session (exit 0)")
    expect(f"session '{session_id}'" in answered.stderr, "the reply should land on the same session, by our Message-ID")
    expect("ORD-1001" in answered.stdout, "the answer should name ORD-1001")

    step("5. The answer went out by mail too, threaded on Dana's reply")
    answer = sent_mail(answered.stderr)
    show_mail(answer, "our answer")
    expect("ORD-1001" in answer.read_text(encoding="utf-8"), "the mailed answer should name ORD-1001")

    step("6. `archmax sessions <id>` shows it completed, in 'answer'")
    archmax(store, "sessions", session_id)
    shown = summary(store, session_id)
    expect(shown["status"] == "completed" and shown["workflow_state"] == "answer", "the session should complete in 'answer'")
    print("-> one session, one id, four mails: Dana's question, ours, her reply to ours, our answer.")
    return session_id


def bank_check(store: Path) -> str:
    session_id = "bank-INV-1042"
    step("7. bank-check looks for payment INV-1042; it has not posted, so the agent waits a day")
    run = archmax(
        store, "run", "bank-check", "Payment for invoice INV-1042 is expected.", "--session", session_id,
        "--trigger", "payment_expected", "--variables", '{"reference": "INV-1042"}', model="bank-check",
    )
    expect(run.returncode == 0 and "(due " in run.stderr, "bank-check should park with a resume_at")
    for day in range(1, 6):
        due = summary(store, session_id)["resume_at"]
        expect(due is not None, f"day {day}: the session should be parked with a resume_at")
        step(f"{7 + day}. Day {day}: the host's timer runs `archmax sweep --now {due}`")
        swept = archmax(store, "sweep", "--now", due, model="bank-check")
        expect(swept.returncode == 0 and session_id in swept.stdout, f"day {day}: the sweep should wake {session_id}")
        again = archmax(store, "sweep", "--now", due, model="bank-check")
        expect(session_id not in again.stdout, f"day {day}: a second sweep at the same instant should wake nothing")
        if day < 5:
            expect(f"{session_id}  parked" in swept.stdout, f"day {day}: the session should check and park again")
    step("13. Where it ended: the sixth wait exceeded maxParks: 5, so on_error routed it to 'escalate'")
    archmax(store, "sessions", session_id)
    shown = summary(store, session_id)
    expect(shown["workflow_state"] == "escalate", f"the session should end in 'escalate', not {shown['workflow_state']!r}")
    expect(shown["status"] == "completed", "the escalation message should complete the session")
    return session_id


def pages_and_log(store: Path, sessions: list[str]) -> None:
    """Each session's page written to a file that outlives the demo's store, then one story as a log."""
    pages = Path(tempfile.gettempdir()) / "archmax-demo-pages"
    step("12. Each session's page (open it in a browser), and the bank check's story as `--log`")
    for n, session_id in enumerate(sessions, start=1):
        page = pages / f"session-{n}.html"
        done = archmax(store, "sessions", session_id, "--open", str(page))
        expect(done.returncode == 0 and page.is_file(), f"the page of {session_id} should be written")
        print(f"-> page of '{session_id}': {page.resolve().as_uri()}")
    log = archmax(store, "sessions", sessions[-1], "--log")
    expect(log.returncode == 0 and "DELIVERY" in log.stdout and "ON_ERROR" in log.stdout,
           "the log should show the deliveries and the on_error route")


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
            sessions = [support_inbox(store), bank_check(store)]
            pages_and_log(store, sessions)
        except StoryError as exc:
            print(f"\n✖ demo failed: {exc}", file=sys.stderr)
            return 1
    print(f"\n{BOLD}✔ demo complete{RESET}: an email conversation parked and resumed; a daily check woke five times and escalated.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
