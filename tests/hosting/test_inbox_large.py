"""Large firings on AWS: the DynamoDB inbox keeps a firing too large for one item in S3 (a claim check).

Rule source: the seed (an email's attachments are placed as session files; no event is lost),
DESIGN.md §3 "Inbox" (a firing is durably inboxed before it is acknowledged; a duplicate is a
no-op) and DynamoDB's 400 KB item limit. ``DynamoInbox(bucket=...)`` writes the firing to
``<prefix>/.inbox/<folder>/<sha256(delivery id)>-<sha256(body)>.json`` create-only, then the item
with a pointer; reads put the firing back. Runs against the moto server (tables and bucket built
from template.yaml); AWS calls are counted with botocore's ``before-call`` hooks.
"""

from __future__ import annotations

import json
import random
from email.message import EmailMessage
from fnmatch import fnmatchcase
from typing import Any

import pytest
from cfnlint.decode.decode import decode_str

from archmax import create_agent
from archmax.errors import InvalidEventError, StoreError
from archmax.handlers import send
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox, InboxItem
from archmax.hosting.inbox_dynamo import INLINE_MAX_BYTES, MAX_ITEM_BYTES
from archmax.hosting.wiring import from_environment
from archmax.inbound.email import parse_email
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import FileIn, Firing
from archmax.testing import FakeLambdaContext, load_event

from .conftest import INBOX_TABLE, REPO, SUPPORT_INBOX, moto_env

SID = "AAQk-1"
PARK = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
]
ONE_MB = 1024 * 1024


def pdf_bytes(size: int = ONE_MB, seed: int = 7) -> bytes:
    """A PDF header, then incompressible bytes of every value (0x00..0xFF, so no text decoding survives)."""
    head = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"
    return head + random.Random(seed).randbytes(size - len(head))


def email(delivery_id: str, files: dict[str, FileIn] | None = None, text: str = "The invoice is attached") -> Firing:
    return Firing(
        trigger="email_received",
        message=text,
        variables={"conversation_id": SID},
        files=files or {},
        delivery_id=delivery_id,
    )


def item(delivery_id: str, firing: Firing, session_id: str = SID) -> InboxItem:
    return InboxItem(
        session_id=session_id, delivery_id=delivery_id, arrived_at="2025-01-01T00:00:00.000Z", firing=firing
    )


def body_objects(aws: Any) -> list[dict[str, Any]]:
    return aws.s3.list_objects_v2(Bucket=aws.bucket, Prefix="sessions/.inbox/").get("Contents", [])


def raw_item(aws: Any, delivery_id: str, session_id: str = SID) -> dict[str, Any]:
    key = {"pk": {"S": session_id}, "sk": {"S": f"d#{delivery_id}"}}
    return aws.dynamodb.get_item(TableName=INBOX_TABLE, Key=key, ConsistentRead=True)["Item"]


@pytest.fixture
def inbox(aws: Any, clock: Any) -> DynamoInbox:
    """A DynamoInbox with the sessions bucket: large firings go to ``sessions/.inbox/``."""
    return DynamoInbox(INBOX_TABLE, client=aws.dynamodb, s3_client=aws.s3, bucket=aws.bucket, clock=clock)


# ---------------------------------------------------------------- through the host


def test_a_1_mb_binary_attachment_is_inboxed_drained_and_placed_byte_exact(aws: Any, inbox: DynamoInbox, clock: Any):
    store = aws.store("sessions")
    host = Host(create_agent(SUPPORT_INBOX, store, ScriptedModel(PARK), clock=clock), inbox)
    pdf = pdf_bytes()
    accepted = host.accept(email("ses-big-1", {"attachment_1": FileIn(name="invoice.pdf", content=pdf)}))
    assert (accepted.session_id, accepted.duplicate) == (SID, False)
    assert host.agent.sessions.get(SID).status == "awaiting_input"
    assert store.get(SID, "scratchpad/attachments/invoice.pdf") == pdf
    # The item holds a pointer, not the megabyte; the body waits under the inbox folder.
    raw = raw_item(aws, "ses-big-1")
    assert raw["status"]["S"] == "done" and "firing" not in json.loads(raw["item"]["S"])
    assert len(raw["item"]["S"]) < 1024
    (obj,) = body_objects(aws)
    assert obj["Key"] == raw["body_key"]["S"] and obj["Key"].startswith(f"sessions/.inbox/{SID}/")
    assert obj["Size"] > ONE_MB  # base64 inside JSON


