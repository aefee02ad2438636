"""The sweep fans out on AWS: it queues due timers, the wake function fires them (issue 24 goal 3).

Rule source: issue 24 goal 3 (due parks handed to workers in parallel through an SQS queue,
SendMessageBatch ten a call), BEHAVIOUR.md §3.12 (a timer names its park: a duplicate, or a timer
for a park no longer current, changes nothing) and §11 (each due park fired once). Runs against
the moto server of ``tests/stores/aws/moto_env.py`` (AwsStore + DynamoInbox + SQS), the handlers
called in-process with SQS-shaped events built from the messages moto hands out.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax.clock import FakeClock
from archmax.errors import InvalidEventError
from archmax.handlers import wake
from archmax.hosting.timer_queue import SqsTimers, parse_timer
from archmax.hosting.wiring import _timer_queue
from archmax.testing import FakeLambdaContext

from .conftest import EVENTS, event, moto_env

WORKFLOW = {
    "title": "Poller",
    "states": {
        "poll": {
            "instructions": "Check, then wait a day.",
            "triggers": {"start": {"description": "Begin polling."}},
        }
    },
}
WAIT = {"say": "Not yet.", "call": {"archmax_wait": {"reason": "not posted", "until": "1d"}}}
DONE = {"say": "Posted."}
QUEUE = "archmax-timers-test"


@pytest.fixture
def poller(tmp_path: Path) -> Path:
    folder = tmp_path / "workflows" / "poller"
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_text(yaml.safe_dump(WORKFLOW), encoding="utf-8")
    return folder


@pytest.fixture
def sqs(aws: Any) -> Any:
    """The moto server's SQS client (the ``aws`` fixture reset the server first)."""
    return moto_env().server().client("sqs")


def _deploy(aws: Any, sqs: Any, poller: Path, script: list[dict[str, Any]]) -> tuple[Any, str, Any]:
    """``(deployment, queue url, wake handler)``: the timer function's host queues due timers."""
    url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    d = aws(script, workflow=poller)
    d.collaborators.host.timers = SqsTimers(sqs, url)
    return d, url, wake.build(d.collaborators)


