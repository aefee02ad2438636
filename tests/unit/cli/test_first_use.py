"""What a new user hits first, through the real ``archmax`` process (issue 25 items 1-5).

Each test runs ``python -m archmax`` on a temporary store with the examples' workflows and
scripted models. A turn is held mid-way by pointing bank-check's ``lookup_transaction`` at a
FIFO (``BANK_STATEMENT``): reading it blocks, so the process sits inside its turn, lease held,
until the test kills or interrupts it.

Rule source: BEHAVIOUR.md §3.12 (a turn's lease; the sweep recovers a dead turn once it expired),
§11 (exit codes, ``error:`` and ``next:`` lines); README "Command line".
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from archmax import FilesystemStore

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
BANK_SCRIPT = f"scripted:{EXAMPLES / 'workflows' / 'bank-check' / 'model.yaml'}"
INBOX_SCRIPT = f"scripted:{EXAMPLES / 'workflows' / 'support-inbox' / 'model.yaml'}"
PAYMENT = ["--trigger", "payment_expected", "--variables", '{"reference": "INV-1042"}']

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO to hold a turn mid-way")


def _env(statement: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ARCHMAX_MODEL"}
    return {**env, "NO_COLOR": "1", "BANK_STATEMENT": str(statement)}


def _archmax(store: Path, *args: str, root: Path = EXAMPLES, model: str = BANK_SCRIPT) -> list[str]:
    return [sys.executable, "-m", "archmax", "--root", str(root), "--store", str(store), "--model", model, *args]


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.fixture
def held(tmp_path: Path) -> dict[str, Path]:
    """A FIFO that blocks the bank lookup, a real statement for later turns, and the store folder."""
    fifo = tmp_path / "statement.fifo"
    os.mkfifo(fifo)
    statement = tmp_path / "statement.json"
    statement.write_text('{"transactions": []}', encoding="utf-8")
    return {"fifo": fifo, "statement": statement, "store": tmp_path / "sessions"}


def _wait_running(store: Path, session_id: str, proc: subprocess.Popen[str]) -> None:
    """Until the session's head says ``running`` (the turn holds its lease), or fail."""
    for _ in range(600):
        head = FilesystemStore(store).head(session_id) if store.exists() else None
        if head is not None and str(head.status) == "running" and head.lease is not None:
            _wait_blocked_on_fifo(proc)
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    pytest.fail(f"session '{session_id}' never started its turn")


def _interruptible() -> None:
    """In the child before exec: Ctrl-C as a shell gives it (SIGINT default, unblocked).

    An ignored or blocked signal is inherited across exec; a full-suite worker can carry one from an
    earlier test or library, and the CLI would then never see the SIGINT this file sends it.
    """
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_blocked_on_fifo(proc: subprocess.Popen[str]) -> None:
    """Until the process sleeps opening or reading the FIFO (Linux ``/proc/<pid>/wchan``), at most 60 s.

    A loaded machine can take longer than any fixed pause to get from the lease to the FIFO; a signal
    sent before it got there would test a different moment of the turn. Without ``/proc``: a short pause.
    """
    wchan = Path(f"/proc/{proc.pid}/wchan")
    if not wchan.exists():
        time.sleep(0.3)  # the scripted answer is instant: the process is about to block on the FIFO
        return
    for _ in range(600):
        where = wchan.read_text(encoding="utf-8", errors="replace")
        if "partner" in where or "pipe" in where or "fifo" in where:  # fifo open, or a read on it
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    pytest.fail("the turn never blocked on the FIFO")


