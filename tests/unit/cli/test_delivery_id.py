"""``--delivery-id`` on ``run``, ``deliver`` and ``reply``, and the ``next:`` line after a turn stops part-way.

User-test finding 3: retrying a CLI command after a model error added the message again, and a
refusal of a ``running`` session named no way out. With ``--delivery-id`` the session applies the
event once (BEHAVIOUR.md §3.4 delivery ids): the same command again finishes the turn the id started,
and a later repeat is a duplicate (exit 0, nothing changed). The model "outage" here is a script that
runs out, a retryable model error (``ModelScriptError``) that leaves the turn ``running`` for recovery.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archmax.hosting.inbox import FilesystemInbox
from archmax.hosting.inbox_base import InboxItem
from archmax.session.firing import Firing
from archmax.stores.filesystem import FilesystemStore

ADVANCE = {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}}
ASK = {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}}
VARS = '{"conversation_id": "m-1"}'
REFUND_SCRIPT = [
    {"expect_state": "intake", "call": {"archmax_advance": {"to": "review", "reason": "Refunds need a person."}}},
    {"expect_state": "review", "say": "Your refund is with our finance team for approval."},
]


def user_messages(store: Path, session_id: str) -> list[str]:
    record = FilesystemStore(store).load(session_id)
    assert record is not None
    return [m.content for m in record.messages if m.role == "user"]


def store_of(flags: list[str]) -> Path:
    return Path(flags[flags.index("--store") + 1])


def test_run_retried_with_its_delivery_id_finishes_the_turn_once_and_a_repeat_is_a_duplicate(cli, examples, script):
    run_m1 = [*examples, "run", "support-inbox", "Where is my order?", "--trigger", "email_received",
              "--variables", VARS, "--delivery-id", "d-1"]  # fmt: skip
    failed = cli(*run_m1, "--model", script([ADVANCE]))  # the second model call finds the script exhausted
    assert failed.code == 1
    err = failed.err.splitlines()
    assert err[0].startswith("error: model script exhausted")
    assert err[1].startswith("next: once the model answers, repeat this command (same --delivery-id d-1) or run ")
    assert "archmax sweep" in err[1] and "session 'm-1'" in err[1]
    assert cli(*examples, "sessions", "m-1", "--json").json()["status"] == "running"

    retried = cli(*run_m1, "--model", script([ADVANCE, ASK]))
    assert retried.code == 0, retried.err
    assert retried.out == "Which order is this about?\n"
    assert user_messages(store_of(examples), "m-1") == ["Where is my order?"]

    before = sorted(p.name for p in (store_of(examples) / "m-1" / "checkpoints").iterdir())
    repeat = cli(*run_m1, "--model", script([ADVANCE, ASK]))
    assert (repeat.code, repeat.out) == (0, "")
    assert repeat.err == "duplicate: session 'm-1' has already applied delivery 'd-1'\n"
    assert sorted(p.name for p in (store_of(examples) / "m-1" / "checkpoints").iterdir()) == before


def test_run_without_a_delivery_id_says_sweep_finishes_the_turn_and_a_retry_would_repeat_the_message(
    cli, examples, script
):
    failed = cli(*examples, "run", "support-inbox", "Where is my order?", "--trigger", "email_received",
                 "--variables", VARS, "--model", script([ADVANCE]))  # fmt: skip
    assert failed.code == 1
    hint = failed.err.splitlines()[1]
    assert hint.startswith("next: once the model answers, archmax sweep ")
    assert "finishes the turn of session 'm-1'" in hint and "pass --delivery-id" in hint

    # the way out it names works: the sweep takes the dead turn over and the session parks
    swept = cli(*examples, "sweep", "--model", script([ADVANCE, ASK]))
    assert swept.code == 0, swept.err
    assert cli(*examples, "sessions", "m-1", "--json").json()["status"] == "awaiting_input"
    assert user_messages(store_of(examples), "m-1") == ["Where is my order?"]


def test_deliver_to_a_running_session_whose_turn_stopped_names_sweep(cli, examples, script):
    cli(*examples, "run", "support-inbox", "Where is my order?", "--trigger", "email_received",
        "--variables", VARS, "--model", script([ADVANCE]))  # fmt: skip
    refused = cli(*examples, "deliver", "m-1", "--trigger", "email_reply", "--model", script([ADVANCE, ASK]))
    assert refused.code == 1
    err = refused.err.splitlines()
    assert err[0] == "error: session 'm-1' is not parked awaiting an event: its status is 'running'"
    assert err[1].startswith("next: session 'm-1' is 'running' with a turn that stopped part-way: archmax sweep ")
    assert "--delivery-id" in err[1]


def test_deliver_with_a_delivery_id_applies_it_once(cli, examples, script):
    model = script([ADVANCE, ASK, {"say": "ORD-1001 ships tomorrow."}])
    cli(*examples, "run", "support-inbox", "Where is my order?", "--trigger", "email_received",
        "--variables", VARS, "--model", model)  # fmt: skip
    deliver = [*examples, "deliver", "m-1", "--trigger", "email_reply", "--message", "It is ORD-1001.",
               "--delivery-id", "reply-1", "--model", model]  # fmt: skip
    first = cli(*deliver)
    assert (first.code, first.out) == (0, "ORD-1001 ships tomorrow.\n")
    again = cli(*deliver, "--json")
    assert again.code == 0 and again.json()["duplicate"] is True
    assert user_messages(store_of(examples), "m-1") == ["Where is my order?", "It is ORD-1001."]


@pytest.fixture
def parked_refund(cli, refunds, script):
    """refunds session ``r-1`` parked at the human state ``review``."""
    run = cli(*refunds, "run", "refunds", "Please refund order 7", "--session", "r-1",
              "--trigger", "refund_requested", "--model", script(REFUND_SCRIPT))  # fmt: skip
    assert run.code == 0, run.err
    return refunds


def test_reply_with_a_delivery_id_keeps_the_message_once_when_retried_after_a_model_error(cli, parked_refund, script):
    reply = [*parked_refund, "reply", "r-1", "Any", "news?", "--delivery-id", "q-1"]
    failed = cli(*reply, "--model", script(REFUND_SCRIPT))  # the reply's model call finds nothing left
    assert failed.code == 1 and failed.err.startswith("error: model script exhausted")
    # the reply stays parked with the person's message kept (§3.6): a retry of the same id applies nothing more
    assert cli(*parked_refund, "sessions", "r-1", "--json").json()["status"] == "awaiting_decision"
    retried = cli(*reply, "--model", script([*REFUND_SCRIPT, {"say": "Finance will decide today."}]))
    assert retried.code == 0 and retried.err == "duplicate: session 'r-1' has already applied delivery 'q-1'\n"
    assert user_messages(store_of(parked_refund), "r-1") == ["Please refund order 7", "Any news?"]

    answered = cli(*parked_refund, "reply", "r-1", "Still", "there?", "--delivery-id", "q-2",
                   "--model", script([*REFUND_SCRIPT, {"say": "Finance will decide today."}]))  # fmt: skip
    assert (answered.code, answered.out) == (0, "Finance will decide today.\n"), answered.err
    assert user_messages(store_of(parked_refund), "r-1") == ["Please refund order 7", "Any news?", "Still there?"]


def test_reply_with_a_delivery_id_to_a_session_not_at_a_human_state_is_refused_as_before(cli, examples, script):
    cli(*examples, "run", "support-inbox", "Where is my order?", "--trigger", "email_received",
        "--variables", VARS, "--model", script([ADVANCE, ASK]))  # fmt: skip
    run = cli(*examples, "reply", "m-1", "hello", "--delivery-id", "x-1", "--model", script([]))
    assert run.code == 1 and "is not parked awaiting a decision" in run.err
    assert user_messages(store_of(examples), "m-1") == ["Where is my order?"]


ASK_ADDRESS = {"say": "And the delivery address?", "call": {"archmax_wait": {"reason": "the address"}}}


def test_deliver_with_a_stale_park_id_is_refused_and_with_the_current_one_is_applied(cli, examples, script):
    """BEHAVIOUR.md §5.11 (issue 21 item 6): ``--park-id`` names the question an answer is for."""
    model = script([ADVANCE, ASK, ASK_ADDRESS, {"say": "Shipping ORD-1 there."}])
    asked = cli(*examples, "run", "support-inbox", "Where is my order?", "--trigger", "email_received",
                "--variables", VARS, "--model", model)  # fmt: skip
    assert asked.code == 0, asked.err
    first = cli(*examples, "sessions", "m-1", "--json").json()["park_id"]
    answered = cli(*examples, "deliver", "m-1", "--trigger", "email_reply", "--message", "ORD-1",
                   "--park-id", first, "--model", model)  # fmt: skip
    assert answered.code == 0, answered.err
    second = cli(*examples, "sessions", "m-1", "--json").json()["park_id"]
    assert second != first
    before = sorted(p.name for p in (store_of(examples) / "m-1" / "checkpoints").iterdir())
    late = cli(*examples, "deliver", "m-1", "--trigger", "email_reply", "--message", "ORD-1",
               "--park-id", first, "--model", model)  # fmt: skip
    assert late.code != 0 and first in late.err and second in late.err
    assert sorted(p.name for p in (store_of(examples) / "m-1" / "checkpoints").iterdir()) == before
    current = cli(*examples, "deliver", "m-1", "--trigger", "email_reply", "--message", "12 Main St",
                  "--park-id", second, "--model", model)  # fmt: skip
    assert current.code == 0, current.err


def _queue(store: Path, delivery_id: str, text: str, session_id: str = "m-1") -> None:
    """Put a pending firing in the inbox ``archmax serve`` keeps beside the store (it waits there)."""
    firing = Firing(trigger="email_reply", message=text, delivery_id=delivery_id)
    item = InboxItem(
        session_id=session_id, delivery_id=delivery_id, arrived_at="2026-01-01T00:00:00.000Z", firing=firing
    )
    assert FilesystemInbox(store).put(item)


def _files(root: Path) -> list[tuple[str, bytes]]:
    return sorted((str(p.relative_to(root)), p.read_bytes()) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("command", ["deliver", "run"])
def test_a_delivery_id_waiting_in_the_inbox_is_refused_by_every_cli_door_and_nothing_changes(
    cli, examples, script, command
):
    """Issue 22: the CLI's direct firings never overtake the inbox ``archmax serve`` drains; ``deliver``
    went straight to the engine and applied ``q-2`` ahead of ``q-1`` (found by attack29)."""
    model = script([ADVANCE, ASK, {"say": "ORD-1001 ships tomorrow."}])
    cli(*examples, "run", "support-inbox", "Where is my order?", "--trigger", "email_received",
        "--variables", VARS, "--model", model)  # fmt: skip
    store = store_of(examples)
    _queue(store, "q-1", "It is ORD-1001.")
    _queue(store, "q-2", "Any news?")
    before = _files(store)
    args = {
        "deliver": ["deliver", "m-1", "--trigger", "email_reply", "--message", "Any news?"],
        "run": ["run", "support-inbox", "Any news?", "--trigger", "email_reply", "--variables", VARS],
    }[command]
    refused = cli(*examples, *args, "--delivery-id", "q-2", "--model", model)
    assert refused.code == 1 and refused.out == ""
    err = refused.err.splitlines()
    assert err[0].startswith("error: delivery 'q-2' waits in the inbox of session 'm-1'"), refused.err
    # the CLI's sweep does not drain the inbox: the way out names the server that does (attack29)
    assert err[1].startswith("next: archmax serve --root ") and "applies delivery 'q-2'" in err[1], refused.err
    assert _files(store) == before


def test_a_reply_whose_delivery_id_waits_in_the_inbox_is_refused_and_nothing_changes(cli, parked_refund, script):
    store = store_of(parked_refund)
    _queue(store, "q-1", "Any news?", "r-1")
    _queue(store, "q-2", "Still there?", "r-1")
    before = _files(store)
    refused = cli(*parked_refund, "reply", "r-1", "Still", "there?", "--delivery-id", "q-2",
                  "--model", script([*REFUND_SCRIPT, {"say": "Finance will decide today."}]))  # fmt: skip
    assert refused.code == 1 and refused.out == ""
    assert refused.err.startswith("error: delivery 'q-2' waits in the inbox of session 'r-1'"), refused.err
    assert refused.err.splitlines()[1].startswith("next: archmax serve "), refused.err
    assert _files(store) == before