def _park(d: Any, n: int) -> list[str]:
    ids = [f"p-{i:02d}" for i in range(n)]
    for sid in ids:
        d.collaborators.agent.workflow.send(sid, "go", trigger="start")
    return ids


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message on the queue, each received once (moto hides a received one for the visibility timeout)."""
    got: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not batch:
            return got
        got += batch


def _sqs_event(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The event Lambda's SQS event source hands the wake function for these messages."""
    records = [
        {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "attributes": {"ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "md5OfBody": m["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:{QUEUE}",
            "awsRegion": "us-east-1",
        }
        for m in messages
    ]
    return {"Records": records}


def _fire(handler: Any, messages: list[dict[str, Any]]) -> list[str]:
    """The wake function over these messages; the message ids it reported as failed."""
    answer = handler(_sqs_event(messages), FakeLambdaContext())
    return [f["itemIdentifier"] for f in answer["batchItemFailures"]]


def _status(d: Any, sid: str) -> str:
    return str(d.collaborators.agent.store.load(sid).status)


def test_a_sweep_with_n_due_parks_queues_n_timers_in_ceil_n_over_ten_calls_and_fires_none(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock
) -> None:
    n = 23
    d, url, _handler = _deploy(aws, sqs, poller, [WAIT] * n)
    ids = _park(d, n)
    versions = {sid: d.collaborators.agent.store.load(sid).version for sid in ids}
    clock.advance(timedelta(days=1))
    with moto_env().CallLog(sqs) as calls:
        answer = d.call("timer", event("scheduled_sweep.json"))
    assert answer["ok"] is True
    assert sorted(answer["report"]["due"]) == [[sid, "queued"] for sid in ids]
    assert calls.count("sqs.SendMessageBatch") == math.ceil(n / 10) == 3
    assert calls.count() == 3  # nothing else: no SendMessage one by one
    timers = [parse_timer(m["Body"]) for m in _receive_all(sqs, url)]
    assert sorted(t.session_id for t in timers) == ids
    assert all(t.park_version == versions[t.session_id] for t in timers)  # each names its park
    assert {_status(d, sid) for sid in ids} == {"awaiting_input"}  # the sweep fired nothing itself


def test_the_wake_function_fires_each_timer_once_and_a_duplicate_message_changes_nothing(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock
) -> None:
    n = 12
    d, url, handler = _deploy(aws, sqs, poller, [WAIT] * n + [DONE] * n)
    ids = _park(d, n)
    clock.advance(timedelta(days=1))
    d.call("timer", event("scheduled_sweep.json"))
    messages = _receive_all(sqs, url)
    assert len(messages) == n
    assert _fire(handler, messages) == []
    for sid in ids:
        rec = d.collaborators.agent.store.load(sid)
        assert (str(rec.status), rec.trigger) == ("completed", "timer")
    before = d.snapshot()
    assert _fire(handler, messages[:10]) == []  # SQS delivered these again: at least once
    assert d.snapshot() == before


def test_a_timer_for_a_park_no_longer_current_changes_nothing_even_when_the_new_park_is_due(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock
) -> None:
    d, url, handler = _deploy(aws, sqs, poller, [WAIT, WAIT, DONE])
    (sid,) = _park(d, 1)
    clock.advance(timedelta(days=1))
    d.call("timer", event("scheduled_sweep.json"))
    (old,) = _receive_all(sqs, url)
    # a reply gets there first and the session parks again, on a new timer
    d.collaborators.agent.workflow.deliver(sid, trigger="email_reply", variables={"reply_body": "not yet"})
    clock.advance(timedelta(days=2))  # the new park is due too: the old timer must still not wake it
    before = d.snapshot()
    assert _fire(handler, [old]) == []
    assert d.snapshot() == before
    assert _status(d, sid) == "awaiting_input"


def test_a_malformed_message_is_a_batch_item_failure_naming_the_problem_and_the_rest_are_fired(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    d, url, handler = _deploy(aws, sqs, poller, [WAIT, DONE])
    (sid,) = _park(d, 1)
    clock.advance(timedelta(days=1))
    d.call("timer", event("scheduled_sweep.json"))
    sqs.send_message(QueueUrl=url, MessageBody="not json")
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"session_id": sid, "resume_at": "x", "now": "y"}))
    messages = _receive_all(sqs, url)
    good = [m for m in messages if m["Body"].startswith('{"session_id"') and "park_version" in m["Body"]]
    bad = [m["MessageId"] for m in messages if m not in good]
    assert len(good) == 1 and len(bad) == 2
    with caplog.at_level(logging.WARNING, logger="archmax.hosting"):
        failed = _fire(handler, messages)
    assert sorted(failed) == sorted(bad)
    assert _status(d, sid) == "completed"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert all(mid in logged for mid in bad)
    assert "InvalidEventError" in logged and "park_version" in logged


def test_a_timer_message_body_is_validated_before_anything_is_read() -> None:
    with pytest.raises(InvalidEventError, match="park_version"):
        parse_timer('{"session_id": "p-1", "park_version": -1, "resume_at": "a", "now": "b"}')
    with pytest.raises(InvalidEventError, match="x: Extra inputs"):
        parse_timer('{"session_id": "p-1", "park_version": 1, "resume_at": "a", "now": "b", "x": 1}')
    with pytest.raises(InvalidEventError):
        parse_timer(None)


def test_an_event_that_is_not_an_sqs_batch_is_refused_and_nothing_is_fired(aws: Any, sqs: Any, poller: Path) -> None:
    d, _url, handler = _deploy(aws, sqs, poller, [])
    before = d.snapshot()
    answer = handler(event("scheduled_sweep.json"), FakeLambdaContext())
    assert answer["ok"] is False and answer["status"] == 400 and answer["error"] == "InvalidEventError"
    assert d.snapshot() == before


def test_the_sample_event_is_a_timer_for_a_park_that_is_not_current_on_a_fresh_store(
    aws: Any, sqs: Any, poller: Path
) -> None:
    d, _url, handler = _deploy(aws, sqs, poller, [])
    before = d.snapshot()
    answer = handler(json.loads((EVENTS / "sqs_due_timers.json").read_text()), FakeLambdaContext())
    assert answer == {"batchItemFailures": []}
    assert d.snapshot() == before


def test_the_timer_queue_setting_makes_the_sweep_queue_and_its_absence_fires_in_process(sqs: Any) -> None:
    timers = _timer_queue({"TIMER_QUEUE_URL": "http://sqs/q"}, lambda service: sqs)
    assert isinstance(timers, SqsTimers) and timers.queue_url == "http://sqs/q"
    assert _timer_queue({}, lambda service: sqs) is None


