"""``archmax deliver``, ``decide`` and ``reply`` (BEHAVIOUR.md §11, §3.5–§3.7)."""

from __future__ import annotations

import pytest

from ._support import INBOX_SCRIPT

REFUND_SCRIPT = [
    {"expect_state": "intake", "call": {"archmax_advance": {"to": "review", "reason": "Refunds need a person."}}},
    {"expect_state": "review", "say": "Your refund is with our finance team for approval."},
]


@pytest.fixture
def parked_inbox(cli, examples):
    """support-inbox session ``c-1`` parked in ``clarify`` awaiting the order number."""
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
    assert run.code == 0
    return examples


@pytest.fixture
def parked_refund(cli, refunds, script):
    """refunds session ``r-1`` parked at the human state ``review``; returns (flags, model entries)."""

    def park(extra: list[dict]) -> tuple[list[str], str]:
        model = script(REFUND_SCRIPT + extra)
        run = cli(
            *refunds,
            "run",
            "refunds",
            "Please refund order 7",
            "--session",
            "r-1",
            "--trigger",
            "refund_requested",
            "--model",
            model,
        )
        assert run.code == 0, run.err
        return refunds, model

    return park


def test_deliver_resumes_the_park_and_prints_the_answer(cli, parked_inbox):
    run = cli(
        *parked_inbox,
        "deliver",
        "c-1",
        "--trigger",
        "email_reply",
        "--variables",
        '{"reply_body": "It is ORD-1001."}',
        "--model",
        INBOX_SCRIPT,
    )
    assert run.code == 0
    assert "ORD-1001" in run.out
    assert run.err == ""


def test_deliver_message_flag_lands_in_the_transcript(cli, parked_inbox):
    run = cli(
        *parked_inbox,
        "deliver",
        "c-1",
        "--trigger",
        "email_reply",
        "--message",
        "It is ORD-1001.",
        "--model",
        INBOX_SCRIPT,
        "--json",
    )
    assert run.code == 0
    users = [m["content"] for m in run.json()["messages"] if m["role"] == "user"]
    assert users == ["About the thing", "It is ORD-1001."]


def test_deliver_to_a_session_that_is_not_parked_exits_1_and_names_it(cli, parked_inbox):
    cli(*parked_inbox, "deliver", "c-1", "--trigger", "email_reply", "--model", INBOX_SCRIPT)
    run = cli(*parked_inbox, "deliver", "c-1", "--trigger", "email_reply", "--model", INBOX_SCRIPT)
    assert run.code == 1
    assert run.err == "error: session 'c-1' is not parked awaiting an event: its status is 'completed'\n"


def test_deliver_bad_variable_name_exits_2(cli, parked_inbox):
    run = cli(*parked_inbox, "deliver", "c-1", "--trigger", "t", "--variables", '{"Reply": 1}', "--model", INBOX_SCRIPT)
    assert run.code == 2
    assert run.err.startswith("error: variable name 'Reply'")


def test_session_commands_find_the_workflow_from_the_session_itself(cli, parked_inbox):
    # examples/ holds two workflows, and no --workflow is given: the checkpoint names support-inbox
    run = cli(*parked_inbox, "deliver", "c-1", "--trigger", "email_reply", "--model", INBOX_SCRIPT, "--json")
    assert run.code == 0 and run.json()["kind"] == "completed"


def test_workflow_flag_naming_an_unknown_workflow_exits_2(cli, parked_inbox):
    run = cli(*parked_inbox, "deliver", "c-1", "--trigger", "x", "--workflow", "nope", "--model", INBOX_SCRIPT)
    assert run.code == 2


def test_park_at_a_human_state_prints_decision_waiting_line_and_decide_command(cli, refunds, script):
    run = cli(
        *refunds,
        "run",
        "refunds",
        "Please refund order 7",
        "--session",
        "r-1",
        "--trigger",
        "refund_requested",
        "--model",
        script(REFUND_SCRIPT),
    )
    assert run.code == 0
    assert run.out == "Your refund is with our finance team for approval.\n"
    err = run.err.splitlines()
    assert err[0] == "waiting: session 'r-1' awaits a decision in state 'review'"
    assert err[1].startswith("next: archmax decide r-1 ")
    assert "--to 'refunded|refused'" in err[1]


def test_decide_routes_along_the_chosen_edge_and_completes(cli, parked_refund):
    flags, model = parked_refund([{"expect_state": "refunded", "say": "The refund is on its way."}])
    run = cli(*flags, "decide", "r-1", "--to", "refunded", "--comment", "ok by finance", "--model", model)
    assert (run.code, run.out) == (0, "The refund is on its way.\n")
    trail = cli(*flags, "decide", "r-1", "--to", "refunded", "--model", model)
    assert trail.code == 1  # no longer parked
    assert "is not parked awaiting a decision" in trail.err


def test_decide_to_a_state_that_is_not_an_edge_exits_1_and_lists_the_choices(cli, parked_refund):
    flags, model = parked_refund([])
    run = cli(*flags, "decide", "r-1", "--to", "intake", "--model", model)
    assert run.code == 1
    assert run.err == (
        "error: 'intake' is not a valid decision target for session 'r-1'. Choose one of: refunded, refused.\n"
    )


def test_reply_prints_the_answer_then_the_waiting_line_because_the_session_stays_parked(cli, parked_refund):
    flags, model = parked_refund([{"say": "Finance will decide today."}])
    run = cli(*flags, "reply", "r-1", "Any", "news?", "--model", model)
    assert run.code == 0
    assert run.out == "Finance will decide today.\n"
    assert run.err.splitlines()[0] == "waiting: session 'r-1' awaits a decision in state 'review'"
    assert cli(*flags, "sessions", "r-1", "--json").json()["status"] == "awaiting_decision"


def test_reply_with_no_words_exits_2(cli, parked_refund):
    flags, model = parked_refund([])
    run = cli(*flags, "reply", "r-1", "--model", model)
    assert run.code == 2
    assert run.err == "error: session 'r-1': the message is empty\n"


def test_reply_to_a_session_parked_on_input_exits_1(cli, parked_inbox):
    run = cli(*parked_inbox, "reply", "c-1", "hello", "--model", INBOX_SCRIPT)
    assert run.code == 1
    assert "is not parked awaiting a decision" in run.err


def test_reply_and_decide_take_park_id_and_refuse_one_that_is_not_the_current_park(cli, parked_refund):
    """BEHAVIOUR.md §5.11 (issue 21 item 6): ``--park-id`` on ``reply`` and ``decide``."""
    flags, model = parked_refund([{"say": "It is order 7."}, {"expect_state": "refunded", "say": "Refunded."}])
    current = cli(*flags, "sessions", "r-1", "--json").json()["park_id"]
    stale = "r-1@v1"  # the session's first commit: not its park now
    assert current and current != stale
    for args in (("reply", "r-1", "Which order?"), ("decide", "r-1", "--to", "refunded")):
        refused = cli(*flags, *args, "--park-id", stale, "--model", model)
        assert refused.code == 1 and stale in refused.err and current in refused.err
        assert cli(*flags, "sessions", "r-1", "--json").json()["status"] == "awaiting_decision"
    replied = cli(*flags, "reply", "r-1", "Which order?", "--park-id", current, "--model", model)
    assert replied.code == 0, replied.err
    decided = cli(*flags, "decide", "r-1", "--to", "refunded", "--park-id", current, "--model", model)
    assert (decided.code, decided.out) == (0, "Refunded.\n"), decided.err
