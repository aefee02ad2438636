"""The outbound function on moto: stream records of the sessions table -> SES and EventBridge, each sent once.

Real parts (DESIGN.md §6): the AWS store on the moto server, the table built from template.yaml with its
stream; DynamoDB Streams records read from moto (``dynamodbstreams``) and handed to the handler as Lambda
would (the template's filter applied, the Lambda record shape); SESv2 ``SendEmail`` and EventBridge
``PutEvents`` on moto, whose sent messages and put events (a rule -> SQS) are inspected.
A crash is a dispatcher that never ran, an SES identity not yet verified, or a store that fails the
write of the result record once.
"""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Any

import pytest
from moto.events.models import EventPattern

from archmax.clock import FakeClock
from archmax.errors import StoreError
from archmax.handlers import outbound
from archmax.hosting.wiring import outbound_from_environment
from archmax.inbound.email import parse_email
from archmax.inbound.ses import SesMail, ses_firing
from archmax.outbound.aliases import S3Aliases
from archmax.outbound.config import reply_threader
from archmax.outbound.dispatch import CLAIM_TTL_S, Dispatcher
from archmax.testing import FakeLambdaContext, stream_record
from unit.outbound._mail import CUSTOMER_ID, first_mail, parse_raw, reply_mail, send_mail, support_agent

from .conftest import moto_env

TABLE = "archmax-sessions-outbound-test"
BUS = "archmax-events-test"
PREFIX = "sessions"


class Aws:
    """moto with a streaming sessions table, the bucket, a verified SES domain and a bus whose events land in SQS."""

    def __init__(self) -> None:
        env = moto_env()
        self.server = env.server()
        self.env = env.fresh_env()
        client = self.server.client
        self.ddb, self.s3 = self.env.dynamodb, self.env.s3
        self.streams, self.ses, self.events, self.sqs = (
            client("dynamodbstreams"),
            client("sesv2"),
            client("events"),
            client("sqs"),
        )
        table = env.template_resource("SessionsTable")
        self.ddb.create_table(
            TableName=TABLE,
            StreamSpecification={"StreamEnabled": True, **table["StreamSpecification"]},
            **env.table_definition(),
        )
        self.events.create_event_bus(Name=BUS)
        queue = self.sqs.create_queue(QueueName="archmax-events-seen")["QueueUrl"]
        self.queue = queue
        arn = self.sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.events.put_rule(Name="all-archmax", EventBusName=BUS, EventPattern=json.dumps({"source": ["archmax"]}))
        self.events.put_targets(Rule="all-archmax", EventBusName=BUS, Targets=[{"Id": "seen", "Arn": arn}])
        events = env.template_resource("OutboundFunction")["Events"]["SessionChanges"]["Properties"]
        self.filters = [EventPattern.load(f["Pattern"]) for f in events["FilterCriteria"]["Filters"]]
        self.settings = {
            "SESSIONS_TABLE": TABLE,
            "SESSIONS_BUCKET": env.BUCKET,
            "SESSIONS_PREFIX": PREFIX,
            "ARCHMAX_MAIL_TRANSPORT": "ses",
            "ARCHMAX_MAIL_FROM": "Example Shop Support <support@example.com>",
            "ARCHMAX_EVENT_BUS": BUS,
        }
        self.clients = {"dynamodb": self.ddb, "s3": self.s3, "sesv2": self.ses, "events": self.events}
        self.store, self.dispatcher = outbound_from_environment(self.settings, clients=self.clients)
        self.handle = outbound.build(self.store, self.dispatcher)

    def verify_domain(self) -> None:
        self.ses.create_email_identity(EmailIdentity="example.com")

    def stream_event(self, *, filtered: bool = True) -> dict[str, Any]:
        """Every record of the table's stream so far, shaped (and unless told, filtered) as Lambda hands them over."""
        arn = self.ddb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
        records = []
        for shard in self.streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            iterator = self.streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            for record in self.streams.get_records(ShardIterator=iterator)["Records"]:
                shaped = stream_record(record, arn)
                if not filtered or any(f.matches_event(shaped) for f in self.filters):
                    records.append(shaped)
        return {"Records": records}

    def sent_mail(self) -> list[bytes]:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.ses.models import ses_backends

        return [m.raw_data.encode() for m in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages]

    def put_events(self) -> list[dict[str, Any]]:
        seen = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10).get("Messages", [])
            if not got:
                return seen
            for message in got:
                seen.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def aws() -> Aws:
    return Aws()


