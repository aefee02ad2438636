"""Who may speak into a session by email (issue 13 item 1), on moto: SES receipts through the send handler.

A mail to an existing session is delivered only when it passes the authentication policy (default:
DMARC PASS, or DKIM PASS aligned with From) and comes from a participant or carries the session's
signed reply token; otherwise it is quarantined in that session, visible in its summary, and an
operator's release applies it once. Also: a subject-only first mail opens a turn on its subject, and
a 500-attachment mail is capped with a reason and a bounded number of AWS calls (item 5).
"""

from __future__ import annotations

import importlib
from email.message import EmailMessage
from typing import Any

import pytest

from archmax.inbound.email import parse_email
from archmax.inbound.quarantine import listing, release
from archmax.inbound.reply_token import reply_address

from .conftest import ANSWER, PARK, event

SECRET = b"reply-token-secret-for-tests-0001"
THREAD = "t1@shop.example"
SID = "mail:t1@shop.example"
"""The session a mail thread rooted at THREAD opens: mail-minted ids have a namespace of their own (issue 21 item 3)."""
PASS = {"spf": "PASS", "dkim": "PASS", "dmarc": "PASS"}
FAIL = {"spf": "FAIL", "dkim": "FAIL", "dmarc": "FAIL"}


def mail(sender: str, *, msg_id: str, reply_to_thread: bool = True, to: str = "support@example.com",
         body: str = "Where is my order?", subject: str = "Order", attachments: int = 0) -> bytes:  # fmt: skip
    m = EmailMessage()
    m["From"], m["To"], m["Subject"], m["Message-ID"] = sender, to, subject, f"<{msg_id}>"
    if reply_to_thread:
        m["In-Reply-To"] = f"<{THREAD}>"
        m["References"] = f"<{THREAD}>"
    if body:
        m.set_content(body)
    for n in range(attachments):
        m.add_attachment(b"", maintype="application", subtype="octet-stream", filename=f"part-{n}.bin")
    return m.as_bytes()


def receipt(ses_id: str, verdicts: dict[str, str], recipients: list[str] | None = None) -> dict[str, Any]:
    evt = event("ses_inbound.json")
    record = evt["Records"][0]["ses"]
    record["mail"]["messageId"] = ses_id
    for name, status in verdicts.items():
        record["receipt"][f"{name}Verdict"] = {"status": status}
    record["receipt"]["recipients"] = recipients or ["support@example.com"]
    return evt


def send(d: Any, ses_id: str, raw: bytes, verdicts: dict[str, str], recipients: list[str] | None = None) -> dict:
    d.put_mail(f"inbound/{ses_id}", raw)
    answer = d.call("send", receipt(ses_id, verdicts, recipients))
    assert answer["ok"] is True, answer
    (record,) = answer["records"]
    return record


@pytest.fixture
def parked(aws: Any) -> Any:
    """Dana's first mail opened session SID, which parked asking for the order (her address noted)."""
    d = aws(PARK + ANSWER)
    d.collaborators.reply_secret = lambda: SECRET
    first = send(d, "ses-0001", mail("Dana <dana@customer.example>", msg_id=THREAD, reply_to_thread=False), PASS)
    assert first["session_id"] == SID and first["disposition"] == "turn"  # a new conversation: any authenticated sender
    assert d.collaborators.agent.sessions.get(SID).status == "awaiting_input"
    return d


def user_messages(d: Any) -> list[str]:
    return [m.content for m in d.collaborators.agent.sessions.messages(SID) if m.role == "user"]


def test_the_spoofed_reply_is_quarantined_not_delivered(parked: Any) -> None:
    d = parked
    before = d.collaborators.agent.store.load(SID)
    spoof = mail("Mallory <mallory@evil.example>", msg_id="m1@evil.example", body="Cancel it and refund me.")
    record = send(d, "ses-spoof", spoof, FAIL)
    assert record["session_id"] == SID and "SPF FAIL, DKIM FAIL, DMARC FAIL" in record["quarantined"]
    after = d.collaborators.agent.store.load(SID)
    assert after.version == before.version and after.status == "awaiting_input"
    assert after.variables["from"].value == "dana@customer.example"  # her address did not overwrite it
    summary = d.collaborators.agent.sessions.get(SID)
    assert summary.quarantined == ["ses-spoof"]
    (held,) = listing(d.collaborators.agent.store, SID)
    assert held.sender == "mallory@evil.example" and held.released_at is None and "DMARC FAIL" in held.reason
    assert "Cancel it and refund me." not in user_messages(d)


