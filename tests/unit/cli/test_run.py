"""``archmax run``: id resolution, outcomes on stdout/stderr, exit codes, flags (BEHAVIOUR.md §11, §4.2)."""

from __future__ import annotations

import json
from pathlib import Path

from archmax import FilesystemStore

from ._support import INBOX_SCRIPT


def test_first_message_parks_prints_question_waiting_line_and_deliver_command(cli, examples):
    run = cli(
        *examples,
        "run",
        "support-inbox",
        "About",
        "the",
        "thing",
        "--trigger",
        "email_received",
        "--variables",
        '{"conversation_id": "AAQk-1"}',
        "--model",
        INBOX_SCRIPT,
    )
    assert run.code == 0
    assert "Which order is this about?" in run.out
    err = run.err.splitlines()
    assert err[0] == "waiting: session 'AAQk-1' awaits input in state 'clarify': the customer's order number"
    assert err[1].startswith("next: archmax deliver AAQk-1 ")
    assert "--trigger" in err[1]


def test_prompt_words_are_joined_with_spaces_into_the_user_message(cli, examples, tmp_path):
    cli(
        *examples,
        "run",
        "support-inbox",
        "About",
        "the",
        "thing",
        "--trigger",
        "email_received",
        "--variables",
        '{"conversation_id": "AAQk-1"}',
        "--model",
        INBOX_SCRIPT,
    )
    record = FilesystemStore(tmp_path / "examples-store").load("AAQk-1")
    assert record.messages[0].role == "user" and record.messages[0].content == "About the thing"


def test_a_second_run_on_the_same_conversation_resumes_the_park_and_completes(cli, examples):
    flags = ["--variables", '{"conversation_id": "AAQk-1"}', "--model", INBOX_SCRIPT]
    cli(*examples, "run", "support-inbox", "About the thing", "--trigger", "email_received", *flags)
    run = cli(*examples, "run", "support-inbox", "It's ORD-1001.", "--trigger", "email_reply", *flags)
    assert run.code == 0
    assert "ORD-1001" in run.out
    assert run.err == ""


def test_an_undeclared_trigger_still_resumes_an_input_park(cli, examples):
    cli(
        *examples,
        "run",
        "support-inbox",
        "About the thing",
        "--trigger",
        "email_received",
        "--variables",
        '{"conversation_id": "AAQk-1"}',
        "--model",
        INBOX_SCRIPT,
    )
    run = cli(
        *examples,
        "run",
        "support-inbox",
        "It's ORD-1001.",
        "--session",
        "AAQk-1",
        "--trigger",
        "sms_reply",
        "--model",
        INBOX_SCRIPT,
        "--json",
    )
    assert run.code == 0
    assert run.json()["disposition"] == "deliver"
    assert run.json()["kind"] == "completed"


def test_an_undeclared_trigger_on_a_new_session_exits_1(cli, examples):
    run = cli(
        *examples, "run", "support-inbox", "Hello", "--session", "new-1", "--trigger", "sms", "--model", INBOX_SCRIPT
    )
    assert run.code == 1
    assert run.err.startswith("error: trigger 'sms' is not declared")


def test_session_path_flag_reads_the_id_from_the_variables(cli, examples):
    run = cli(
        *examples,
        "run",
        "support-inbox",
        "About the thing",
        "--trigger",
        "email_received",
        "--session-path",
        "triggers.-1.conversationId",
        "--variables",
        '{"triggers": [{"conversationId": "AAQk1"}]}',
        "--model",
        INBOX_SCRIPT,
        "--json",
    )
    assert run.code == 0
    assert run.json()["session_id"] == "AAQk1"


def test_json_prints_the_outcome_model(cli, examples):
    run = cli(
        *examples,
        "--json",
        "run",
        "support-inbox",
        "About the thing",
        "--trigger",
        "email_received",
        "--variables",
        '{"conversation_id": "AAQk-1"}',
        "--model",
        INBOX_SCRIPT,
    )
    doc = run.json()
    assert run.code == 0
    assert doc["kind"] == "parked" and doc["parked_channel"] == "input"
    assert doc["pending"]["reason"] == "the customer's order number"
    assert run.err == ""