def test_an_item_over_the_inline_threshold_but_under_the_item_limit_goes_to_s3_too(inbox: DynamoInbox, aws: Any):
    text = "x" * (INLINE_MAX_BYTES + 10_000)
    assert inbox.put(item("m-300k", email("m-300k", text=text))) is True
    assert "body_key" in raw_item(aws, "m-300k")
    assert inbox.get(SID, "m-300k").firing.message == text
    assert INLINE_MAX_BYTES < len(text) < MAX_ITEM_BYTES


# ---------------------------------------------------------------- duplicates


def test_a_duplicate_put_of_a_large_item_is_a_no_op(inbox: DynamoInbox, aws: Any):
    big = item("ses-big-1", email("ses-big-1", {"attachment_1": FileIn(name="a.pdf", content=pdf_bytes())}))
    assert inbox.put(big) is True
    (first,) = body_objects(aws)
    before = raw_item(aws, "ses-big-1")
    assert inbox.put(big) is False
    (again,) = body_objects(aws)
    assert (again["Key"], again["ETag"], again["LastModified"]) == (first["Key"], first["ETag"], first["LastModified"])
    assert raw_item(aws, "ses-big-1") == before
    assert inbox.arrivals(SID) == 1
    assert [i.delivery_id for i in inbox.pending(SID)] == ["ses-big-1"]


def test_a_reused_delivery_id_with_other_content_never_changes_the_first_items_body(inbox: DynamoInbox, aws: Any):
    first = item("hook-1", email("hook-1", {"attachment_1": FileIn(name="a.pdf", content=pdf_bytes(seed=1))}))
    other = item("hook-1", email("hook-1", {"attachment_1": FileIn(name="a.pdf", content=pdf_bytes(seed=2))}))
    assert inbox.put(first) is True
    assert inbox.put(other) is False
    (pending,) = inbox.pending(SID)
    assert pending.firing.files["attachment_1"].content == pdf_bytes(seed=1)
    # The loser's body is its own object (expired by the bucket's lifecycle rule), never the winner's.
    assert len(body_objects(aws)) == 2


# ---------------------------------------------------------------- small items stay as they were


def test_a_small_item_stays_inline_and_makes_no_s3_call(inbox: DynamoInbox, aws: Any):
    small = item("m-1", email("m-1", {"attachment_1": FileIn(name="note.txt", content=b"\x00\x01 tiny")}))
    with moto_env().CallLog(aws.s3, aws.dynamodb) as log:
        assert inbox.put(small) is True
        (back,) = inbox.pending(SID)
        assert inbox.get(SID, "m-1") == back
    assert [c for c in log.calls if c.startswith("s3.")] == []
    assert log.count("dynamodb.TransactWriteItems") == 1
    assert back.firing == small.firing
    assert "body_key" not in raw_item(aws, "m-1")
    assert body_objects(aws) == []


def test_without_a_bucket_a_firing_over_the_item_limit_is_still_a_413_and_nothing_is_written(aws: Any, clock: Any):
    inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    big = item("ses-big-1", email("ses-big-1", {"attachment_1": FileIn(name="a.pdf", content=pdf_bytes())}))
    with pytest.raises(InvalidEventError) as refused:
        inbox.put(big)
    assert refused.value.status == 413
    assert aws.dynamodb.scan(TableName=INBOX_TABLE)["Items"] == []
    assert body_objects(aws) == []


# ---------------------------------------------------------------- failures


def test_a_put_whose_s3_write_fails_writes_no_inbox_item(aws: Any, clock: Any):
    inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, s3_client=aws.s3, bucket="no-such-bucket", clock=clock)
    big = item("ses-big-1", email("ses-big-1", {"attachment_1": FileIn(name="a.pdf", content=pdf_bytes())}))
    with pytest.raises(StoreError, match="cannot write the inbox body"):
        inbox.put(big)
    assert aws.dynamodb.scan(TableName=INBOX_TABLE)["Items"] == []
    assert inbox.arrivals(SID) == 0


