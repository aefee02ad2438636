"""Issue 9, scenario 8: one email delivered twice by SES, under two SES message ids, is applied once.

Two receipt rules, a retry after a partial failure or a forward give one mail a new SES message id each
time. The identity of an email event is its RFC 5322 Message-ID (the SES id only says where SES stored
it), so the second receipt is a duplicate: inboxed once, applied once. Rule source: DESIGN.md §3 "Inbox"
(a duplicate is a no-op), §4 "Email"; issue 9 item 8. Every store kind with its inbox.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from archmax.inbound.ses import ses_firing, ses_mails
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import REPO, SUPPORT_INBOX, Env

RAW = (SUPPORT_INBOX / "emails" / "01-first.eml").read_bytes()
RECEIPT = json.loads((REPO / "events" / "ses_inbound.json").read_text(encoding="utf-8"))
PARK = {"say": "Which grinder order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}}


def _receipt(ses_message_id: str) -> dict[str, Any]:
    event = copy.deepcopy(RECEIPT)
    event["Records"][0]["ses"]["mail"]["messageId"] = ses_message_id
    return event


def test_one_mail_through_two_ses_receipts_is_one_event_applied_once(env: Env) -> None:
    host = env.host([PARK])  # a second application would need a second model answer: the script has one
    accepted = []
    for ses_id in ("sesrule1msgid0001", "sesretry2msgid0002"):
        (mail,) = ses_mails(_receipt(ses_id), bucket="unused")
        accepted.append(host.accept(ses_firing(mail, RAW)))

    first, second = accepted
    assert first.delivery_id == second.delivery_id == "3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"
    assert (first.duplicate, second.duplicate) == (False, True)
    sid = first.session_id
    assert second.session_id == sid
    users = [m.content for m in env.other_store().load(sid).messages if m.role == "user"]
    assert len(users) == 1
    assert env.other_store().load(sid).delivery_ids == [first.delivery_id]
    assert host.sweep().redriven == []  # nothing waits: the second receipt added no item


def test_a_mail_without_a_message_id_is_identified_by_its_bytes_not_by_the_ses_id() -> None:
    raw = b"".join(line for line in RAW.splitlines(keepends=True) if not line.lower().startswith(b"message-id:"))
    ids = {ses_firing(ses_mails(_receipt(s), bucket="b")[0], raw).delivery_id for s in ("sesid0001", "sesid0002")}
    assert len(ids) == 1 and "sesid" not in ids.pop()
