"""Issue 21 items 1, 3 and 4 on the SES path: AWS on moto, receipts shaped like ``events/ses_inbound.json``.

Each test plays the attacker (refused or quarantined, the session unchanged, the attacker no
participant) and the legitimate user (Dana's mail still works). Admission itself is
:mod:`archmax.inbound.admission`; these tests reach it only through the send handler.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archmax.inbound.email import parse_email
from archmax.inbound.mail_auth import is_participant
from archmax.inbound.quarantine import listing, release
from archmax.inbound.reply_token import reply_address

from .conftest import ANSWER, PARK, SUPPORT_INBOX, event

SECRET = b"reply-token-secret-for-tests-0001"
FIRST = "first-1@example.org"
DANA_SID = f"mail:{FIRST}"
PASS = {"spf": "PASS", "dkim": "PASS", "dmarc": "PASS"}
FAIL = {"spf": "FAIL", "dkim": "FAIL", "dmarc": "FAIL"}


def mail(sender: str, *, msg_id: str, thread: str | None = None, to: str = "support@example.com",
         body: str = "Where is my order?") -> bytes:  # fmt: skip
    lines = [f"From: {sender}", f"To: {to}", "Subject: Order", f"Message-ID: <{msg_id}>"]
    if thread:
        lines += [f"In-Reply-To: <{thread}>", f"References: <{thread}>"]
    return ("\r\n".join([*lines, "Content-Type: text/plain; charset=utf-8", "", body, ""])).encode()


def receipt(ses_id: str, verdicts: dict[str, str], *, dmarc_policy: str = "none",
            recipients: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    evt = event("ses_inbound.json")
    record = evt["Records"][0]["ses"]
    record["mail"]["messageId"] = ses_id
    for name, status in verdicts.items():
        record["receipt"][f"{name}Verdict"] = {"status": status}
    record["receipt"]["dmarcPolicy"] = dmarc_policy
    record["receipt"]["recipients"] = recipients or ["support@example.com"]
    return evt


def send(d: Any, ses_id: str, raw: bytes, verdicts: dict[str, str], **kw: Any) -> dict[str, Any]:
    d.put_mail(f"inbound/{ses_id}", raw)
    answer = d.call("send", receipt(ses_id, verdicts, **kw))
    assert answer["ok"] is True, answer
    (record,) = answer["records"]
    return record


def post_message(d: Any, sid: str) -> dict[str, Any]:
    """``events/apigw_send_message.json`` addressed to ``sid``: an IAM-authorised ``POST /sessions/{id}/messages``."""
    answer = d.call("send", json.loads(json.dumps(event("apigw_send_message.json")).replace("AAQk-1", sid)))
    assert answer["statusCode"] == 202, answer
    return json.loads(answer["body"])


def user_messages(d: Any, sid: str) -> list[str]:
    return [m.content for m in d.collaborators.agent.sessions.messages(sid) if m.role == "user"]


def participant(d: Any, sid: str, address: str) -> bool:
    return is_participant(d.collaborators.agent.store, sid, None, address)


def dana_opens(d: Any) -> None:
    d.collaborators.reply_secret = lambda: SECRET
    first = send(d, "ses-dana-1", mail("Dana <dana@customer.example>", msg_id=FIRST), PASS)
    assert first["session_id"] == DANA_SID and first["disposition"] == "turn"
    assert d.collaborators.agent.sessions.get(DANA_SID).status == "awaiting_input"


# ---- item 1: a duplicate Message-ID admits nobody


def test_a_stranger_resending_the_threads_first_message_id_is_quarantined_and_never_a_participant(aws: Any) -> None:
    d = aws(PARK + ANSWER)
    dana_opens(d)
    store = d.collaborators.agent.store
    before = store.load(DANA_SID)
    copycat = mail("Mallory <mallory@evil.example>", msg_id=FIRST, body="I am the customer.")
    record = send(d, "ses-copycat", copycat, PASS)  # DMARC passes for her own domain
    assert record["session_id"] == DANA_SID and "not a participant" in record["quarantined"]
    assert not participant(d, DANA_SID, "mallory@evil.example")
    iban = mail("mallory@evil.example", msg_id="m2@evil.example", thread=FIRST, body="Refund it to my IBAN DE00.")
    assert "not a participant" in send(d, "ses-iban", iban, PASS)["quarantined"]
    after = store.load(DANA_SID)
    assert after.version == before.version and after.status == "awaiting_input"
    assert "Refund it to my IBAN DE00." not in user_messages(d, DANA_SID)
    # Dana's own reply still completes her session
    reply = send(d, "ses-dana-2", mail("dana@customer.example", msg_id="r1@customer.example", thread=FIRST,
                                       body="It's ORD-1001."), PASS)  # fmt: skip
    assert reply["disposition"] == "resume" and "quarantined" not in reply
    assert d.collaborators.agent.sessions.get(DANA_SID).status == "completed"


def test_ses_redelivering_danas_first_mail_is_a_duplicate_that_changes_nothing(aws: Any) -> None:
    d = aws(PARK)
    dana_opens(d)
    d.put_mail("inbound/ses-dana-1-again", mail("Dana <dana@customer.example>", msg_id=FIRST))
    before = d.snapshot()
    answer = d.call("send", receipt("ses-dana-1-again", PASS))
    (record,) = answer["records"]
    assert record["duplicate"] is True and "quarantined" not in record
    assert d.snapshot() == before


# ---- item 3: mail-minted ids have a namespace of their own


def test_a_strangers_mail_cannot_claim_a_session_id_another_channel_uses(aws: Any) -> None:
    d = aws(PARK + PARK + ANSWER)
    d.collaborators.reply_secret = lambda: SECRET
    claim = send(d, "ses-claim", mail("mallory@evil.example", msg_id="order-1234"), PASS)
    assert claim["session_id"] == "mail:order-1234"  # not order-1234
    store = d.collaborators.agent.store
    assert store.head("order-1234") is None
    # the IAM-authorised channel opens its own order-1234: Mallory is nowhere in it
    opened = post_message(d, "order-1234")
    assert opened["session_id"] == "order-1234" and opened["disposition"] == "turn"
    record = store.load("order-1234")
    assert "from" not in record.variables and not participant(d, "order-1234", "mallory@evil.example")
    # a "reply" to <order-1234> from Mallory stays in her own mail session
    version = record.version
    again = send(d, "ses-claim-2", mail("mallory@evil.example", msg_id="m3@evil.example", thread="order-1234",
                                        body="ORD-9999 please."), PASS)  # fmt: skip
    assert again["session_id"] == "mail:order-1234"
    assert store.load("order-1234").version == version and "ORD-9999 please." not in user_messages(d, "order-1234")
    # the legitimate user answers order-1234 through its signed reply address: it lands there
    address = reply_address("support@example.com", "order-1234", SECRET)
    dana = mail("dana@customer.example", msg_id="d9@customer.example", to=address, body="It's ORD-1001.")
    answer = send(d, "ses-dana-order", dana, PASS, recipients=[address])
    assert answer["session_id"] == "order-1234" and answer["disposition"] == "resume"
    assert "It's ORD-1001." in user_messages(d, "order-1234")


def test_a_mail_to_an_existing_session_by_its_plain_id_never_joins_it(aws: Any) -> None:
    d = aws(PARK + PARK)
    post_message(d, "order-1234")
    store = d.collaborators.agent.store
    version = store.load("order-1234").version
    reply = send(d, "ses-join", mail("mallory@evil.example", msg_id="m4@evil.example", thread="order-1234"), PASS)
    assert reply["session_id"] == "mail:order-1234"
    assert store.load("order-1234").version == version and not participant(d, "order-1234", "mallory@evil.example")


# ---- item 4: an unauthenticated first mail opens nothing and mails no one


def test_an_unauthenticated_first_mail_is_quarantined_and_opens_no_session(aws: Any) -> None:
    d = aws(PARK + PARK)
    forged = mail("CEO <ceo@bank.example>", msg_id="ceo-1@bank.example", body="Wire the funds today.")
    record = send(d, "ses-ceo", forged, FAIL, dmarc_policy="reject")
    sid = "mail:ceo-1@bank.example"
    assert record["session_id"] == sid and "SPF FAIL, DKIM FAIL, DMARC FAIL" in record["quarantined"]
    agent = d.collaborators.agent
    assert agent.sessions.get(sid) is None and agent.store.head(sid) is None  # no turn ran: no question was mailed
    assert d.collaborators.host.inbox.pending(sid) == [] and not participant(d, sid, "ceo@bank.example")
    (held,) = listing(agent.store, sid)
    assert held.sender == "ceo@bank.example" and held.released_at is None
    # Dana's authenticated first mail still opens her conversation
    dana = send(d, "ses-dana-1", mail("dana@customer.example", msg_id=FIRST), PASS)
    assert dana["disposition"] == "turn" and agent.sessions.get(DANA_SID).status == "awaiting_input"
    # an operator who vouches for the held mail releases it: only then does it open its session
    released = release(d.collaborators.host, sid, "ses-ceo", parse=lambda raw, t: parse_email(raw, trigger=t))
    assert released["disposition"] == "turn" and agent.sessions.get(sid) is not None


def workflow_with(tmp_path: Path, choice: str) -> Path:
    """The support inbox whose ``email_received`` declares ``unauthenticated_first_mail: <choice>``."""
    target = tmp_path / f"support-inbox-{choice}"
    target.mkdir()
    for name in ("workflow.yaml", "model.yaml"):
        text = (SUPPORT_INBOX / name).read_text(encoding="utf-8")
        if name == "workflow.yaml":
            anchor = "        description: A new email opens a conversation.\n"
            assert anchor in text
            text = text.replace(anchor, anchor + f"        unauthenticated_first_mail: {choice}\n")
        (target / name).write_text(text, encoding="utf-8")
    return target


def test_a_trigger_that_refuses_unauthenticated_first_mail_writes_nothing(aws: Any, tmp_path: Path) -> None:
    d = aws(PARK, workflow=workflow_with(tmp_path, "refuse"))
    forged = mail("ceo@bank.example", msg_id="ceo-2@bank.example")
    d.put_mail("inbound/ses-ceo-2", forged)
    before = d.snapshot()
    (record,) = d.call("send", receipt("ses-ceo-2", FAIL, dmarc_policy="reject"))["records"]
    assert "DMARC FAIL" in record["refused"] and "quarantined" not in record
    assert d.snapshot() == before
    dana = send(d, "ses-dana-1", mail("dana@customer.example", msg_id=FIRST), PASS)
    assert dana["disposition"] == "turn"


def test_a_trigger_may_open_sessions_on_unauthenticated_first_mail_when_it_says_so(aws: Any, tmp_path: Path) -> None:
    d = aws(PARK, workflow=workflow_with(tmp_path, "open"))
    record = send(d, "ses-relay", mail("dana@customer.example", msg_id=FIRST), FAIL)
    assert record["session_id"] == DANA_SID and record["disposition"] == "turn"
    assert participant(d, DANA_SID, "dana@customer.example")
    before = d.snapshot()  # SES retries the receipt: the same mail from the same sender is the no-op it is
    (again,) = d.call("send", receipt("ses-relay", FAIL))["records"]
    assert again["duplicate"] is True and "quarantined" not in again and d.snapshot() == before
    forged = send(d, "ses-forged", mail("mallory@evil.example", msg_id=FIRST), FAIL)  # her copy of the id is not
    assert "DMARC FAIL" in forged["quarantined"] and not participant(d, DANA_SID, "mallory@evil.example")
