"""Usage errors exit 2 with one ``error:`` line and touch nothing (BEHAVIOUR.md §11)."""

from __future__ import annotations

import pytest

from ._support import INBOX_SCRIPT


def _one_error_line(run) -> None:
    assert run.code == 2
    assert run.out == ""
    lines = run.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="no-command"),
        pytest.param(["frobnicate"], id="unknown-command"),
        pytest.param(["run", "--bogus"], id="unknown-flag"),
        pytest.param(["sessions", "a", "b"], id="extra-argument"),
        pytest.param(["run", "hi", "--variables", "{not json"], id="bad-json"),
        pytest.param(["run", "hi", "--variables", "[1, 2]"], id="non-object-variables"),
        pytest.param(["run", "hi", "--variables", "@/nonexistent/vars.json"], id="unreadable-variables-file"),
        pytest.param(["run", "hi", "--file", "nofile"], id="file-without-equals"),
        pytest.param(["run", "hi", "--file", "Bad-Name=x.txt"], id="file-bad-variable-name"),
        pytest.param(["run", "hi", "--file", "doc=/nonexistent/x.pdf"], id="file-unreadable"),
        pytest.param(["run", "hi", "--session", "_specs/x"], id="invalid-session-id"),
        pytest.param(["run", "hi", "--session", "   "], id="blank-session-id"),
        pytest.param(["run", "hi", "--session-path", "a..b"], id="malformed-session-path"),
        pytest.param(["run", "hi", "--variables", '{"Bad": 1}'], id="invalid-variable-name"),
        pytest.param(["run"], id="empty-message-on-a-turn"),
        pytest.param(["sweep", "--now", "tomorrow"], id="bad-now"),
        pytest.param(["sweep", "--now", "1d"], id="duration-is-not-an-instant"),
        pytest.param(["run", "nowhere", "hi", "--root", "/nonexistent-root"], id="no-workflows-in-root"),
        pytest.param(["validate", "no-such-workflow"], id="unknown-workflow"),
        pytest.param(["--store", "aws:only-a-table", "sessions"], id="malformed-aws-store"),
        pytest.param(["email", "/nonexistent/mail.eml"], id="unreadable-email"),
        pytest.param(["test", "a", "b", "c"], id="too-many-test-words"),
    ],
)
def test_usage_error_exits_2_with_one_line(cli, chores, script, args):
    _one_error_line(cli(*chores, *args, "--model", script([{"say": "unused"}])))


def test_missing_delivery_trigger_on_a_parked_session_exits_2_and_leaves_it_parked(cli, examples):
    cli(
        *examples,
        "run",
        "support-inbox",
        "Hi",
        "--trigger",
        "email_received",
        "--variables",
        '{"conversation_id": "c-1"}',
        "--model",
        INBOX_SCRIPT,
    )
    run = cli(*examples, "deliver", "c-1", "--variables", '{"reply_body": "ORD-1"}', "--model", INBOX_SCRIPT)
    _one_error_line(run)
    assert "carries no trigger id" in run.err
    shown = cli(*examples, "sessions", "c-1", "--json").json()
    assert shown["status"] == "awaiting_input"


def test_usage_error_creates_no_session(cli, chores, script):
    run = cli(*chores, "run", "hi", "--session", "s-1", "--variables", '{"Bad": 1}', "--model", script([{"say": "x"}]))
    assert run.code == 2
    assert cli(*chores, "sessions", "--json").json() == []


def test_help_exits_0(cli):
    run = cli("-h")
    assert run.code == 0
    assert "usage: archmax" in run.out


def test_command_help_exits_0(cli):
    run = cli("sweep", "--help")
    assert run.code == 0
    assert "--now" in run.out
