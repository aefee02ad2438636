"""Issue 21 item 6 on the SES path (BEHAVIOUR.md §5.11): a reply token names the park its mail asked at.

AWS on moto, receipts shaped like ``events/ses_inbound.json``. Dana's first mail parks the session on
question A; her answer to A moves it on to question B. A late answer to A (a reply to A's mail, its
token naming A's park) is refused like any delivery naming a stale ``park_id``: the record says
``SessionNotAwaitingInputError``, and the tables and the bucket are byte-for-byte what they were (no
inbox item, no delivery id, no quarantine, no participant). The answer to B, and a token that names
no park (issued before parks were named), are applied. The mail the session sent really carries the
park: the recorded outbox entry is sent through the file transport and its ``Reply-To`` is read back.
"""

from __future__ import annotations

from email import message_from_bytes
from email.policy import default
from typing import Any

import pytest

from archmax.inbound.reply_token import reply_address, verify_token
from archmax.outbound.config import dispatcher_from_env
from archmax.session.records import park_id_at

from .conftest import ANSWER, PARK
from .test_mail_admission import receipt as ses_receipt

SECRET = b"reply-token-secret-for-tests-0001"
FIRST = "first-1@example.org"
SID = f"mail:{FIRST}"
PASS = {"spf": "PASS", "dkim": "PASS", "dmarc": "PASS"}
ASK_B = [{"say": "And the postcode it goes to?", "call": {"archmax_wait": {"reason": "the postcode"}}}]


def mail(sender: str, *, msg_id: str, to: str, body: str, thread: str | None = FIRST) -> bytes:
    lines = [f"From: {sender}", f"To: {to}", "Subject: Order", f"Message-ID: <{msg_id}>"]
    if thread:
        lines += [f"In-Reply-To: <{thread}>", f"References: <{thread}>"]
    return ("\r\n".join([*lines, "Content-Type: text/plain; charset=utf-8", "", body, ""])).encode()


def receipt(ses_id: str, recipients: list[str]) -> dict[str, Any]:
    """``events/ses_inbound.json`` for ``ses_id``, every verdict PASS, with these envelope recipients."""
    return ses_receipt(ses_id, PASS, recipients=recipients)


def send(d: Any, ses_id: str, raw: bytes, recipients: list[str]) -> dict[str, Any]:
    d.put_mail(f"inbound/{ses_id}", raw)
    answer = d.call("send", receipt(ses_id, recipients))
    assert answer["ok"] is True, answer
    (record,) = answer["records"]
    return record


def sent_reply_to(d: Any) -> str:
    """The ``Reply-To`` of the newest mail the session recorded, sent through the file transport (the real dispatcher)."""
    store = d.collaborators.agent.store
    env = {"ARCHMAX_REPLY_SECRET": SECRET.decode(), "ARCHMAX_MAIL_TRANSPORT": "file", "ARCHMAX_EVENT_BUS": ""}
    record = store.load(SID)
    dispatcher = dispatcher_from_env(store, env, clients={"s3": None})
    assert dispatcher is not None
    dispatcher.dispatch(record)
    entry = [e for e in record.outbox if e.kind == "email"][-1]
    raw = store.get(SID, f"outbox/{entry.id}.eml")
    return str(message_from_bytes(raw, policy=default)["Reply-To"])


def token_of(address: str) -> str:
    return address.partition("@")[0].partition("+")[2]


@pytest.fixture
def asked_b(aws: Any) -> Any:
    """Dana's first mail asked A; her answer, sent to A's Reply-To, moved the session on to ask B."""
    d = aws(PARK + ASK_B + ANSWER)
    d.collaborators.reply_secret = lambda: SECRET
    first = send(d, "ses-0001", mail("Dana <dana@customer.example>", msg_id=FIRST, to="support@example.com",
                                     body="Where is my order?", thread=None), ["support@example.com"])  # fmt: skip
    assert first["session_id"] == SID and first["disposition"] == "turn"
    park_a = d.collaborators.agent.sessions.get(SID).park_id
    d.reply_to_a = sent_reply_to(d)
    answer_a = mail("dana@customer.example", msg_id="a1@customer.example", to=d.reply_to_a, body="It's ORD-1001.")
    record = send(d, "ses-0002", answer_a, [d.reply_to_a])
    assert record["disposition"] == "resume", record  # the answer to the current question is applied
    summary = d.collaborators.agent.sessions.get(SID)
    assert summary.status == "awaiting_input" and summary.park_id not in (None, park_a)
    d.park_a, d.park_b = park_a, summary.park_id
    return d


def test_the_token_of_the_mail_that_asked_names_its_park(asked_b: Any) -> None:
    d = asked_b
    found_a = verify_token(token_of(d.reply_to_a), SECRET)
    assert found_a is not None and found_a.session_id == SID
    assert park_id_at(SID, found_a.park_version) == d.park_a  # the park A was asked at, signed
    found_b = verify_token(token_of(sent_reply_to(d)), SECRET)
    assert found_b is not None and park_id_at(SID, found_b.park_version) == d.park_b