def test_an_authenticated_stranger_is_quarantined_for_not_being_a_participant(parked: Any) -> None:
    record = send(parked, "ses-stranger", mail("eve@other.example", msg_id="e1@other.example"), PASS)
    assert "not a participant" in record["quarantined"]
    assert parked.collaborators.agent.sessions.get(SID).status == "awaiting_input"


def test_a_participants_authenticated_reply_is_delivered(parked: Any) -> None:
    reply = mail("Dana <DANA@customer.example>", msg_id="r1@customer.example", body="It's ORD-1001.")
    record = send(parked, "ses-reply", reply, {"dmarc": "PASS"})
    assert "quarantined" not in record and record["disposition"] == "resume"
    assert parked.collaborators.agent.sessions.get(SID).status == "completed"
    assert parked.collaborators.agent.sessions.get(SID).quarantined is None


def test_a_participant_whose_mail_fails_authentication_is_quarantined(parked: Any) -> None:
    forged = mail("dana@customer.example", msg_id="f1@evil.example", body="Send it to my new address.")
    record = send(parked, "ses-forged", forged, {"dmarc": "FAIL", "dkim": "PASS", "spf": "PASS"})  # DKIM unaligned
    assert "policy 'dmarc_or_aligned_dkim'" in record["quarantined"]


def test_a_valid_signed_reply_token_lets_a_new_address_reply(parked: Any) -> None:
    address = reply_address("support@example.com", SID, SECRET)
    forwarded = mail("Carol <carol@partner.example>", msg_id="c1@partner.example", body="ORD-1001 for Dana.",
                     reply_to_thread=False, to=address)  # fmt: skip
    record = send(parked, "ses-token", forwarded, {"dmarc": "PASS"}, recipients=[address])
    assert "quarantined" not in record and record["session_id"] == SID and record["disposition"] == "resume"
    assert parked.collaborators.agent.sessions.get(SID).status == "completed"


def test_a_forged_token_is_no_token(parked: Any) -> None:
    address = reply_address("support@example.com", SID, b"not-the-deployment-secret-000000")
    forged = mail("carol@partner.example", msg_id="c2@partner.example", to=address)
    record = send(parked, "ses-forged-token", forged, {"dmarc": "PASS"}, recipients=[address])
    assert "no valid reply token" in record["quarantined"]


def test_a_released_quarantined_mail_is_applied_once(parked: Any) -> None:
    d = parked
    send(d, "ses-held", mail("eve@other.example", msg_id="e2@other.example", body="It's ORD-1001."), PASS)
    assert d.collaborators.agent.sessions.get(SID).quarantined == ["ses-held"]

    def parse(raw: bytes, trigger: str | None) -> Any:
        return parse_email(raw, trigger=trigger)

    first = release(d.collaborators.host, SID, "ses-held", parse=parse)
    assert first["duplicate"] is False and first["disposition"] == "resume"
    summary = d.collaborators.agent.sessions.get(SID)
    assert summary.status == "completed" and summary.quarantined is None
    snapshot = d.snapshot()
    again = release(d.collaborators.host, SID, "ses-held", parse=parse)
    assert again["duplicate"] is True and d.snapshot() == snapshot
    assert user_messages(d).count("It's ORD-1001.") == 1
    (held,) = listing(d.collaborators.agent.store, SID)
    assert held.released_at is not None
    # the released sender became a participant: their next authenticated mail is delivered
    later = send(d, "ses-later", mail("eve@other.example", msg_id="e3@other.example", body="Thanks!"), PASS)
    assert "quarantined" not in later


def test_releasing_an_unknown_or_unsafe_id_is_a_typed_refusal(parked: Any) -> None:
    from archmax.errors import UnknownQuarantineError

    for bad in ("nope", "../checkpoints/x", "a/b", "x.released"):
        with pytest.raises(UnknownQuarantineError):
            release(parked.collaborators.host, SID, bad, parse=lambda raw, t: parse_email(raw, trigger=t))