def park(aws: Aws) -> Any:
    """The send function's part: the first mail parks the session; on AWS nothing is sent in-process."""
    agent = support_agent(aws.store, outbound=False)
    assert send_mail(agent, first_mail()).kind == "parked"
    return agent


def test_the_stream_sends_the_question_through_ses_and_puts_the_parked_event_once(aws):
    aws.verify_domain()
    park(aws)
    event = aws.stream_event()
    assert event["Records"] and all(r["dynamodb"]["NewImage"]["status"]["S"] != "running" for r in event["Records"])
    assert aws.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    (raw,) = aws.sent_mail()
    msg = parse_raw(raw)
    assert msg["From"] == "Example Shop Support <support@example.com>" and msg["To"] == "dana.rivers@example.org"
    assert msg["In-Reply-To"] == f"<{CUSTOMER_ID}>" and msg["Subject"] == "Re: Question about the café grinder"
    (put,) = aws.put_events()
    assert put["source"] == "archmax" and put["detail-type"] == "Session Parked"
    assert put["detail"]["session_id"] == CUSTOMER_ID and put["detail"]["state"] == "clarify"
    assert put["detail"]["reason"] == "the customer's order number" and "Which order" in put["detail"]["text"]
    record = aws.store.load(CUSTOMER_ID)
    result = json.loads(aws.store.outbox_result(CUSTOMER_ID, record.outbox[0].id, created_at=record.created_at))
    assert result["transport"] == "ses" and result["provider_id"] and result["message_id"] in msg["Message-ID"]


def test_a_redelivered_stream_batch_sends_nothing_twice(aws):
    aws.verify_domain()
    park(aws)
    event = aws.stream_event()
    for _ in range(3):
        assert aws.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert len(aws.sent_mail()) == 1 and len(aws.put_events()) == 1


def test_a_send_that_fails_is_reported_and_sent_exactly_once_when_the_batch_is_retried(aws):
    park(aws)  # the SES identity is not verified yet: SendEmail is refused
    event = aws.stream_event()
    answer = aws.handle(event, FakeLambdaContext())
    assert answer["batchItemFailures"], "a refused send must be retried, not dropped"
    assert aws.sent_mail() == []
    assert [e["detail-type"] for e in aws.put_events()] == ["Session Parked"]  # never held back by its mail
    aws.verify_domain()
    assert aws.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert aws.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert len(aws.sent_mail()) == 1 and aws.put_events() == []