def test_a_late_answer_to_question_a_is_refused_and_changes_nothing(asked_b: Any) -> None:
    d = asked_b
    late = mail("dana@customer.example", msg_id="a2@customer.example", to=d.reply_to_a, body="Sorry: ORD-1002!")
    d.put_mail("inbound/ses-late", late)
    before = d.snapshot()
    answer = d.call("send", receipt("ses-late", [d.reply_to_a]))
    assert answer["ok"] is True
    (record,) = answer["records"]
    assert record["error"] == "SessionNotAwaitingInputError"
    assert d.park_a in record["message"] and d.park_b in record["message"]  # names both parks
    assert d.snapshot() == before  # no inbox item, no delivery id, no quarantine, no participant written
    assert d.collaborators.host.inbox.get(SID, "ses-late") is None
    summary = d.collaborators.agent.sessions.get(SID)
    assert summary.status == "awaiting_input" and summary.park_id == d.park_b and summary.quarantined is None
    users = [m.content for m in d.collaborators.agent.sessions.messages(SID) if m.role == "user"]
    assert not any("ORD-1002" in text for text in users)


def test_the_answer_to_question_b_is_applied(asked_b: Any) -> None:
    d = asked_b
    reply_to_b = sent_reply_to(d)
    answer = mail("dana@customer.example", msg_id="b1@customer.example", to=reply_to_b, body="It's 10115.")
    record = send(d, "ses-b", answer, [reply_to_b])
    assert record["disposition"] == "resume" and "error" not in record
    assert d.collaborators.agent.sessions.get(SID).status == "completed"


def test_a_token_naming_no_park_keeps_todays_behaviour(asked_b: Any) -> None:
    d = asked_b
    old_style = reply_address("support@example.com", SID, SECRET)  # issued before parks were named
    assert verify_token(token_of(old_style), SECRET).park_version is None  # type: ignore[union-attr]
    carol = mail("Carol <carol@partner.example>", msg_id="c1@partner.example", to=old_style, body="10115, for Dana.",
                 thread=None)  # fmt: skip
    record = send(d, "ses-old", carol, [old_style])  # a stranger holding the token speaks, as before
    assert record["session_id"] == SID and record["disposition"] == "resume" and "error" not in record
    assert d.collaborators.agent.sessions.get(SID).status == "completed"


def test_a_park_token_with_its_version_changed_or_stripped_is_no_token(asked_b: Any) -> None:
    """The version is signed: moving A's token onto park B, or dropping the version, makes no token at all."""
    d = asked_b
    local, _, domain = d.reply_to_a.partition("@")
    base, _, token = local.partition("+")
    id32, version, mac = token.split("-")
    b_version = d.park_b.rpartition("@v")[2]
    for forged in (f"{id32}-{b_version}-{mac}", f"{id32}-{mac}"):
        address = f"{base}+{forged}@{domain}"
        carol = mail("carol@partner.example", msg_id=f"c-{forged[-4:]}@partner.example", to=address, body="10115")
        record = send(d, f"ses-forged-{forged[-4:]}", carol, [address])
        assert "no valid reply token" in record.get("quarantined", ""), record  # a stranger without a token
    assert d.collaborators.agent.sessions.get(SID).park_id == d.park_b


def test_a_held_mail_keeps_its_park_and_its_release_after_the_park_is_gone_changes_nothing(asked_b: Any) -> None:
    """Quarantine carries the token's park: an operator's release cannot land it on a later question either."""
    from archmax.inbound.email import parse_email
    from archmax.inbound.quarantine import listing, release

    d = asked_b
    reply_to_b = sent_reply_to(d)
    forged = mail("dana@customer.example", msg_id="f1@evil.example", to=reply_to_b, body="Postcode 99999.")
    d.put_mail("inbound/ses-held", forged)
    failing = receipt("ses-held", [reply_to_b])
    for name in ("dmarc", "dkim", "spf"):
        failing["Records"][0]["ses"]["receipt"][f"{name}Verdict"] = {"status": "FAIL"}
    (record,) = d.call("send", failing)["records"]
    assert "quarantined" in record, record  # the park is current; authentication failed: held
    (held,) = listing(d.collaborators.agent.store, SID)
    assert held.park_id == d.park_b

    answer = mail("dana@customer.example", msg_id="b1@customer.example", to=reply_to_b, body="It's 10115.")
    assert send(d, "ses-b", answer, [reply_to_b])["disposition"] == "resume"
    done = d.collaborators.agent.store.load(SID)
    assert done.status == "completed"
    release(d.collaborators.host, SID, "ses-held", parse=lambda raw, t: parse_email(raw, trigger=t))
    after = d.collaborators.agent.store.load(SID)
    assert (after.version, after.status) == (done.version, "completed")  # no turn opened on the finished session
    assert not any("99999" in m.content for m in after.messages if m.role == "user")


def test_ses_redelivering_the_applied_answer_to_a_is_a_duplicate_not_a_late_answer(asked_b: Any) -> None:
    """SES hands the answer to A in again after it was applied (the session now asks B): one mail, one event.

    The session already applied that Message-ID, so the retry is the no-op duplicate it is (as for a
    mail threaded without a token, and as the engine orders it: a duplicate before a stale park), not a
    late answer refused with ``SessionNotAwaitingInputError``.
    """
    d = asked_b
    again = mail("dana@customer.example", msg_id="a1@customer.example", to=d.reply_to_a, body="It's ORD-1001.")
    d.put_mail("inbound/ses-0002-again", again)
    before = d.snapshot()
    answer = d.call("send", receipt("ses-0002-again", [d.reply_to_a]))
    (record,) = answer["records"]
    assert record.get("duplicate") is True and "error" not in record, record
    assert d.snapshot() == before
    assert d.collaborators.agent.sessions.get(SID).park_id == d.park_b