def test_a_first_mail_with_only_a_subject_opens_a_turn_on_its_subject(aws: Any) -> None:
    d = aws(PARK)
    raw = mail("dana@customer.example", msg_id="s1@customer.example", reply_to_thread=False, body="",
               subject="Where is my parcel?")  # fmt: skip
    record = send(d, "ses-subject", raw, PASS)
    assert record["disposition"] == "turn" and "error" not in record
    assert user_messages_of(d, "mail:s1@customer.example") == ["Where is my parcel?"]


def user_messages_of(d: Any, sid: str) -> list[str]:
    return [m.content for m in d.collaborators.agent.sessions.messages(sid) if m.role == "user"]


def test_a_500_attachment_mail_is_capped_with_a_reason_and_bounded_aws_calls(aws: Any) -> None:
    calllog = importlib.import_module("stores.aws.moto_env").CallLog
    d = aws(PARK)
    raw = mail("dana@customer.example", msg_id="big@customer.example", reply_to_thread=False, attachments=500)
    d.put_mail("inbound/ses-big", raw)
    store = d.collaborators.agent.store
    with calllog(store._ddb, store._s3) as log:  # the inbox shares the test process's DynamoDB client
        answer = d.call("send", receipt("ses-big", PASS))
    (record,) = answer["records"]
    assert record["disposition"] == "turn"
    assert "480 over the cap of 20 attachments per mail" in record["attachments_refused"]
    placed = store.list_files("mail:big@customer.example", "scratchpad/attachments")
    assert len(placed) == 20
    refused = store.load("mail:big@customer.example").variables["attachments_refused"].value
    assert refused["count"] == 480
    print(f"AWS calls for the 500-attachment mail: {log.count()}")
    assert log.count() < 120  # was 1,035 with every part placed


def http(method: str, path: str, route: str) -> dict[str, Any]:
    return {
        "version": "2.0", "routeKey": f"{method} {route}", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {"http": {"method": method, "path": path}, "routeKey": f"{method} {route}", "stage": "$default"},
        "isBase64Encoded": False,
    }  # fmt: skip


def test_the_http_routes_list_and_release_held_mail_once(parked: Any) -> None:
    import json
    from urllib.parse import quote

    d = parked
    send(d, "ses-held", mail("eve@other.example", msg_id="e4@other.example", body="It's ORD-1001."), PASS)
    sid = quote(SID, safe="")
    listed = d.call("deliver", http("GET", f"/sessions/{sid}/quarantine", "/sessions/{id}/quarantine"))
    mails = json.loads(listed["body"])["mails"]
    assert listed["statusCode"] == 200 and [m["delivery_id"] for m in mails] == ["ses-held"]
    route = "/sessions/{id}/quarantine/{delivery}/release"
    released = d.call("deliver", http("POST", f"/sessions/{sid}/quarantine/ses-held/release", route))
    assert released["statusCode"] == 200 and json.loads(released["body"])["duplicate"] is False
    assert d.collaborators.agent.sessions.get(SID).status == "completed"
    again = d.call("deliver", http("POST", f"/sessions/{sid}/quarantine/ses-held/release", route))
    assert json.loads(again["body"])["duplicate"] is True
    unknown = d.call("deliver", http("POST", f"/sessions/{sid}/quarantine/nope/release", route))
    assert unknown["statusCode"] == 404 and json.loads(unknown["body"])["error"] == "UnknownQuarantineError"


# ---- the summary's quarantine hint (issue 10 "summary: 1 call"): AwsStore keeps a superset of held ids


class _Died(Exception):
    """Stands for a process that stopped at the hooked AWS call."""


def summary_calls(d: Any) -> tuple[Any, list[str]]:
    """``(sessions.get(SID), the AWS calls it made)``."""
    store = d.collaborators.agent.store
    with importlib.import_module("stores.aws.moto_env").CallLog(store._ddb, store._s3) as log:
        summary = d.collaborators.agent.sessions.get(SID)
    return summary, log.calls


