"""``archmax email``, ``archmax test`` and ``archmax sweep`` (BEHAVIOUR.md §11, §10; issue 3)."""

from __future__ import annotations

from ._support import BANK_SCRIPT, CHORES, EMAILS, INBOX_SCRIPT, make_workspace

CONVERSATION = "mail:3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"  # a mail-opened session (issue 21 item 3)


def _email(cli, flags, name, *extra):
    return cli(*flags, "email", str(EMAILS / name), "--workflow", "support-inbox", "--model", INBOX_SCRIPT, *extra)


def test_first_email_starts_the_conversation_session_and_parks(cli, examples):
    run = _email(cli, examples, "01-first.eml")
    assert run.code == 0
    assert "Which order is this about?" in run.out
    assert f"-> session '{CONVERSATION}' (email_received: turn)" in run.err
    assert f"waiting: session '{CONVERSATION}' awaits input in state 'clarify'" in run.err


def test_reply_email_resumes_the_same_session_and_completes(cli, examples):
    _email(cli, examples, "01-first.eml")
    run = _email(cli, examples, "02-reply.eml", "--json")
    assert run.code == 0
    outcome = run.json()
    assert outcome["session_id"] == CONVERSATION
    assert (outcome["disposition"], outcome["kind"], outcome["state"]) == ("deliver", "completed", "answer")
    assert outcome["variables"]["reply_body"]["value"] == "It's ORD-1001."


def test_the_same_email_delivered_twice_is_applied_once(cli, examples):
    _email(cli, examples, "01-first.eml")
    _email(cli, examples, "02-reply.eml")
    again = _email(cli, examples, "02-reply.eml")
    assert again.code == 0
    assert "duplicate: " in again.err
    assert again.out == ""


def test_email_without_workflow_flag_in_a_two_workflow_root_exits_2(cli, examples):
    run = cli(*examples, "email", str(EMAILS / "01-first.eml"), "--model", INBOX_SCRIPT)
    assert run.code == 2


def test_archmax_test_runs_the_cases_of_a_workflow(cli, examples):
    run = cli(*examples, "test", "support-inbox", "park-and-resume")
    assert run.code == 0
    assert "park-and-resume" in run.out


def test_archmax_test_exits_1_when_the_filter_matches_nothing(cli, examples):
    run = cli(*examples, "test", "support-inbox", "no-such-case")
    assert run.code == 1


def test_archmax_test_json_prints_the_results(cli, examples):
    doc = cli(*examples, "test", "support-inbox", "park-and-resume", "--json").json()
    assert doc["exit_code"] == 0
    assert [r["id"] for r in doc["results"]] == ["park-and-resume"]


def test_archmax_test_of_a_disabled_workflow_skips_the_suite(cli, tmp_path):
    root = make_workspace(tmp_path / "ws", chores={**CHORES, "disabled": True})
    run = cli("--root", str(root), "test")
    assert (run.code, run.out) == (0, "suite skipped — disabled\n")


def _park_bank(cli, flags, sid="b-1"):
    run = cli(
        *flags,
        "run",
        "bank-check",
        "Payment due",
        "--session",
        sid,
        "--trigger",
        "payment_expected",
        "--variables",
        '{"reference": "INV-1042"}',
        "--model",
        BANK_SCRIPT,
    )
    assert run.code == 0
    return cli(*flags, "sessions", sid, "--json").json()["resume_at"]


def test_sweep_wakes_a_due_session_with_the_timer_trigger(cli, examples):
    due = _park_bank(cli, examples)
    run = cli(*examples, "sweep", "--now", due, "--model", BANK_SCRIPT)
    # the wake parked again with a message for a person: printed, indented, under its line
    assert (run.code, run.out) == (
        0,
        "b-1  parked\n    Payment INV-1042 has not posted yet (check 2). I will look again tomorrow.\n",
    )
    shown = cli(*examples, "sessions", "b-1", "--json").json()
    assert shown["variables"]["trigger"]["value"] == "timer"
    assert shown["variables"]["now"]["value"] == due
    assert shown["resume_at"] > due