def test_completed_turn_without_workflow_argument_in_a_one_workflow_workspace_prints_the_reply(cli, chores, script):
    run = cli(*chores, "run", "Sweep", "the", "floor", "--model", script([{"say": "Swept."}]))
    assert (run.code, run.out, run.err) == (0, "Swept.\n", "")


def test_raise_prints_failed_line_and_exits_1(cli, chores, script):
    model = script(
        [{"say": "I cannot.", "call": {"archmax_raise": {"code": "no-broom", "reason": "The broom is gone."}}}]
    )
    run = cli(*chores, "run", "Sweep", "--model", model)
    assert run.code == 1
    assert run.out == "I cannot.\n"
    assert run.err == "✖ failed: no-broom — The broom is gone.\n"


def test_exhausted_turn_budget_prints_rejected_line_and_exits_1(cli, chores, script):
    busy = {"call": {"archmax_get_variables": {}}}
    run = cli(*chores, "run", "Sweep", "--model", script([busy, busy, busy]))
    assert run.code == 1
    assert run.err == "✖ rejected: state 'work' exhausted its turn budget (maxTurns: 2)\n"


def test_json_keeps_the_exit_code_of_a_failed_result(cli, chores, script):
    model = script([{"call": {"archmax_raise": {"code": "x", "reason": "y"}}}])
    run = cli(*chores, "run", "Sweep", "--model", model, "--json")
    assert run.code == 1
    assert run.json()["kind"] == "failed"


def test_a_first_word_naming_a_workflow_is_the_workflow_not_the_prompt(cli, chores, script):
    run = cli(*chores, "run", "chores", "--model", script([{"say": "Done."}]), "--json")
    # "chores" names the only workflow, so it is taken as the workflow, not the prompt: no message
    assert run.code == 2
    assert run.err.startswith("error: session ")
    assert "message is empty" in run.err


def test_workflow_argument_is_required_when_the_workspace_holds_several(cli, refunds, script):
    run = cli(*refunds, "run", "Please", "refund", "--model", script([{"say": "ok"}]))
    assert run.code == 2
    assert run.err == (
        f"error: no workflow 'Please' under {refunds[1]}/workflows/ (found: chores, refunds); "
        "name it first: archmax run <workflow> <prompt...>\n"
    )


def test_variables_from_a_file(cli, chores, script, tmp_path):
    (tmp_path / "vars.json").write_text('{"room": "kitchen"}', encoding="utf-8")
    run = cli(
        *chores,
        "run",
        "Sweep",
        "--variables",
        f"@{tmp_path / 'vars.json'}",
        "--model",
        script([{"say": "Done."}]),
        "--json",
    )
    assert run.json()["variables"]["room"] == {"value": "kitchen", "locked": True}


def test_file_flag_places_the_file_and_seeds_its_variable_with_the_path(cli, chores, script, tmp_path):
    (tmp_path / "list.txt").write_text("mop\nbucket\n", encoding="utf-8")
    run = cli(
        *chores,
        "run",
        "Sweep",
        "--session",
        "c-1",
        "--file",
        f"todo={tmp_path / 'list.txt'}",
        "--model",
        script([{"say": "Done."}]),
        "--json",
    )
    assert run.code == 0
    assert run.json()["variables"]["todo"] == {"value": "scratchpad/attachments/list.txt", "locked": True}
    store = FilesystemStore(Path(chores[3]))
    assert store.get("c-1", "scratchpad/attachments/list.txt") == b"mop\nbucket\n"


def test_missing_model_configuration_exits_1_and_says_how_to_configure(cli, chores):
    run = cli(*chores, "run", "Sweep")
    assert run.code == 1
    assert run.err.startswith("error: no model is configured")
    assert "ARCHMAX_MODEL" in run.err


def test_model_comes_from_archmax_model_when_no_flag(cli, chores, script, monkeypatch):
    monkeypatch.setenv("ARCHMAX_MODEL", script([{"say": "From the environment."}]))
    run = cli(*chores, "run", "Sweep")
    assert (run.code, run.out) == (0, "From the environment.\n")


