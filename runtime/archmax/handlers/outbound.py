"""The outbound handler: the sessions table's stream feeds the dispatcher, off the turn's path.

Rule source: DESIGN.md §3 "The change stream" (one stream-fed function sends what a commit
recorded, idempotently by outbox id) and issue 12 item 4. Each stream record names a session
(``Keys.pk``) and the version its commit wrote (``NewImage.version``); the handler sends the
entries that version recorded and that have no result record yet. A redelivered batch therefore
sends nothing twice.

Where the entries come from (issue 24 goal 2): the record's ``NewImage`` is the whole item the
write left (the template streams ``NEW_IMAGE``). An image whose version recorded no entry (no
``outbox_version`` at its version: a commit that recorded none, or the sender's own settle) costs
no call; one whose chunk travels inline carries the committed record, outbox included
(:mod:`archmax.stores.aws.image`), so the session is not read. Otherwise the session is loaded.

Records are processed with Powertools' batch utility (``BatchProcessor`` for DynamoDB Streams):
a record whose send failed is reported in ``batchItemFailures``, so Lambda retries it (and, after
the event source's retries, hands it to the DLQ) while the records that succeeded stay done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from archmax.errors import InvalidEventError
from archmax.handlers.common import direct, refuse, unrecognised
from archmax.outbound.dispatch import Dispatcher
from archmax.session.records import Checkpoint
from archmax.stores.aws.image import record_of_image, recorded_nothing


def is_stream_batch(event: Any) -> bool:
    """Whether ``event`` is a DynamoDB Streams batch as Lambda hands it over (``Records`` from ``aws:dynamodb``)."""
    records = event.get("Records") if isinstance(event, Mapping) else None
    return (
        isinstance(records, list)
        and bool(records)
        and all(isinstance(r, Mapping) and r.get("eventSource") == "aws:dynamodb" for r in records)
    )


def stream_position(record: DynamoDBRecord) -> tuple[str, int]:
    """``(session id, committed version)`` of one stream record.

    Raises:
        InvalidEventError: the record has no ``pk`` key or no numeric ``version`` in its new image.
    """
    stream = record.dynamodb
    keys = stream.keys if stream is not None else None
    image = stream.new_image if stream is not None else None
    session_id = keys.get("pk") if keys else None
    version = image.get("version") if image else None
    if not isinstance(session_id, str) or version is None:
        raise InvalidEventError("a sessions-table stream record needs Keys.pk and NewImage.version")
    try:
        return session_id, int(version)
    except (TypeError, ValueError):
        raise InvalidEventError(f"NewImage.version {version!r} is not a number") from None


def committed_record(store: Any, record: DynamoDBRecord) -> Checkpoint | None:
    """The committed record whose outbox entries a stream record asks to send, or ``None`` (nothing to send).

    From the record's ``NewImage`` when it carries them (no call), else ``store.load`` (the
    session's latest record; ``None`` once it was deleted).

    Raises:
        InvalidEventError: as :func:`stream_position`.
        StoreError: the load failed.
    """
    session_id, _ = stream_position(record)
    raw = record.raw_event.get("dynamodb")
    image = raw.get("NewImage") if isinstance(raw, Mapping) else None
    if isinstance(image, Mapping):
        if recorded_nothing(image):
            return None
        committed = record_of_image(session_id, image)
        if committed is not None:
            return committed
    return store.load(session_id)


def build(store: Any, dispatcher: Dispatcher) -> Any:
    """The outbound function's handler over a store and a dispatcher.

    Args:
        store: The sessions store (an ``AwsStore`` on Lambda) the dispatcher loads records from.
        dispatcher: Sends entries and records their results (SES and EventBridge on Lambda).

    Returns:
        ``handle(event, context) -> {"batchItemFailures": [{"itemIdentifier": <sequence number>}, ...]}``;
        for an event that is not a stream batch, ``{"ok": false, "status": 400, "error":
        "InvalidEventError", "message": ...}`` as the other functions answer one (nothing sent).
    """
    # A batch whose records all failed answers like any other (every record in batchItemFailures),
    # rather than raising: the same retry either way, and one shape for the caller to read.
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)

    def send(record: DynamoDBRecord) -> None:
        _, version = stream_position(record)
        current = committed_record(store, record)
        if current is None:
            return  # nothing recorded at this version, or the session was deleted since
        dispatcher.dispatch(current, versions={version})

    def handle(event: Mapping[str, Any], context: Any) -> Mapping[str, Any]:
        if not is_stream_batch(event):
            return direct(refuse(unrecognised(event, "DynamoDB stream batches of the sessions table")))
        return process_partial_response(event=dict(event), record_handler=send, processor=processor, context=context)

    return handle