def test_a_park_still_due_is_queued_again_only_at_its_redrive_point_not_at_every_sweep(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock
) -> None:
    d, url, _handler = _deploy(aws, sqs, poller, [WAIT] * 2)
    ids = _park(d, 2)
    clock.advance(timedelta(days=1))
    first = d.call("timer", event("scheduled_sweep.json"))["report"]["due"]
    assert sorted(first) == [[sid, "queued"] for sid in ids]
    kinds = []
    for _minute in range(15):  # no worker runs: both parks stay due
        clock.advance(minutes=1)
        kinds.append({kind for _sid, kind in d.call("timer", event("scheduled_sweep.json"))["report"]["due"]})
    # just due (< 90 s: the first sweep and the one a minute later), then waiting, then queued again at 15 min
    assert kinds[0] == {"queued"} and kinds[1:14] == [{"waiting"}] * 13 and kinds[14] == {"queued"}
    assert len(_receive_all(sqs, url)) == 2 * 3


def test_an_entry_the_queue_refuses_is_an_error_told_to_the_sweep_and_the_others_are_queued(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock
) -> None:
    d, url, _handler = _deploy(aws, sqs, poller, [WAIT] * 3)
    ids = _park(d, 3)
    clock.advance(timedelta(days=1))
    real = sqs.send_message_batch

    def refuse_second(**kwargs: Any) -> dict[str, Any]:
        entries = kwargs.pop("Entries")
        answer = real(Entries=[e for e in entries if e["Id"] != "1"], **kwargs)
        answer["Failed"] = [{"Id": "1", "Code": "InternalError", "Message": "try again", "SenderFault": False}]
        return answer

    d.collaborators.host.timers = SqsTimers(
        type("Client", (), {"send_message_batch": staticmethod(refuse_second)})(), url
    )
    report = d.collaborators.host.sweep()
    assert report.due == [(ids[0], "queued"), (ids[1], "error"), (ids[2], "queued")]
    assert len(_receive_all(sqs, url)) == 2


def test_a_park_whose_deadline_passed_first_is_fired_timeout_by_the_wake_function(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock
) -> None:
    wait = {"say": "Waiting.", "call": {"archmax_wait": {"reason": "the payment", "until": "3h", "timeout": "2h"}}}
    d, url, handler = _deploy(aws, sqs, poller, [wait, {"say": "No payment came; closing."}])
    (sid,) = _park(d, 1)
    clock.advance(timedelta(hours=2))
    assert d.call("timer", event("scheduled_sweep.json"))["report"]["due"] == [[sid, "queued"]]
    assert _fire(handler, _receive_all(sqs, url)) == []
    rec = d.collaborators.agent.store.load(sid)
    assert (str(rec.status), rec.trigger) == ("completed", "timeout")  # the deadline came before the timer


def test_a_timer_message_whose_instants_are_not_instants_is_a_batch_item_failure_and_fires_nothing(
    aws: Any, sqs: Any, poller: Path, clock: FakeClock
) -> None:
    """``now`` is the instant a deadline is judged at: text that is no instant cannot pass a deadline early.

    The park (version current) waits for ``until: 3h`` with ``timeout: 2h``; an hour in, a message naming
    it with ``now`` not an instant (``"zzz"`` sorts after every instant) is malformed: refused, nothing fired.
    """
    wait = {"say": "Waiting.", "call": {"archmax_wait": {"reason": "the payment", "until": "3h", "timeout": "2h"}}}
    d, url, handler = _deploy(aws, sqs, poller, [wait, {"say": "No payment came; closing."}])
    (sid,) = _park(d, 1)
    clock.advance(timedelta(hours=1))
    version = d.collaborators.agent.store.load(sid).version
    for resume_at, now in (("2025-01-01T03:00:00.000Z", "zzz"), ("soon", "2025-01-01T01:00:00.000Z")):
        body = {"session_id": sid, "park_version": version, "resume_at": resume_at, "now": now}
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))
    messages = _receive_all(sqs, url)
    before = d.snapshot()
    failed = _fire(handler, messages)
    assert sorted(failed) == sorted(m["MessageId"] for m in messages)
    assert d.snapshot() == before
    assert _status(d, sid) == "awaiting_input"
    with pytest.raises(InvalidEventError, match="now"):
        parse_timer(json.dumps({"session_id": sid, "park_version": 1, "resume_at": "2025-01-01T03:00:00.000Z",
                                "now": "2025-01-01 01:00"}))  # fmt: skip