def test_unresolved_trigger_path_mints_an_id_and_warns(cli, examples):
    run = cli(
        *examples, "run", "support-inbox", "About the thing", "--trigger", "email_received", "--model", INBOX_SCRIPT
    )
    assert run.code == 0
    assert run.err.startswith("warning: session path 'conversation_id' did not resolve")
    assert "waiting: session 'session-" in run.err


def test_outputs_carry_no_colour_codes_when_not_a_terminal(cli, examples, monkeypatch):
    monkeypatch.delenv("NO_COLOR")
    run = cli(
        *examples,
        "run",
        "support-inbox",
        "Hi",
        "--trigger",
        "email_received",
        "--variables",
        '{"conversation_id": "c"}',
        "--model",
        INBOX_SCRIPT,
    )
    assert "\033[" not in run.out + run.err


def test_json_output_is_valid_json_even_with_unicode(cli, chores, script):
    run = cli(*chores, "run", "Café", "--model", script([{"say": "Café ☕"}]), "--json")
    assert json.loads(run.out)["reply"] == "Café ☕"


def test_a_bad_variable_name_is_one_error_line_with_no_minted_session_warning_before_it(cli, examples):
    run = cli(*examples, "run", "support-inbox", "hi", "--trigger", "email_received",
              "--variables", '{"Bad": 1}', "--model", INBOX_SCRIPT)  # fmt: skip
    assert run.code == 2 and run.out == ""
    assert run.err == "error: variable name 'Bad' passed to run is not usable: names must match ^[a-z][a-z0-9_]*$\n"
    assert cli(*examples, "sessions", "--json").json() == []


def test_a_variable_given_both_as_a_variable_and_a_file_is_refused_before_any_warning(cli, examples, tmp_path):
    (tmp_path / "note.txt").write_text("hello", encoding="utf-8")
    run = cli(*examples, "run", "support-inbox", "hi", "--trigger", "email_received",
              "--variables", '{"note": 1}', "--file", f"note={tmp_path / 'note.txt'}", "--model", INBOX_SCRIPT)  # fmt: skip
    assert run.code == 2 and not run.err.startswith("warning")
    assert "supplied both as a variable and as a file" in run.err


def test_naming_a_workflow_in_a_folder_without_workflows_says_that_workflow_was_not_found(cli, tmp_path):
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    run = cli("--root", str(empty), "run", "support-inbox", "Where", "is", "my", "order?", "--model", INBOX_SCRIPT)
    assert run.code == 2 and run.out == ""
    assert run.err == (
        f"error: no workflow 'support-inbox' under {empty}/workflows/ "
        "(found: no workflows/*/workflow.yaml there); run from the workspace folder or pass --root\n"
    )


def test_a_whole_sentence_as_the_first_word_in_a_folder_without_workflows_is_not_called_a_workflow(cli, tmp_path):
    run = cli("--root", str(tmp_path), "run", "Where is my order?", "--model", INBOX_SCRIPT)
    assert run.code == 2
    assert run.err == f"error: no workflows/*/workflow.yaml under '{tmp_path}'; name a workflow or pass --root\n"


def test_the_prompt_may_follow_the_flags_in_the_seeds_own_form(cli, examples, tmp_path):
    run = cli(
        *examples,
        "run",
        "support-inbox",
        "--trigger",
        "email_received",
        "--session-path",
        "triggers.-1.conversationId",
        "--variables",
        '{"triggers": [{"conversationId": "AAQk1"}]}',
        "--model",
        INBOX_SCRIPT,
        "About the thing",
        "we discussed",
    )
    assert run.code == 0, run.err
    record = FilesystemStore(tmp_path / "examples-store").load("AAQk1")
    assert record.messages[0].content == "About the thing we discussed"


def test_a_leftover_flag_after_the_prompt_is_still_a_usage_error(cli, examples):
    run = cli(*examples, "run", "support-inbox", "--model", INBOX_SCRIPT, "Hello", "--bogus")
    assert run.code == 2 and run.err == "error: unrecognized arguments: --bogus\n"
    run = cli(*examples, "sessions", "extra-word", "another")
    assert run.code == 2 and "unrecognized arguments: another" in run.err
