"""The wake handler: fires the due timers the sweep queued, many workers in parallel.

Rule source: issue 24 goal 3 (the sweep fans out), BEHAVIOUR.md §3.12 and §5.11 (a timer names its
park; ``until`` or ``timeout``, whichever came first). The timer function's sweep only finds due
parks and sends each to the timer queue (:class:`archmax.hosting.timer_queue.SqsTimers`); the
queue's event source hands batches to this function, as many at once as its concurrency allows.

Each message is fired by :func:`archmax.hosting.timers.fire`, the rule the local sweep fires
with, through the agent's door. Records are processed with Powertools' batch utility
(``BatchProcessor`` for SQS, ``ReportBatchItemFailures``):

* a message for a park no longer current (a duplicate, a reply or another worker got there first)
  changes nothing and is done;
* a malformed message is a batch item failure, logged with what is wrong
  (``InvalidEventError``); after the queue's receive count it lands in the dead-letter queue;
* any other failure (a store or model outage) is a batch item failure too: SQS delivers the
  message again after its visibility timeout, and the other messages of the batch stay done.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from archmax.errors import ArchmaxError
from archmax.handlers.common import direct, refuse, unrecognised
from archmax.hosting.timer_queue import parse_timer
from archmax.hosting.timers import LOST_RACE, fire

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    from archmax.hosting.wiring import Collaborators

log = logging.getLogger("archmax.hosting")


def is_sqs_batch(event: Any) -> bool:
    """Whether ``event`` is an SQS batch as Lambda hands it over (``Records`` from ``aws:sqs``)."""
    records = event.get("Records") if isinstance(event, Mapping) else None
    return (
        isinstance(records, list)
        and bool(records)
        and all(isinstance(r, Mapping) and r.get("eventSource") == "aws:sqs" for r in records)
    )


def build(c: Collaborators) -> Any:
    """The wake function's handler over the collaborators' agent and host (``host.on_due``: lateness).

    Returns:
        ``handle(event, context) -> {"batchItemFailures": [{"itemIdentifier": <messageId>}, ...]}``;
        for an event that is not an SQS batch, ``{"ok": false, "status": 400, "error":
        "InvalidEventError", "message": ...}`` as the other functions answer one (nothing fired).
    """
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    # A batch whose records all failed answers like any other (every record in batchItemFailures).
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def wake(record: SQSRecord) -> str:
        try:
            timer = parse_timer(record.body)
            if c.host.on_due is not None:
                c.host.on_due(timer.session_id, timer.resume_at)
            try:
                return fire(c.agent, timer).kind
            except LOST_RACE as exc:  # a duplicate, or a park no longer current: nothing changed
                log.info("timer for %r at version %d changed nothing: %s", timer.session_id, timer.park_version, exc)
                return "skipped"
        except ArchmaxError as exc:
            log.warning("timer message %s not fired: %s: %s", record.message_id, type(exc).__name__, exc)
            raise

    def handle(event: Mapping[str, Any], context: Any) -> Mapping[str, Any]:
        if not is_sqs_batch(event):
            return direct(refuse(unrecognised(event, "SQS batches of the timer queue")))
        return process_partial_response(event=dict(event), record_handler=wake, processor=processor, context=context)

    return handle
