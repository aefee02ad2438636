"""``archmax quarantine list|release`` (issue 13 item 1): an operator sees held mail and releases it, applied once."""

from __future__ import annotations

import json

from archmax.inbound.quarantine import QuarantinedMail, hold
from archmax.stores.filesystem import FilesystemStore

from ._support import EMAILS, INBOX_SCRIPT

CONVERSATION = "3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"


def test_list_then_release_a_held_mail_once(cli, examples):
    flags = [*examples, "--model", INBOX_SCRIPT]
    assert cli(*flags, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox").code == 0
    store = FilesystemStore(examples[3])
    held = QuarantinedMail(session_id=CONVERSATION, delivery_id="ses-held", reason="sender is not a participant",
                           sender="someone@else.example", subject="Re: order", trigger="email_reply",
                           quarantined_at="2025-01-01T00:00:00.000Z")  # fmt: skip
    assert hold(store, held, (EMAILS / "02-reply.eml").read_bytes())

    listed = cli(*flags, "quarantine", "list", CONVERSATION)
    assert listed.code == 0 and "ses-held  held  from someone@else.example" in listed.out
    assert "sender is not a participant" in listed.out
    shown = json.loads(cli(*flags, "--json", "sessions", CONVERSATION).out)
    assert shown["quarantined"] == ["ses-held"] and shown["status"] == "awaiting_input"

    released = cli(*flags, "--json", "quarantine", "release", CONVERSATION, "ses-held")
    assert released.code == 0 and json.loads(released.out)["duplicate"] is False
    shown = json.loads(cli(*flags, "--json", "sessions", CONVERSATION).out)
    assert shown["status"] == "completed" and shown.get("quarantined") is None
    again = cli(*flags, "quarantine", "release", CONVERSATION, "ses-held")
    assert again.code == 0 and "already released: nothing applied again" in again.out
    replies = [m for m in store.load(CONVERSATION).messages if m.role == "user" and "ORD-1001" in m.content]
    assert len(replies) == 1


def test_release_of_an_unknown_mail_exits_1_and_without_an_id_exits_2(cli, examples):
    flags = [*examples, "--model", INBOX_SCRIPT]
    cli(*flags, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox")
    assert cli(*flags, "quarantine", "release", CONVERSATION, "nope").code == 1
    assert cli(*flags, "quarantine", "release", CONVERSATION).code == 2
