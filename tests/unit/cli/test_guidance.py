"""A CLI that guides instead of guessing (issue 15 item 5): each message a new user met."""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
import yaml

from archmax.cli import build_parser, main

from ._support import EMAILS, EXAMPLES, INBOX_SCRIPT, make_workspace

FOUND = ", ".join(sorted(p.parent.name for p in (EXAMPLES / "workflows").glob("*/workflow.yaml")))


def test_a_misspelt_workflow_is_named_with_what_was_found_and_the_closest_slug(cli, examples):
    run = cli(*examples, "run", "expense-aproval", "Lunch", "receipt", "--model", INBOX_SCRIPT)
    assert run.code == 2 and run.out == ""
    assert run.err.startswith(f"error: no workflow 'expense-aproval' under {EXAMPLES}/workflows/ (found: {FOUND})")
    assert "holds several workflows" not in run.err
    near = cli(*examples, "validate", "support-inbx")
    assert near.code == 2
    assert near.err == (
        f"error: no workflow 'support-inbx' under {EXAMPLES}/workflows/ (found: {FOUND}); "
        "did you mean 'support-inbox'?\n"
    )


def test_a_command_that_finds_several_workflows_names_the_flag_that_picks_one(cli, examples):
    run = cli(*examples, "email", str(EMAILS / "01-first.eml"), "--model", INBOX_SCRIPT)
    assert run.code == 2
    assert run.err == f"error: '{EXAMPLES}' holds several workflows ({FOUND}): pass --workflow <slug>\n"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["deliver", "nobody", "--trigger", "email_reply"], "is not parked awaiting an event"),
        (["decide", "nobody", "--to", "answer"], "is not parked awaiting a decision"),
        (["reply", "nobody", "hello"], "is not parked awaiting a decision"),
    ],
)
def test_acting_on_a_missing_session_says_it_does_not_exist(cli, examples, args, error):
    run = cli(*examples, *args, "--model", INBOX_SCRIPT)
    assert run.code == 1 and run.out == ""
    assert run.err == f"error: session 'nobody' {error}: no such session (it does not exist)\n"
    assert "several workflows" not in run.err


def test_errors_are_json_on_stdout_under_json(cli, examples):
    run = cli(*examples, "deliver", "nobody", "--trigger", "x", "--json")
    assert run.code == 1 and run.err.startswith("error: session 'nobody' is not parked")  # people read stderr
    assert run.json() == {
        "error": "SessionNotAwaitingInputError",
        "message": "session 'nobody' is not parked awaiting an event: no such session (it does not exist)",
        "exit": 1,
        "session_id": "nobody",
    }
    usage = cli(*examples, "run", "bank-check", "x", "--variables", "[1]", "--json")
    assert usage.code == 2 and usage.json()["error"] == "UsageError"
    assert usage.json()["message"] == "--variables must be a JSON object, not list"


