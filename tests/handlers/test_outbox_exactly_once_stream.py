"""Every committed outbox entry is sent exactly once on AWS (issue 20 items 1, 3 and 5).

Real parts: the AWS store on moto with the table built from template.yaml and its stream, records
read from moto's ``dynamodbstreams`` and handed to the outbound function as Lambda does (the
:class:`~handlers.test_outbound_stream.Aws` harness), SESv2 and EventBridge on moto. SES is "down"
while the domain identity is not verified (``SendEmail`` is refused).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.handlers import outbound, timer
from archmax.hosting.wiring import from_environment
from archmax.models.scripted import ScriptedModel
from archmax.outbound.dispatch import Dispatcher
from archmax.spec import workflow_from_dict
from archmax.testing import FakeLambdaContext, load_event
from unit.outbound._mail import SUPPORT_INBOX, first_mail, parse_raw, send_mail, support_agent

from .conftest import EVENTS
from .test_outbound_stream import Aws

SID = "m-1@example.org"
ASKING = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "asking")


@pytest.fixture
def stream() -> Aws:
    return Aws()


def mail_variables(n: int = 1, *, to: list[str] | None = None) -> dict[str, Any]:
    return {
        "from": "dana.rivers@example.org",
        "message_id": f"m-{n}@example.org",
        "to": ["support@example.com"] if to is None else to,
        "subject": "My order",
        "conversation_id": SID,
    }


def asking_agent(aws: Aws, questions: int) -> Any:
    script = [{"say": f"Question {i}?", "call": {"archmax_wait": {"reason": f"answer {i}"}}} for i in range(questions)]
    return create_agent(ASKING, aws.store, ScriptedModel(script), outbound=False, clock=FakeClock())


def test_a_retried_batch_after_an_ses_outage_sends_every_question_of_the_burst(stream):
    aws = stream
    agent = asking_agent(aws, 6)
    agent.workflow.send(SID, "Hello", variables=mail_variables(1))
    first = aws.stream_event()
    assert aws.handle(first, FakeLambdaContext())["batchItemFailures"]  # SES refuses: not verified yet
    for i in range(1, 6):
        agent.workflow.deliver(SID, trigger="reply", message=f"Reply {i}", variables=mail_variables(i + 1))
    aws.verify_domain()  # SES is back
    assert aws.handle(aws.stream_event(), FakeLambdaContext()) == {"batchItemFailures": []}
    bodies = sorted(parse_raw(raw).get_content().strip() for raw in aws.sent_mail())
    assert bodies == [f"Question {i}?" for i in range(6)]
    assert [e["detail-type"] for e in aws.put_events()] == ["Session Parked"] * 6
    assert aws.handle(aws.stream_event(), FakeLambdaContext()) == {"batchItemFailures": []}  # redelivered
    assert len(aws.sent_mail()) == 6 and aws.put_events() == []


class HeldMailer:
    """The real SES mailer, except that its first send waits until released (a slow provider call)."""

    def __init__(self, mailer: Any) -> None:
        self._mailer = mailer
        self.holding = threading.Event()
        self.release = threading.Event()

    def send(self, msg: Any, session_id: str, entry: Any) -> Any:
        self.holding.set()
        self.release.wait(10)
        return self._mailer.send(msg, session_id, entry)


def test_a_stream_batch_arriving_while_another_sender_holds_the_mail_sends_it_once(stream):
    aws = stream
    aws.verify_domain()
    asking_agent(aws, 1).workflow.send(SID, "Hello", variables=mail_variables())
    event = aws.stream_event()
    d = aws.dispatcher
    held = HeldMailer(d.mailer)
    slow = Dispatcher(aws.store, mailer=held, publisher=d.publisher, aliases=d.aliases, sender=d.sender)
    answers: list[dict[str, Any]] = []
    first = threading.Thread(target=lambda: answers.append(outbound.build(aws.store, slow)(event, FakeLambdaContext())))
    first.start()
    assert held.holding.wait(10)
    assert aws.handle(event, FakeLambdaContext()) == {"batchItemFailures": []}  # a concurrent, redelivered batch
    held.release.set()
    first.join(10)
    assert answers == [{"batchItemFailures": []}]
    assert len(aws.sent_mail()) == 1 and len(aws.put_events()) == 1


def test_a_bccd_mail_with_no_from_is_recorded_failed_while_its_parked_event_is_put(stream):
    aws = stream
    aws.verify_domain()
    asking_agent(aws, 1).workflow.send(SID, "Hello", variables=mail_variables(to=[]))  # undisclosed-recipients
    d = aws.dispatcher
    no_from = outbound.build(
        aws.store, Dispatcher(aws.store, mailer=d.mailer, publisher=d.publisher, aliases=d.aliases)
    )
    event = aws.stream_event()
    for _ in range(2):  # reported on every retry, so the record reaches the DLQ as a failed send does
        assert no_from(event, FakeLambdaContext())["batchItemFailures"]
    assert aws.sent_mail() == []
    assert [e["detail-type"] for e in aws.put_events()] == ["Session Parked"]  # put once, never held back
    record = aws.store.load(SID)
    question, parked = record.outbox
    outcomes = aws.store.outbox_outcomes(SID, [question.id, parked.id], created_at=record.created_at)
    assert outcomes == {question.id: "failed", parked.id: "sent"}
    assert aws.store.list_files(SID, "outbox") == []  # the state is items, not objects (issue 24)


def test_the_timer_function_sends_what_a_stream_record_that_ran_out_of_retries_left(stream):
    aws = stream
    aws.verify_domain()
    inbox = "archmax-inbox-outbox-test"
    props = aws_template("InboxTable")
    aws.ddb.create_table(
        TableName=inbox,
        KeySchema=props["KeySchema"],
        AttributeDefinitions=props["AttributeDefinitions"],
        GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
        BillingMode="PAY_PER_REQUEST",
    )
    assert send_mail(support_agent(aws.store), first_mail()).kind == "parked"  # the stream never sent it
    env = {**aws.settings, "WORKFLOW_DIR": str(SUPPORT_INBOX), "INBOX_TABLE": inbox, "ARCHMAX_DRAIN": "inline"}
    functions = from_environment(env, model=ScriptedModel([]), clients=aws.clients)
    handle = timer.build(functions)
    for _ in range(2):  # two sweeps: the second finds nothing left
        assert handle(load_event(EVENTS / "scheduled_sweep.json"), FakeLambdaContext())["ok"]
    (raw,) = aws.sent_mail()
    assert "Which order is this about?" in parse_raw(raw).get_content()
    assert [e["detail-type"] for e in aws.put_events()] == ["Session Parked"]
    assert aws.store.outbox_pending() == []


def aws_template(name: str) -> dict[str, Any]:
    from .conftest import moto_env

    return moto_env().template_resource(name)