def test_sweep_before_the_due_instant_wakes_nothing(cli, examples):
    _park_bank(cli, examples)
    run = cli(*examples, "sweep", "--now", "2000-01-01", "--model", BANK_SCRIPT)
    assert (run.code, run.out) == (0, "")
    assert run.err == "nothing due at 2000-01-01T00:00:00.000Z\n"


def test_a_second_sweep_at_the_same_instant_wakes_nothing(cli, examples):
    due = _park_bank(cli, examples)
    cli(*examples, "sweep", "--now", due, "--model", BANK_SCRIPT)
    again = cli(*examples, "sweep", "--now", due, "--model", BANK_SCRIPT, "--json")
    assert (again.code, again.json()) == (0, [])


def test_sweep_orders_due_sessions_by_resume_at_then_id(cli, examples):
    _park_bank(cli, examples, "b-2")
    _park_bank(cli, examples, "b-1")
    listed = cli(*examples, "sessions", "--json").json()
    expected = [s["session_id"] for s in sorted(listed, key=lambda s: (s["resume_at"], s["session_id"]))]
    run = cli(*examples, "sweep", "--now", "2999-01-01", "--model", BANK_SCRIPT, "--json")
    assert [r["session_id"] for r in run.json()] == expected
    assert {r["result"] for r in run.json()} == {"parked"}


def test_sweep_exits_1_when_a_wake_ends_failed(cli, tmp_path, script):
    waiting = {**CHORES["states"]["work"], "budget": {}}
    root = make_workspace(tmp_path / "ws", chores={"title": "Chores", "states": {"work": waiting}})
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    model = script(
        [
            {"say": "Tomorrow.", "call": {"archmax_wait": {"reason": "the weekend", "until": "1d"}}},
            {"call": {"archmax_raise": {"code": "gave-up", "reason": "Too tired."}}},
        ]
    )
    assert cli(*flags, "run", "Sweep", "--session", "w-1", "--model", model).code == 0
    run = cli(*flags, "sweep", "--now", "2999-01-01", "--model", model)
    assert (run.code, run.out) == (1, "w-1  failed\n")


def test_sweep_exits_1_and_reports_a_delivery_that_raised(cli, tmp_path, script):
    waiting = {**CHORES["states"]["work"], "budget": {}}
    root = make_workspace(tmp_path / "ws", chores={"title": "Chores", "states": {"work": waiting}})
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    model = script([{"say": "Tomorrow.", "call": {"archmax_wait": {"reason": "the weekend", "until": "1d"}}}])
    cli(*flags, "run", "Sweep", "--session", "w-1", "--model", model)
    run = cli(*flags, "sweep", "--now", "2999-01-01", "--model", model)  # the script has no answer left
    assert run.code == 1
    assert run.out == "w-1  error\n"
    assert run.err.startswith("error: session 'w-1': model script exhausted after 1 responses")


def test_sweep_workflow_flag_limits_it_to_one_workflow(cli, examples):
    _park_bank(cli, examples)
    run = cli(*examples, "sweep", "--now", "2999-01-01", "--workflow", "support-inbox", "--model", BANK_SCRIPT)
    assert (run.code, run.out) == (0, "")