def test_the_next_hint_of_an_email_conversation_points_at_archmax_email(cli, examples):
    run = cli(*examples, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox", "--model", INBOX_SCRIPT)
    hint = next(line for line in run.err.splitlines() if line.startswith("next: "))
    assert hint.startswith(f"next: archmax email --root {EXAMPLES} --store ")
    assert "--workflow support-inbox <reply.eml>   (the reply, as a raw email; or: archmax deliver " in hint
    assert "--trigger email_reply" in hint and "<event-id>" not in hint and '"name": "value"' not in hint


def test_the_next_hint_names_a_declared_trigger_and_the_declared_triggers(cli, examples):
    run = cli(
        *examples,
        "run",
        "support-inbox",
        "About the thing",
        "--trigger",
        "email_received",
        "--variables",
        '{"conversation_id": "c-1"}',
        "--model",
        INBOX_SCRIPT,
    )
    hint = next(line for line in run.err.splitlines() if line.startswith("next: "))
    assert re.fullmatch(
        r"next: archmax deliver c-1 --root \S+ --store \S+ --model \S+ --trigger email_reply \[--message <text>\]"
        r"   \(triggers this workflow declares: email_received, email_reply\)",
        hint,
    ), hint


def test_the_next_hint_carries_the_variables_the_trigger_requires(cli, tmp_path, script):
    root = make_workspace(
        tmp_path / "ws",
        claims={
            "states": {
                "intake": {
                    "triggers": {
                        "claim_filed": None,
                        "documents_sent": {"requires": [{"name": "receipt", "type": "string"}]},
                    },
                },
            },
        },
    )
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    model = script([{"say": "Send the receipt.", "call": {"archmax_wait": {"reason": "the receipt"}}}])
    run = cli(*flags, "run", "My claim", "--session", "k-1", "--trigger", "claim_filed", "--model", model)
    hint = next(line for line in run.err.splitlines() if line.startswith("next: "))
    assert '--trigger documents_sent --variables \'{"receipt": "<string>"}\' [--message <text>]' in hint


def test_validate_reports_a_misspelt_tool_under_tools_allow(cli, tmp_path):
    source = EXAMPLES / "workflows" / "bank-check"
    doc = yaml.safe_load((source / "workflow.yaml").read_text(encoding="utf-8"))
    doc["states"]["check-bank"]["tools"]["allow"] = ["lookup_transacton"]
    root = make_workspace(tmp_path / "ws", bank_check=doc)
    (root / "workflows" / "bank-check" / "tools.py").write_text(
        (source / "tools.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    run = cli("--root", str(root), "validate")
    assert run.code == 1
    assert (
        run.out == "states.check-bank.tools.allow.0: no host tool 'lookup_transacton' (provided: lookup_transaction)\n"
    )
    as_json = cli("--root", str(root), "validate", "--json").json()
    assert as_json["ok"] is False and as_json["diagnostics"][0]["path"] == "states.check-bank.tools.allow.0"


def test_version(cli):
    run = cli("--version")
    assert run.code == 0 and re.fullmatch(r"archmax \d+\.\d+\.\d+\S*\n", run.out)


def test_help_explains_file_and_comment_and_cites_no_document_section():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    texts = {name: p.format_help() for name, p in sub.items()}
    assert all("§" not in t for t in [parser.format_help(), *texts.values()])
    deliver = " ".join(texts["deliver"].split())
    assert "--file NAME=PATH" in deliver and "scratchpad/attachments/<file name>" in deliver
    assert "variable NAME (locked) holds that path" in deliver
    decide = " ".join(texts["decide"].split())
    assert "--comment COMMENT why the person chose this" in decide


def test_an_http_delivery_to_a_missing_session_is_a_404(tmp_path):
    from archmax.errors import SessionNotAwaitingInputError, SessionNotParkedError
    from archmax.hosting.http import error_response

    assert error_response(SessionNotAwaitingInputError("nobody", None))[0] == 404
    assert error_response(SessionNotParkedError("nobody", None))[0] == 404
    assert error_response(SessionNotAwaitingInputError("s", "completed"))[0] == 409
    assert json.dumps(error_response(SessionNotParkedError("nobody", None))[1])


def test_test_with_one_word_naming_no_workflow_in_a_several_workflow_workspace_says_it_was_not_found(cli, examples):
    # user-test finding 10: the word was taken as a filter and the answer was "name one"
    run = cli(*examples, "test", "nosuch")
    assert run.code == 2
    assert run.err == (
        f"error: no workflow 'nosuch' under {EXAMPLES}/workflows/ (found: {FOUND}); "
        "name it first: archmax test <workflow> [filter]\n"
    )
    near = cli(*examples, "run", "support-inbx", "Where?", "--model", INBOX_SCRIPT)
    assert near.err.endswith("did you mean 'support-inbox'?; name it first: archmax run <workflow> <prompt...>\n")


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_leaves_early_ends_the_command_with_exit_1_and_no_traceback(monkeypatch, capsys):
    # `archmax schema workflow | head -1`: the pipe closes while the CLI still writes
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["schema", "workflow"]) == 1
    assert "Traceback" not in capsys.readouterr().err