def test_an_item_whose_body_is_missing_is_a_store_error_and_stays_pending_until_the_body_is_back(
    aws: Any, inbox: DynamoInbox, clock: Any
):
    host = Host(create_agent(SUPPORT_INBOX, aws.store("sessions"), ScriptedModel(PARK), clock=clock), inbox)
    pdf = pdf_bytes()
    assert inbox.put(item("ses-big-1", email("ses-big-1", {"attachment_1": FileIn(name="a.pdf", content=pdf)})))
    key = raw_item(aws, "ses-big-1")["body_key"]["S"]
    saved = aws.s3.get_object(Bucket=aws.bucket, Key=key)["Body"].read()
    aws.s3.delete_object(Bucket=aws.bucket, Key=key)
    for read in (lambda: inbox.pending(SID), lambda: inbox.get(SID, "ses-big-1"), lambda: host.drain(SID)):
        with pytest.raises(StoreError, match="is missing; the item stays pending"):
            read()
    assert raw_item(aws, "ses-big-1")["status"]["S"] == "pending"
    assert inbox.sessions_with_pending() == [SID]
    assert host.agent.sessions.get(SID) is None
    # The body comes back (a retry of the same firing would write these bytes): the drain delivers it.
    aws.s3.put_object(Bucket=aws.bucket, Key=key, Body=saved)
    clock.advance(seconds=host.lease_ttl_s + 1)  # the failed drain's lease expires
    host.drain(SID)
    assert raw_item(aws, "ses-big-1")["status"]["S"] == "done"
    assert host.agent.store.get(SID, "scratchpad/attachments/a.pdf") == pdf


def test_a_body_whose_bytes_were_altered_is_refused_not_delivered(inbox: DynamoInbox, aws: Any):
    assert inbox.put(item("ses-big-1", email("ses-big-1", text="y" * (INLINE_MAX_BYTES + 1))))
    key = raw_item(aws, "ses-big-1")["body_key"]["S"]
    aws.s3.put_object(Bucket=aws.bucket, Key=key, Body=json.dumps({"trigger": "email_received", "message": "forged"}))
    with pytest.raises(StoreError, match="sha256 differs"):
        inbox.pending(SID)


# ---------------------------------------------------------------- keys


@pytest.mark.parametrize("lookalike", ["inbox", ".inbox", "sessions"])
def test_no_session_folder_holds_inbox_bodies_not_even_a_session_named_like_the_inbox_folder(
    inbox: DynamoInbox, aws: Any, lookalike: str
):
    store = aws.store("sessions")
    store.seed(lookalike, {"notes.md": "mine"})
    big = email("d-1", text="z" * (INLINE_MAX_BYTES + 1))
    assert inbox.put(item("d-1", big, session_id=lookalike))
    assert inbox.put(item("d-1", big, session_id="other"))
    assert store.list_files(lookalike) == ["notes.md"]
    keys = sorted(o["Key"] for o in body_objects(aws))
    assert [k.split("/")[2] for k in keys] == sorted(
        [{"inbox": "inbox", ".inbox": "%2Einbox"}.get(lookalike, lookalike), "other"]
    )
    assert store.delete(lookalike) is True
    assert len(body_objects(aws)) == 2


def test_a_hostile_delivery_id_is_hashed_into_the_key(inbox: DynamoInbox, aws: Any):
    hostile = "../../../inbound/k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01"
    assert inbox.put(item(hostile, email(hostile, text="q" * (INLINE_MAX_BYTES + 1))))
    (obj,) = body_objects(aws)
    assert obj["Key"].startswith(f"sessions/.inbox/{SID}/") and ".." not in obj["Key"] and obj["Key"].count("/") == 3
    assert inbox.get(SID, hostile).delivery_id == hostile


# ---------------------------------------------------------------- the SES handler, wired from the environment


def large_mail(pdf: bytes) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Dana Rivers <dana.rivers@example.org>"
    msg["To"] = "Example Shop Support <support@example.com>"
    msg["Subject"] = "Invoice for the grinder"
    msg["Message-ID"] = "<3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org>"
    msg["Date"] = "Tue, 14 Jan 2025 09:12:45 +0100"
    msg.set_content("Hi,\n\nthe invoice for the grinder is attached.\n\nDana\n")
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="invoice.pdf")
    return msg.as_bytes()