def test_sweep_finishes_a_turn_whose_process_died_and_prints_recovered(cli, tmp_path, script):
    waiting = {**CHORES["states"]["work"], "budget": {}}
    root = make_workspace(tmp_path / "ws", chores={"title": "Chores", "states": {"work": waiting}})
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    wait = {"say": "Tomorrow.", "call": {"archmax_wait": {"reason": "the weekend", "until": "1d"}}}
    cli(*flags, "run", "Sweep", "--session", "w-1", "--model", script([wait]))
    died = cli(*flags, "sweep", "--now", "2999-01-01", "--model", script([wait]))  # the timer turn dies
    assert (died.code, died.out) == (1, "w-1  error\n")
    assert cli(*flags, "sessions", "w-1", "--json").json()["status"] == "running"

    run = cli(*flags, "sweep", "--now", "2999-01-01T00:01:00Z", "--model", script([wait, {"say": "Done."}]))
    assert (run.code, run.out) == (0, "w-1  recovered\n    Done.\n")
    assert cli(*flags, "sessions", "w-1", "--json").json()["status"] == "completed"
    again = cli(*flags, "sweep", "--now", "2999-01-01T00:02:00Z", "--model", script([wait]), "--json")
    assert (again.code, again.json()) == (0, [])


def test_sweep_json_reports_a_recovered_turn_with_its_outcome(cli, tmp_path, script):
    waiting = {**CHORES["states"]["work"], "budget": {}}
    root = make_workspace(tmp_path / "ws", chores={"title": "Chores", "states": {"work": waiting}})
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    wait = {"say": "Tomorrow.", "call": {"archmax_wait": {"reason": "the weekend", "until": "1d"}}}
    cli(*flags, "run", "Sweep", "--session", "w-1", "--model", script([wait]))
    cli(*flags, "sweep", "--now", "2999-01-01", "--model", script([wait]))
    run = cli(*flags, "sweep", "--now", "2999-01-01T00:01:00Z", "--model", script([wait, {"say": "Done."}]), "--json")
    assert run.json() == [{"session_id": "w-1", "result": "recovered", "outcome": "completed"}]


def test_sweep_prints_a_multi_line_reply_indented_under_its_line(cli, tmp_path, script):
    waiting = {**CHORES["states"]["work"], "budget": {}}
    root = make_workspace(tmp_path / "ws", chores={"title": "Chores", "states": {"work": waiting}})
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    wait = {"say": "Tomorrow.", "call": {"archmax_wait": {"reason": "the weekend", "until": "1d"}}}
    done = {"say": "Swept the kitchen.\n\nThe hall is next."}
    cli(*flags, "run", "Sweep", "--session", "w-1", "--model", script([wait]))
    run = cli(*flags, "sweep", "--now", "2999-01-01", "--model", script([wait, done]))
    assert (run.code, run.out) == (0, "w-1  completed\n    Swept the kitchen.\n\n    The hall is next.\n")


def test_sweep_json_carries_no_reply_text(cli, tmp_path, script):
    waiting = {**CHORES["states"]["work"], "budget": {}}
    root = make_workspace(tmp_path / "ws", chores={"title": "Chores", "states": {"work": waiting}})
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    wait = {"say": "Tomorrow.", "call": {"archmax_wait": {"reason": "the weekend", "until": "1d"}}}
    cli(*flags, "run", "Sweep", "--session", "w-1", "--model", script([wait]))
    run = cli(*flags, "sweep", "--now", "2999-01-01", "--model", script([wait, {"say": "All done."}]), "--json")
    assert (run.code, run.json()) == (0, [{"session_id": "w-1", "result": "completed"}])


def test_sweep_prints_no_text_under_a_wake_that_ended_failed(cli, tmp_path, script):
    waiting = {**CHORES["states"]["work"], "budget": {}}
    root = make_workspace(tmp_path / "ws", chores={"title": "Chores", "states": {"work": waiting}})
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    wait = {"say": "Tomorrow.", "call": {"archmax_wait": {"reason": "the weekend", "until": "1d"}}}
    gave_up = {"say": "I cannot do this.", "call": {"archmax_raise": {"code": "gave-up", "reason": "Too tired."}}}
    cli(*flags, "run", "Sweep", "--session", "w-1", "--model", script([wait]))
    run = cli(*flags, "sweep", "--now", "2999-01-01", "--model", script([wait, gave_up]))
    assert (run.code, run.out) == (1, "w-1  failed\n")