@pytest.fixture
def turn_in_flight(held: dict[str, Path]) -> Iterator[subprocess.Popen[str]]:
    """``archmax run bank-check`` for session b-1 (delivery id m-1), blocked inside its turn."""
    proc = subprocess.Popen(
        _archmax(
            held["store"], "run", "bank-check", "Payment due", "--session", "b-1", "--delivery-id", "m-1", *PAYMENT
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(held["fifo"]),
        preexec_fn=_interruptible,
    )
    try:
        _wait_running(held["store"], "b-1", proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def test_deliver_and_run_into_a_session_mid_turn_are_refused_with_its_lease_and_a_next_line(held, turn_in_flight):
    env = _env(held["statement"])
    expires_at = FilesystemStore(held["store"]).head("b-1").lease.expires_at

    for cmd in (
        _archmax(held["store"], "deliver", "b-1", "--trigger", "timer"),
        _archmax(held["store"], "run", "bank-check", "Again", "--session", "b-1", *PAYMENT),
    ):
        done = _run(cmd, env)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.splitlines()
        assert lines[0].startswith("error: session 'b-1'") and "running" in lines[0]
        assert lines[1].startswith("next: session 'b-1' is mid-turn") and expires_at in lines[1]
        assert "archmax sweep" in lines[1]
    assert FilesystemStore(held["store"]).load("b-1").delivery_ids == ["m-1"]  # nothing was applied


def test_after_kill_9_sweep_sessions_and_log_name_the_stuck_session_and_when_sweep_can_recover_it(held, turn_in_flight):
    turn_in_flight.send_signal(signal.SIGKILL)
    turn_in_flight.wait(timeout=30)
    env = _env(held["statement"])
    expires_at = FilesystemStore(held["store"]).head("b-1").lease.expires_at

    refused = _run(_archmax(held["store"], "deliver", "b-1", "--trigger", "timer"), env)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"finishes the turn from {expires_at}" in refused.stderr

    swept = _run(_archmax(held["store"], "sweep"), env)
    assert swept.returncode == 0, swept.stderr
    assert swept.stdout == ""  # nothing was woken or recovered
    assert f"running: session 'b-1' mid-turn: lease until {expires_at}" in swept.stderr

    listed = _run(_archmax(held["store"], "sessions"), env)
    assert listed.stdout.splitlines()[1] == (
        f"  mid-turn: lease until {expires_at}; if its process stopped (killed, Ctrl-C), "
        f"archmax sweep --root {EXAMPLES} --store {held['store']} --model {BANK_SCRIPT} finishes the turn from then"
    )
    log = _run(_archmax(held["store"], "sessions", "b-1", "--log"), env)
    assert f"mid-turn: lease until {expires_at}" in log.stdout

    # once the lease has expired, the sweep takes the dead turn over and the session parks
    recovered = _run(_archmax(held["store"], "sweep", "--now", expires_at), env)
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout.splitlines()[0] == "b-1  recovered"
    assert str(FilesystemStore(held["store"]).head("b-1").status) == "awaiting_input"


def test_ctrl_c_mid_turn_prints_one_line_and_the_next_line_and_exits_130(held, turn_in_flight):
    turn_in_flight.send_signal(signal.SIGINT)
    out, err = turn_in_flight.communicate(timeout=60)

    assert turn_in_flight.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    lines = err.splitlines()
    assert lines[0].startswith("interrupted: the turn of session 'b-1' stopped part-way")
    assert lines[1].startswith("next: ") and "archmax sweep" in lines[1] and "--delivery-id m-1" in lines[1]
    assert len(lines) == 2

    # the same command with the same --delivery-id finishes the turn, without adding the message again
    again = _run(
        _archmax(
            held["store"], "run", "bank-check", "Payment due", "--session", "b-1", "--delivery-id", "m-1", *PAYMENT
        ),
        _env(held["statement"]),
    )
    assert again.returncode == 0, again.stderr
    record = FilesystemStore(held["store"]).load("b-1")
    assert str(record.status) == "awaiting_input"
    assert [m.content for m in record.messages if m.role == "user" and not m.archmax].count("Payment due") == 1


@pytest.fixture
def one_workflow(tmp_path: Path) -> Path:
    """A workspace holding only the support-inbox example."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "workflows" / "support-inbox", root / "workflows" / "support-inbox")
    return root


def test_a_misspelt_workflow_in_a_one_workflow_folder_is_refused_with_did_you_mean(one_workflow, tmp_path):
    store = tmp_path / "sessions"
    env = _env(tmp_path / "unused.json")
    done = _run(
        _archmax(store, "run", "support-inbx", "Where is my order?", root=one_workflow, model=INBOX_SCRIPT), env
    )

    assert done.returncode == 2
    assert done.stderr.startswith("error: no workflow 'support-inbx'")
    assert "did you mean 'support-inbox'?" in done.stderr
    assert not store.exists() or FilesystemStore(store).list() == []

    # a prompt whose first word is no workflow name still goes to the one workflow
    prompt = _run(
        _archmax(store, "run", "Where is my order?", "--trigger", "email_received", "--variables",
                 '{"conversation_id": "c-1"}', root=one_workflow, model=INBOX_SCRIPT),
        env,
    )  # fmt: skip
    assert prompt.returncode == 0, prompt.stderr


def test_a_misspelt_trigger_on_deliver_is_refused_naming_the_known_ones_and_nothing_is_written(one_workflow, tmp_path):
    store = tmp_path / "sessions"
    env = _env(tmp_path / "unused.json")
    started = _run(
        _archmax(store, "run", "support-inbox", "Where is my order?", "--trigger", "email_received", "--variables",
                 '{"conversation_id": "c-1"}', root=one_workflow, model=INBOX_SCRIPT),
        env,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    before = FilesystemStore(store).head("c-1").version

    done = _run(
        _archmax(store, "deliver", "c-1", "--trigger", "email_replly", "--variables", '{"reply_body": "ORD-1001"}',
                 root=one_workflow, model=INBOX_SCRIPT),
        env,
    )  # fmt: skip

    assert done.returncode == 2
    assert done.stderr.startswith("error: trigger 'email_replly'")
    assert "email_received, email_reply" in done.stderr and "did you mean 'email_reply'?" in done.stderr
    head = FilesystemStore(store).head("c-1")
    assert (head.version, str(head.status)) == (before, "awaiting_input")


def test_a_delivery_trigger_of_the_callers_own_is_delivered_as_given(one_workflow, tmp_path):
    # BEHAVIOUR §3.5/§11: a delivery's trigger is never matched; only a near-miss of a known id is refused.
    store = tmp_path / "sessions"
    env = _env(tmp_path / "unused.json")
    started = _run(
        _archmax(store, "run", "support-inbox", "Where is my order?", "--trigger", "email_received", "--variables",
                 '{"conversation_id": "c-1"}', root=one_workflow, model=INBOX_SCRIPT),
        env,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    done = _run(
        _archmax(store, "deliver", "c-1", "--trigger", "crm_webhook", "--variables", '{"reply_body": "ORD-1001"}',
                 root=one_workflow, model=INBOX_SCRIPT),
        env,
    )  # fmt: skip
    assert "nothing was delivered" not in done.stderr
    record = FilesystemStore(store).load("c-1")
    assert record.variables["trigger"].value == "crm_webhook"


def test_serve_on_a_busy_port_prints_one_error_line_with_a_port_hint_and_exits_2(one_workflow, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(
            _archmax(tmp_path / "sessions", "serve", "--port", str(port), root=one_workflow, model=INBOX_SCRIPT),
            _env(tmp_path / "unused.json"),
        )

    assert done.returncode == 2
    assert done.stderr.splitlines() == [done.stderr.strip()]  # one line, no traceback
    assert done.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}") and "--port" in done.stderr
