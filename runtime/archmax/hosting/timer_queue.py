"""The timer queue: the sweep sends due timers to SQS, the wake function reads them back.

Rule source: issue 24 goal 3 (the sweep fans out: 50,000 parked with 1% due per minute keep up)
and BEHAVIOUR.md §3.12 (a timer names its park). The sweep only finds due parks and sends one
message per park, ten per ``SendMessageBatch`` call; the queue's event source hands them to the wake
function (:mod:`archmax.handlers.wake`), whose concurrency is the fan-out. A message is a
:class:`~archmax.hosting.timers.DueTimer` as JSON: the park's version rides along, so a duplicate
(SQS delivers at least once; a park still due at the next sweep is queued again) or a message for
a park no longer current is refused by the engine and changes nothing.

A park still due at the next sweep is usually waiting in the queue behind others: queuing it at
every sweep would add one message per waiting park per minute, each a refused delivery for a
worker, just when the workers are behind (the fan-out bench shows the storm). So a park is queued
when it has just come due (``now - resume_at < fresh_s``, one sweep interval and some slack), and
again once per ``redrive_s`` while it stays due (a message lost, dead-lettered or not yet reached):
stateless, from the timer's own instants. Every due park is queued at least once per ``redrive_s``
as long as sweeps run at least every ``fresh_s`` seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from archmax.clock import format_instant, parse_instant
from archmax.errors import ArchmaxError, InvalidEventError, StoreError
from archmax.hosting.timers import ERROR, QUEUED, DueTimer

if TYPE_CHECKING:
    from archmax.agent import Agent
    from archmax.session.results import Outcome

BATCH = 10
"""Entries per ``SendMessageBatch`` call: the most SQS takes."""

WAITING = "waiting"
"""The kind a sweep reports for a due park queued by an earlier sweep and not queued again now."""

FRESH_S = 90.0
"""Seconds after ``resume_at`` a park counts as just due: the 1-minute schedule plus slack for a late sweep."""

REDRIVE_S = 900.0
"""Seconds between two queuings of a park that stays due (the sweep's redrive period)."""


class SqsTimers:
    """A :class:`~archmax.hosting.timers.TimerHandOff` that queues each due timer for the wake function.

    Args:
        client: A boto3 SQS client.
        queue_url: The timer queue (``TIMER_QUEUE_URL``).
        fresh_s: A park is queued while ``now - resume_at`` is below this (seconds; default :data:`FRESH_S`).
        redrive_s: ...and again once per this many seconds while it stays due (default :data:`REDRIVE_S`).

    Example:
        >>> SqsTimers(boto3.client("sqs"), url).hand(agent, timers)  # doctest: +SKIP
        [('p-1', 'queued'), ('p-2', 'queued')]
    """

    def __init__(self, client: Any, queue_url: str, *, fresh_s: float = FRESH_S, redrive_s: float = REDRIVE_S) -> None:
        self.client = client
        self.queue_url = queue_url
        self.fresh_s = float(fresh_s)
        self.redrive_s = max(float(redrive_s), self.fresh_s)

    def to_queue(self, timer: DueTimer) -> bool:
        """Whether this sweep queues ``timer``: just due, or at its redrive point (see the module docstring)."""
        try:
            age = (parse_instant(timer.now) - parse_instant(timer.resume_at)).total_seconds()
        except ValueError:
            return True  # an instant this cannot read: queue it, the worker refuses what is wrong
        return age < self.fresh_s or age % self.redrive_s < self.fresh_s

    def hand(
        self,
        agent: Agent,
        timers: Sequence[DueTimer],
        *,
        on_error: Callable[[str, ArchmaxError], None] | None = None,
        on_outcome: Callable[[str, Outcome], None] | None = None,
        on_due: Callable[[str, str], None] | None = None,
    ) -> list[tuple[str, str]]:
        """Send the timers :meth:`to_queue` picks, ten per ``SendMessageBatch``; ``[(session_id, kind)]`` in order.

        ``kind`` is ``queued``, ``error``, or ``waiting`` (queued by an earlier sweep). An entry the queue refused is ``error`` and told to ``on_error`` as a :class:`StoreError`
        (its park stays due: the next sweep queues it again). ``on_outcome`` and ``on_due`` are not
        called here: the wake function fires the timers and reports their lateness.

        Raises:
            StoreError: a ``SendMessageBatch`` call failed as a whole (throttled, no such queue);
                the batches before it were sent.
        """
        kinds: dict[int, str] = {i: WAITING for i, t in enumerate(timers) if not self.to_queue(t)}
        sending = [i for i in range(len(timers)) if i not in kinds]
        for start in range(0, len(sending), BATCH):
            chunk = sending[start : start + BATCH]
            failed = self._send([timers[i] for i in chunk])
            for n, i in enumerate(chunk):
                problem = failed.get(str(n))
                kinds[i] = QUEUED if problem is None else ERROR
                if problem is not None and on_error is not None:
                    on_error(timers[i].session_id, StoreError(f"the timer queue refused the timer: {problem}"))
        return [(t.session_id, kinds[i]) for i, t in enumerate(timers)]

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
            a negative version, an instant not written as the sweep writes one); the message names
            what is wrong. ``now`` is the instant a deadline is judged at, compared as text with the
            stored ``timeout_at``: any other text would judge it wrongly (``"zzz"`` sorts after every
            instant, so a deadline not yet come would pass).
    """
    if not body:
        raise InvalidEventError("a timer message needs a JSON body {session_id, park_version, resume_at, now}")
    try:
        timer = DueTimer.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())
        raise InvalidEventError(f"not a timer message: {problems}") from None
    for name in ("resume_at", "now"):
        if not _is_instant(getattr(timer, name)):
            raise InvalidEventError(f"not a timer message: {name}: not an instant YYYY-MM-DDTHH:MM:SS.mmmZ")
    return timer


def _is_instant(text: str) -> bool:
    """Whether ``text`` is an instant exactly as :func:`~archmax.clock.format_instant` writes it."""
    try:
        return format_instant(parse_instant(text)) == text
    except ValueError:
        return False


__all__ = ["BATCH", "FRESH_S", "REDRIVE_S", "WAITING", "SqsTimers", "parse_timer"]