def test_an_ses_mail_with_a_1_mb_attachment_is_delivered_and_its_attachment_placed(aws: Any, clock: Any):
    env = {
        "WORKFLOW_DIR": str(SUPPORT_INBOX),
        "SESSIONS_TABLE": aws.table_name,
        "SESSIONS_BUCKET": aws.bucket,
        "SESSIONS_PREFIX": "sessions",
        "INBOX_TABLE": INBOX_TABLE,
        "ARCHMAX_DRAIN": "inline",
    }
    collaborators = from_environment(
        env, model=ScriptedModel(PARK), clock=clock, clients={"dynamodb": aws.dynamodb, "s3": aws.s3}
    )
    handler = send.build(collaborators)
    mail = load_event(REPO / "events" / "ses_inbound.json")
    message_id = mail["Records"][0]["ses"]["mail"]["messageId"]
    pdf = pdf_bytes()
    aws.s3.put_object(Bucket=aws.bucket, Key=f"inbound/{message_id}", Body=large_mail(pdf))
    answer = handler(mail, FakeLambdaContext())
    assert answer["ok"] is True
    (record,) = answer["records"]
    # the mail's own Message-ID is the event's identity, not the SES message id (issue 9 item 8)
    assert record["delivery_id"] == parse_email(large_mail(pdf)).delivery_id != message_id
    assert record["disposition"] == "turn"
    sid = record["session_id"]
    sessions = collaborators.agent.sessions
    assert sessions.get(sid).status == "awaiting_input"
    assert collaborators.agent.store.get(sid, "scratchpad/attachments/invoice.pdf") == pdf
    assert sessions.get(sid).variables["attachment_1"]["value"] == "scratchpad/attachments/invoice.pdf"
    assert [o["Key"].split("/")[1] for o in body_objects(aws)] == [".inbox"]


# ---------------------------------------------------------------- template: lifecycle and permissions


def test_the_bucket_expires_inbox_bodies_later_than_done_items_leave_the_inbox_table():
    doc, errors = decode_str((REPO / "template.yaml").read_text(encoding="utf-8"))
    assert not errors, errors
    prefix = doc["Globals"]["Function"]["Environment"]["Variables"]["SESSIONS_PREFIX"]
    bucket = moto_env().template_resource("SessionsBucket")
    rules = [r for r in bucket["LifecycleConfiguration"]["Rules"] if r.get("Prefix") == f"{prefix}/.inbox/"]
    assert len(rules) == 1 and rules[0]["Status"] == "Enabled"
    # A done item is still read (with its body) until its TTL removes it.
    assert rules[0]["ExpirationInDays"] > DynamoInbox.__init__.__kwdefaults__["done_ttl_days"]


def _s3_allows(function: str, action: str, key: str) -> bool:
    policies = moto_env().template_resource(function)["Policies"]
    for policy in policies:
        for st in (policy.get("Statement") or []) if isinstance(policy, dict) else []:
            actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            arns = [
                r["Fn::Sub"].replace("${SessionsBucket.Arn}", "arn:aws:s3:::B")
                for r in resources
                if isinstance(r, dict) and isinstance(r.get("Fn::Sub"), str)
            ]
            if action in actions and any(fnmatchcase(f"arn:aws:s3:::B/{key}", a) for a in arns):
                return True
    return False


@pytest.mark.parametrize("function", ["SendFunction", "DeliverFunction", "TimerFunction"])
def test_each_function_that_uses_the_inbox_may_write_and_read_inbox_bodies(function: str):
    key = f"sessions/.inbox/{SID}/{'a' * 64}-{'b' * 32}.json"
    policies = moto_env().template_resource(function)["Policies"]
    inbox = [  # the inbox's own DynamoDB statement (issue 13: only the actions DynamoInbox calls)
        st
        for policy in policies
        for st in policy.get("Statement", [])
        if isinstance(st["Resource"], list) and {"Fn::GetAtt": ["InboxTable", "Arn"]} in st["Resource"]
    ]
    assert inbox and "dynamodb:PutItem" in inbox[0]["Action"]
    assert _s3_allows(function, "s3:PutObject", key) and _s3_allows(function, "s3:GetObject", key)


def test_the_resolve_function_cannot_write_inbox_bodies():
    key = f"sessions/.inbox/{SID}/{'a' * 64}-{'b' * 32}.json"
    assert not _s3_allows("ResolveFunction", "s3:PutObject", key)