class CrashOnRecord:
    """The AWS store, except that the next write of a result record fails (the process died there)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.crashes = 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def outbox_record(self, session_id: str, entry_id: str, outcome: Any, body: str, **kw: Any) -> bool:
        if self.crashes and outcome == "sent":
            self.crashes -= 1
            raise StoreError("the function timed out before recording the send")
        return self._store.outbox_record(session_id, entry_id, outcome, body, **kw)


def test_a_crash_between_send_and_record_resends_at_most_once_with_the_same_message_id(aws):
    aws.verify_domain()
    park(aws)
    event = aws.stream_event()
    d = aws.dispatcher
    crashing = Dispatcher(
        CrashOnRecord(aws.store), mailer=d.mailer, publisher=d.publisher, aliases=d.aliases, sender=d.sender
    )
    assert outbound.build(aws.store, crashing)(event, FakeLambdaContext())["batchItemFailures"]
    for _ in range(2):  # the retried batch: the dead sender's claim still holds the mail
        assert aws.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert len(aws.sent_mail()) == 1
    later = Dispatcher(
        aws.store,
        mailer=d.mailer,
        publisher=d.publisher,
        aliases=d.aliases,
        sender=d.sender,
        clock=FakeClock(datetime.now(UTC) + timedelta(seconds=CLAIM_TTL_S + 1)),
    )
    for _ in range(2):  # once the claim expired (the sweep's backstop, or a late retry)
        assert outbound.build(aws.store, later)(event, FakeLambdaContext()) == {"batchItemFailures": []}
    first, second = (parse_raw(raw) for raw in aws.sent_mail())  # the documented window: two, not three
    assert first["Message-ID"] == second["Message-ID"]
    assert len(aws.put_events()) == 1


def _new_records(aws: Aws, seen: dict[str, Any], *, filtered: bool = True) -> dict[str, Any]:
    """The stream records not in the batch ``seen`` (what the next batch holds; unfiltered if told)."""
    old = {r["dynamodb"]["SequenceNumber"] for r in seen["Records"]}
    fresh = aws.stream_event(filtered=filtered)["Records"]
    return {"Records": [r for r in fresh if r["dynamodb"]["SequenceNumber"] not in old]}


def test_the_stream_sends_from_the_records_image_and_skips_its_own_settle_without_a_call(aws):
    aws.verify_domain()
    park(aws)
    event = aws.stream_event()
    calllog = moto_env().CallLog
    with calllog(aws.ddb, aws.s3) as log:
        assert aws.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert log.count("dynamodb.GetItem") == 0 and log.count("s3.GetObject") == 0  # the image carried the entries
    assert len(aws.sent_mail()) == 1 and [e["detail-type"] for e in aws.put_events()] == ["Session Parked"]
    # The settle's own update of the item: the template's filter hands it to no invocation (issue 24:
    # it removes the outbox mark the filter asks for) ...
    assert _new_records(aws, event)["Records"] == []
    # ... and a handler given it all the same (a filter edited away) answers it without a call.
    session_id = event["Records"][0]["dynamodb"]["Keys"]["pk"]["S"]
    unfiltered = _new_records(aws, event, filtered=False)["Records"]
    last = max(int(r["dynamodb"]["SequenceNumber"]) for r in event["Records"])
    echo = {
        "Records": [
            r for r in unfiltered
            if r["dynamodb"]["Keys"]["pk"]["S"] == session_id and int(r["dynamodb"]["SequenceNumber"]) > last
        ]
    }  # fmt: skip
    assert [r["eventName"] for r in echo["Records"]] == ["MODIFY"]
    assert "outbox_shard" not in echo["Records"][0]["dynamodb"]["NewImage"]
    with calllog(aws.ddb, aws.s3) as log:
        assert aws.handle(echo, FakeLambdaContext()) == {"batchItemFailures": []}
    assert log.calls == [] and len(aws.sent_mail()) == 1 and aws.put_events() == []


def test_a_park_whose_chunk_is_too_large_for_the_item_is_sent_from_the_session_read_once(aws):
    from archmax import create_agent
    from archmax.models.scripted import ScriptedModel
    from archmax.spec import workflow_from_dict

    asking = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "asking")
    noise = base64.b64encode(random.Random(7).randbytes(15_000)).decode()  # packs little: the chunk is an S3 object
    question = "Which of these " + noise + " options?"
    script = [{"say": question, "call": {"archmax_wait": {"reason": "an option"}}}]
    agent = create_agent(asking, aws.store, ScriptedModel(script), outbound=False, clock=FakeClock())
    assert agent.workflow.send("long-1", "Hello").kind == "parked"
    calllog = moto_env().CallLog
    with calllog(aws.ddb, aws.s3) as log:
        assert aws.handle(aws.stream_event(), FakeLambdaContext()) == {"batchItemFailures": []}
    assert log.count("dynamodb.GetItem") == 1
    (put,) = aws.put_events()
    assert put["detail-type"] == "Session Parked" and put["detail"]["text"] == question


def _threaded(aws: Aws, raw: bytes) -> str:
    threaded = reply_threader(aws.store, {}, s3_client=aws.s3, s3_prefix=PREFIX)(parse_email(raw), ())
    return threaded.variables["conversation_id"]


def test_a_reply_threaded_only_to_our_message_id_or_only_to_the_ses_id_finds_the_session(aws):
    aws.verify_domain()
    agent = park(aws)
    aws.handle(aws.stream_event(), FakeLambdaContext())
    record = aws.store.load(CUSTOMER_ID)
    result = json.loads(aws.store.outbox_result(CUSTOMER_ID, record.outbox[0].id, created_at=record.created_at))
    ours, ses_id = result["message_id"], result["provider_id"]
    assert S3Aliases(aws.s3, moto_env().BUCKET, PREFIX).get(ours) == CUSTOMER_ID
    assert _threaded(aws, reply_mail(In_Reply_To=f"<{ours}>")) == CUSTOMER_ID
    assert _threaded(aws, reply_mail(In_Reply_To=f"<{ses_id}@email.amazonses.com>")) == CUSTOMER_ID
    assert (
        _threaded(aws, reply_mail(References=f"<unrelated@example.org> <{ses_id}@us-east-1.amazonses.com>"))
        == CUSTOMER_ID
    )
    assert _threaded(aws, reply_mail(In_Reply_To="<1.0.guess@example.com>")) == "1.0.guess@example.com"
    # and the reply resumes the session, whose answer the stream then mails back on the same thread
    reply = reply_threader(aws.store, {}, s3_client=aws.s3, s3_prefix=PREFIX)(
        parse_email(reply_mail(In_Reply_To=f"<{ses_id}@email.amazonses.com>")), ()
    )
    outcome = send_mail(agent, reply)
    assert outcome.session_id == CUSTOMER_ID and outcome.kind == "completed"
    aws.handle(aws.stream_event(), FakeLambdaContext())
    question, answer = (parse_raw(raw) for raw in aws.sent_mail())
    assert "ORD-1001" in answer.get_content() and answer["In-Reply-To"] == "<dana-reply-1@example.org>"
    assert f"<{ses_id}@email.amazonses.com>" in answer["References"]
    assert [e["detail-type"] for e in aws.put_events()] == ["Session Parked", "Session Completed"]


def _bccd_mail(message_id: str = "<bcc-1@example.org>") -> bytes:
    """A customer's mail that Bcc's the support inbox: its headers name no address of ours."""
    msg = EmailMessage()
    msg["From"] = "Dana Rivers <dana.rivers@example.org>"
    msg["To"] = "undisclosed-recipients:;"
    msg["Subject"] = "Question about the grinder"
    msg["Message-ID"] = message_id
    msg.set_content("Hello, my grinder arrived cracked. What can you do?")
    return msg.as_bytes()


def test_a_bccd_mail_is_answered_from_the_address_ses_received_it_for_with_the_default_mail_from(aws):
    aws.verify_domain()
    settings = {k: v for k, v in aws.settings.items() if k != "ARCHMAX_MAIL_FROM"}  # the template's default
    store, dispatcher = outbound_from_environment(settings, clients=aws.clients)
    handle = outbound.build(store, dispatcher)
    receipt = SesMail(
        message_id="o3vrnil0e2ic28trm7dfk3kc2v0cnbeccl4nbp0g1",
        bucket=None,
        key="inbound/x",
        recipients=["support@example.com"],
    )
    agent = support_agent(aws.store, outbound=False)
    assert send_mail(agent, ses_firing(receipt, _bccd_mail())).kind == "parked"
    assert handle(aws.stream_event(), FakeLambdaContext()) == {"batchItemFailures": []}
    (raw,) = aws.sent_mail()
    msg = parse_raw(raw)
    assert msg["From"] == "support@example.com" and msg["To"] == "dana.rivers@example.org"
    assert msg["In-Reply-To"] == "<bcc-1@example.org>"
    assert [e["detail-type"] for e in aws.put_events()] == ["Session Parked"]


def test_a_long_upper_case_message_id_goes_out_through_ses_whole_and_as_written(aws):
    aws.verify_domain()
    long_id = "<AM0PR01MB12342AB24BBC6F1E4C4DB1F37A5E0C9D2B7E0001@AM0PR01MB1234.EURPRD01.PROD.EXCHANGELABS.COM>"
    receipt = SesMail(
        message_id="o3vrnil0e2ic28trm7dfk3kc2v0cnbeccl4nbp0g2",
        bucket=None,
        key="inbound/y",
        recipients=["support@example.com"],
    )
    agent = support_agent(aws.store, outbound=False)
    assert send_mail(agent, ses_firing(receipt, _bccd_mail(long_id))).kind == "parked"
    assert aws.handle(aws.stream_event(), FakeLambdaContext()) == {"batchItemFailures": []}
    (raw,) = aws.sent_mail()
    head = raw.split(b"\r\n\r\n", 1)[0].decode("ascii")
    # one line each, the id exactly as the customer's client wrote it: not encoded, folded or lower-cased
    assert f"\r\nIn-Reply-To: {long_id}\r\n" in head and f"\r\nReferences: {long_id}\r\n" in head


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"drain": "x@example.org"},
        {"Records": []},
        {"Records": [{"eventSource": "aws:sqs", "messageId": "1", "body": "{}"}]},
        {"Records": [{"eventSource": "aws:ses", "ses": {}}]},
        [],
    ],
    ids=["empty", "drain", "no-records", "sqs", "ses", "list"],
)
def test_an_event_that_is_not_a_stream_batch_is_answered_with_a_named_400_and_sends_nothing(aws, event):
    aws.verify_domain()
    answer = aws.handle(event, FakeLambdaContext())
    assert answer["ok"] is False and answer["status"] == 400 and answer["error"] == "InvalidEventError"
    assert "DynamoDB stream" in answer["message"]
    assert aws.sent_mail() == [] and aws.put_events() == []


def test_an_old_lifes_redelivered_batch_leaves_the_outbox_mark_of_the_session_started_again_under_its_id(aws):
    """A stream batch of a deleted session's life, redelivered once the id parked again, settles only that life.

    The new life's entries are unsent (its own stream record has not been handled: failing, or
    dead-lettered); its outbox mark is how the sweep finds them. The old life's batch carries that
    life's record (inline image): its entries are settled, but the mark is the new life's.
    """
    aws.verify_domain()
    first = support_agent(aws.store, outbound=False, clock=FakeClock("2025-01-14T10:00:00.000Z"))
    assert send_mail(first, first_mail()).kind == "parked"
    old = aws.stream_event()
    assert aws.handle(old, FakeLambdaContext()) == {"batchItemFailures": []}
    assert first.sessions.delete(CUSTOMER_ID)
    again = support_agent(aws.store, outbound=False, clock=FakeClock("2025-01-15T10:00:00.000Z"))
    assert send_mail(again, first_mail()).kind == "parked"
    assert CUSTOMER_ID in aws.store.outbox_pending()  # the new life's entries wait for a sender

    assert aws.handle(old, FakeLambdaContext()) == {"batchItemFailures": []}  # the old life's batch, again

    assert CUSTOMER_ID in aws.store.outbox_pending()
    assert len(aws.sent_mail()) == 1  # the new life's question is still owed


CALLING = {"states": {"work": {"triggers": {"manual": None}, "tools": {"allow": ["archmax_workflow_b"]}}}}
CALLED = {"states": {"work": {"triggers": {"manual": None}}}}


@pytest.mark.parametrize("child", ["finishes", "waits"])
def test_a_sub_workflow_pairs_events_all_go_out_through_the_stream_alone(aws, child):
    """Both sessions of a caller/child pair commit entries in one operation: the filtered stream sends every one.

    Each commit that records entries sets the outbox mark the template's filter asks for (issue 24),
    the child's as the caller's; nothing is left for the sweep (no session stays outbox-pending).
    """
    from archmax import create_agent
    from archmax.models.scripted import ScriptedModel
    from archmax.spec import workflow_from_dict

    aws.verify_domain()
    script = [{"call": {"archmax_workflow_b": {}}}]
    script += [{"say": "b done"}, {"say": "a done"}] if child == "finishes" else [
        {"call": {"archmax_wait": {"reason": "the order id"}}}, {"say": "Which order?"}
    ]  # fmt: skip
    agent = create_agent(
        workflow_from_dict(CALLING, "a"), aws.store, ScriptedModel(script), outbound=False, clock=FakeClock(),
        workflows={"b": workflow_from_dict(CALLED, "b")},
    )  # fmt: skip
    kind = agent.workflow.send("pair-1", "go").kind
    assert kind == ("completed" if child == "finishes" else "parked")
    assert sorted(aws.store.outbox_pending()) == ["pair-1", "pair-1~work:b:1"]  # the premise: both recorded entries
    assert aws.handle(aws.stream_event(), FakeLambdaContext()) == {"batchItemFailures": []}
    detail = "Session Completed" if child == "finishes" else "Session Parked"
    events = aws.put_events()
    assert sorted(e["detail"]["session_id"] for e in events) == ["pair-1", "pair-1~work:b:1"]
    assert all(e["detail-type"] == detail for e in events)
    assert aws.store.outbox_pending() == []  # nothing left for the sweep