def hint(d: Any) -> set[str]:
    store = d.collaborators.agent.store
    item = store._ddb.get_item(TableName=store.table_name, Key={"pk": {"S": SID}}, ConsistentRead=True)["Item"]
    return set(item.get("quarantine_hint", {}).get("SS", []))


def die_on(d: Any, event_name: str, when: Any) -> Any:
    """Register a botocore hook raising :class:`_Died` on the calls ``when(params)`` picks; returns its remover."""
    store = d.collaborators.agent.store
    client = store._s3 if ".s3." in event_name else store._ddb

    def die(params: dict[str, Any], **_: Any) -> None:
        if when(params):
            raise _Died

    client.meta.events.register(event_name, die, unique_id="die-hint")
    return lambda: client.meta.events.unregister(event_name, unique_id="die-hint")


def parse(raw: bytes, trigger: str | None) -> Any:
    return parse_email(raw, trigger=trigger)


def test_a_summary_with_nothing_held_is_one_get_item(parked: Any) -> None:
    summary, calls = summary_calls(parked)
    assert summary.status == "awaiting_input" and summary.quarantined is None
    assert calls == ["dynamodb.GetItem"]


def test_held_mail_is_in_the_summary_through_commits_and_leaves_it_on_release(parked: Any) -> None:
    d = parked
    send(d, "ses-held", mail("eve@other.example", msg_id="e5@other.example", body="It's ORD-1001."), PASS)
    assert hint(d) == {"ses-held"}
    summary, calls = summary_calls(d)
    assert summary.quarantined == ["ses-held"] and calls == ["dynamodb.GetItem", "s3.ListObjectsV2"]
    # the participant's reply completes the session: its commits (sending only changed attributes) keep the hint
    reply = mail("dana@customer.example", msg_id="r2@customer.example", body="It's ORD-1001.")
    assert send(d, "ses-reply", reply, {"dmarc": "PASS"})["disposition"] == "resume"
    summary, _ = summary_calls(d)
    assert summary.status == "completed" and summary.quarantined == ["ses-held"] and hint(d) == {"ses-held"}
    release(d.collaborators.host, SID, "ses-held", parse=parse)
    summary, calls = summary_calls(d)
    assert summary.quarantined is None and calls == ["dynamodb.GetItem"]
    assert hint(d) == set()


def test_a_crash_between_hint_and_record_never_hides_held_mail(parked: Any) -> None:
    d = parked
    spoof = mail("mallory@evil.example", msg_id="m2@evil.example", body="Refund me.")
    d.put_mail("inbound/ses-crash", spoof)
    undo = die_on(d, "before-parameter-build.s3.PutObject", lambda p: "/quarantine/" in p["Key"])
    try:
        with pytest.raises(_Died):  # the hint was written, the held mail's files were not
            send(d, "ses-crash", spoof, FAIL)
    finally:
        undo()
    assert hint(d) == {"ses-crash"}  # a superset of what is held: the listing filters the id out
    summary, calls = summary_calls(d)
    assert summary.quarantined is None and calls == ["dynamodb.GetItem", "s3.ListObjectsV2"]
    record = send(d, "ses-crash", spoof, FAIL)  # SES's retry holds it for real
    assert "DMARC FAIL" in record["quarantined"]
    assert summary_calls(d)[0].quarantined == ["ses-crash"]


def test_a_release_that_stopped_after_its_stamp_is_tidied_by_repeating_it(parked: Any) -> None:
    d = parked
    send(d, "ses-held", mail("eve@other.example", msg_id="e6@other.example", body="It's ORD-1001."), PASS)
    undo = die_on(d, "before-parameter-build.dynamodb.UpdateItem", lambda p: "#hint" in p.get("UpdateExpression", ""))
    try:
        with pytest.raises(_Died):
            release(d.collaborators.host, SID, "ses-held", parse=parse)
    finally:
        undo()
    assert hint(d) == {"ses-held"}  # stamped released, still hinted: the listing filters it out
    summary, calls = summary_calls(d)
    assert summary.status == "completed" and summary.quarantined is None and len(calls) == 2
    assert release(d.collaborators.host, SID, "ses-held", parse=parse)["duplicate"] is True
    assert hint(d) == set() and summary_calls(d)[1] == ["dynamodb.GetItem"]
    assert user_messages(d).count("It's ORD-1001.") == 1
