"""The deployed stack's sender for the benchmarks: the sessions table's stream read as Lambda hands it, and the outbound function.

On AWS no operation sends in-process (``create_agent(..., AwsStore)`` and ``hosting/wiring.py``
build no dispatcher): the outbound function, fed by the sessions table's change stream filtered
by template.yaml's ``FilterCriteria``, sends each committed outbox entry and writes its result
record (``outbox/<id>.sent.json``), which is what lets a later commit drop the entry from the
checkpoint (issue 20, ``archmax.outbound.outbox``). A benchmark that runs no sender measures a
record that only grows; these pieces let it settle entries as the deployed stack does.

* :class:`Stream`: the change stream read from moto's DynamoDB Streams, shaped and filtered as the
  event source mapping hands it to the function.
* :func:`outbound_handler`: the outbound function's handler, built as ``functions/outbound/app.py``
  builds it (``outbound_from_environment`` then ``archmax.handlers.outbound.build``).
* :class:`Sender`: both over clients of its own, so a :class:`~_aws.CallCounter` or
  :class:`~_meter.Meter` on the caller's clients never sees its calls; ``settle()`` hands one batch
  over, the way a sender that keeps up runs between two operations.

Rule source: DESIGN.md §3 "The change stream", issue 20 item 1 (settled entries leave the record),
issue 24 goal 5 (an honest bench).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from _aws import BUCKET, INBOX_TABLE, PREFIX, REGION, SESSIONS_TABLE, AwsEnv, MotoServer, template
from _workload import WORKFLOW
from moto.events.models import EventPattern

from archmax.testing import stream_record

BUS = "bench-events"
"""The EventBridge bus the outbound function puts lifecycle events on (created by :func:`streamed_env`)."""

SETTINGS: dict[str, str] = {
    "SESSIONS_TABLE": SESSIONS_TABLE, "SESSIONS_BUCKET": BUCKET, "INBOX_TABLE": INBOX_TABLE,
    "SESSIONS_PREFIX": PREFIX, "WORKFLOW_DIR": str(WORKFLOW), "ARCHMAX_DRAIN": "async",
    "ARCHMAX_MAIL_TRANSPORT": "off", "ARCHMAX_EVENT_BUS": BUS, "AWS_REGION": REGION,
}  # fmt: skip
"""The functions' environment as template.yaml gives it, aimed at the bench's table, bucket and bus (mail off)."""

SENDER_SERVICES = ("dynamodb", "s3", "events", "sesv2")
"""The services the outbound function's clients talk to."""


def streamed_env(server: MotoServer) -> AwsEnv:
    """A fresh server (:meth:`MotoServer.fresh`) whose sessions table has the template's stream, and the bus."""
    env = server.fresh(stream=True)
    server.client("events").create_event_bus(Name=BUS)
    return env


class Stream:
    """The sessions table's change stream, read as the outbound function's event source mapping reads it."""

    def __init__(self, client: Any, ddb: Any) -> None:
        self._client = client
        self._arn = ddb.describe_table(TableName=SESSIONS_TABLE)["Table"]["LatestStreamArn"]
        source = template()["Resources"]["OutboundFunction"]["Properties"]["Events"]["SessionChanges"]["Properties"]
        # Lambda filters stream records with EventBridge's pattern language: moto's matcher of it.
        self._filters = [EventPattern.load(f["Pattern"]) for f in source["FilterCriteria"]["Filters"]]
        self._last: dict[str, str] = {}  # shard id -> last sequence number handed over

    def records(self) -> list[dict[str, Any]]:
        """Records since the last call, filtered and shaped as Lambda hands them to the function.

        A fresh iterator each time, after the last sequence number seen: moto rolls a cancelled
        transaction back by restoring a copy of the table, which strands iterators on the old shard.
        """
        out = []
        for shard in self._client.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]:
            sid = shard["ShardId"]
            where = (
                {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": self._last[sid]}
                if sid in self._last
                else {"ShardIteratorType": "TRIM_HORIZON"}
            )
            iterator = self._client.get_shard_iterator(StreamArn=self._arn, ShardId=sid, **where)["ShardIterator"]
            page = self._client.get_records(ShardIterator=iterator)["Records"]
            found = []
            while page:  # moto pages by 1,000 records
                found.extend(page)
                self._last[sid] = page[-1]["dynamodb"]["SequenceNumber"]
                iterator = self._client.get_shard_iterator(
                    StreamArn=self._arn, ShardId=sid, ShardIteratorType="AFTER_SEQUENCE_NUMBER",
                    SequenceNumber=self._last[sid],
                )["ShardIterator"]  # fmt: skip
                page = self._client.get_records(ShardIterator=iterator)["Records"]
            for record in found:
                shaped = stream_record(record, self._arn)
                if any(f.matches_event(shaped) for f in self._filters):
                    out.append(shaped)
        return out


def outbound_handler(settings: Mapping[str, str], clock: Any, clients: Mapping[str, Any]) -> Callable[[Any, Any], Any]:
    """The outbound function's ``handle(event, context)`` over new collaborators (a cold container).

    Built as ``functions/outbound/app.py`` builds it, without the Powertools telemetry wrapper
    (which makes no AWS call): ``outbound_from_environment(settings)`` then ``outbound.build``.
    """
    from archmax.handlers import outbound
    from archmax.hosting.wiring import outbound_from_environment

    store, dispatcher = outbound_from_environment(settings, clock=clock, clients=clients)
    return outbound.build(store, dispatcher)


def check_batch(answer: Mapping[str, Any]) -> None:
    """Raise ``RuntimeError`` when the outbound function reported failed records (the bench never expects one)."""
    if answer.get("batchItemFailures"):
        raise RuntimeError(f"the outbound function failed records: {answer}")


class Sender:
    """The deployed stack's outbound function for a benchmark on a :func:`streamed_env`, on clients of its own.

    ``settle()`` hands the records committed since the last call to one warm outbound container,
    as one batch: what a sender that keeps up has done by the time the next operation starts.
    None of its AWS calls go through the caller's clients, so they are in no count of the caller's.
    """

    def __init__(self, server: MotoServer, clock: Any) -> None:
        from archmax.testing import FakeLambdaContext

        clients = {service: server.new_client(service) for service in SENDER_SERVICES}
        self.stream = Stream(server.new_client("dynamodbstreams"), clients["dynamodb"])
        self._handle = outbound_handler(SETTINGS, clock, clients)
        self._context = FakeLambdaContext()
        self.batches = 0
        """Batches handed to the outbound function so far."""
        self.records = 0
        """Stream records it was handed so far."""

    def settle(self) -> int:
        """Run the outbound function on the records committed since the last call; return how many there were.

        Raises:
            RuntimeError: the function reported a failed record.
        """
        records = self.stream.records()
        if records:
            check_batch(self._handle({"Records": records}, self._context))
            self.batches += 1
            self.records += len(records)
        return len(records)
