"""The timer queue: the sweep sends due timers to SQS, the wake function reads them back.

Rule source: issue 24 goal 3 (the sweep fans out: 50,000 parked with 1% due per minute keep up)
and BEHAVIOUR.md §3.12 (a timer names its park). The sweep only finds due parks and sends one
message per park, ten per ``SendMessageBatch`` call; the queue's event source hands them to the wake
function (:mod:`archmax.handlers.wake`), whose concurrency is the fan-out. A message is a
:class:`~archmax.hosting.timers.DueTimer` as JSON: the park's version rides along, so a duplicate
(SQS delivers at least once; a park still due at the next sweep is queued again) or a message for
a park no longer current is refused by the engine and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from archmax.errors import ArchmaxError, InvalidEventError, StoreError
from archmax.hosting.timers import ERROR, QUEUED, DueTimer

if TYPE_CHECKING:
    from archmax.agent import Agent
    from archmax.session.results import Outcome

BATCH = 10
"""Entries per ``SendMessageBatch`` call: the most SQS takes."""


class SqsTimers:
    """A :class:`~archmax.hosting.timers.TimerHandOff` that queues each due timer for the wake function.

    Args:
        client: A boto3 SQS client.
        queue_url: The timer queue (``TIMER_QUEUE_URL``).

    Example:
        >>> SqsTimers(boto3.client("sqs"), url).hand(agent, timers)  # doctest: +SKIP
        [('p-1', 'queued'), ('p-2', 'queued')]
    """

    def __init__(self, client: Any, queue_url: str) -> None:
        self.client = client
        self.queue_url = queue_url

    def hand(
        self,
        agent: Agent,
        timers: Sequence[DueTimer],
        *,
        on_error: Callable[[str, ArchmaxError], None] | None = None,
        on_outcome: Callable[[str, Outcome], None] | None = None,
        on_due: Callable[[str, str], None] | None = None,
    ) -> list[tuple[str, str]]:
        """Send every timer, ten per ``SendMessageBatch``; ``[(session_id, "queued" | "error")]`` in order.

        An entry the queue refused is ``error`` and told to ``on_error`` as a :class:`StoreError`
        (its park stays due: the next sweep queues it again). ``on_outcome`` and ``on_due`` are not
        called here: the wake function fires the timers and reports their lateness.

        Raises:
            StoreError: a ``SendMessageBatch`` call failed as a whole (throttled, no such queue);
                the batches before it were sent.
        """
        results: list[tuple[str, str]] = []
        for start in range(0, len(timers), BATCH):
            chunk = timers[start : start + BATCH]
            failed = self._send(chunk)
            for i, timer in enumerate(chunk):
                problem = failed.get(str(i))
                if problem is None:
                    results.append((timer.session_id, QUEUED))
                    continue
                if on_error is not None:
                    on_error(timer.session_id, StoreError(f"the timer queue refused the timer: {problem}"))
                results.append((timer.session_id, ERROR))
        return results

    def _send(self, chunk: Sequence[DueTimer]) -> dict[str, str]:
        """One ``SendMessageBatch`` call; ``{entry id: "<code>: <message>"}`` of the entries refused."""
        from botocore.exceptions import BotoCoreError, ClientError

        entries = [{"Id": str(i), "MessageBody": timer.model_dump_json()} for i, timer in enumerate(chunk)]
        try:
            answer = self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except (ClientError, BotoCoreError) as exc:
            raise StoreError(f"cannot send due timers to {self.queue_url}: {exc}") from exc
        return {f["Id"]: f"{f.get('Code', '')}: {f.get('Message', '')}" for f in answer.get("Failed") or []}


def parse_timer(body: str | None) -> DueTimer:
    """The :class:`DueTimer` a queue message's body carries.

    Raises:
        InvalidEventError: the body is not the JSON of a timer (not JSON, a missing or extra field,
            a negative version); the message names what is wrong.
    """
    if not body:
        raise InvalidEventError("a timer message needs a JSON body {session_id, park_version, resume_at, now}")
    try:
        return DueTimer.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())
        raise InvalidEventError(f"not a timer message: {problems}") from None


__all__ = ["BATCH", "SqsTimers", "parse_timer"]
