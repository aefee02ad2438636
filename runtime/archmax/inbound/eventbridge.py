"""EventBridge scheduled events (classic ``aws.events`` rules and EventBridge Scheduler).

Rule source: DESIGN.md §4 (the timer function is triggered by a 1-minute schedule) and issue 4
item 3 (both the classic scheduled-event shape and EventBridge Scheduler's, where ``detail`` is a
JSON *string*).

The envelope is read through Powertools' ``EventBridgeEvent`` data class. The sweep runs at the
host's clock, not at the event's ``time``: a replayed archive event (``replay-name``) or a late
retry must not sweep at an old instant, and SAM's sample event carries placeholders there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent
from pydantic import BaseModel, ConfigDict, ValidationError

from archmax.errors import InvalidEventError

SCHEDULE_SOURCES = ("aws.events", "aws.scheduler")
"""``source`` of a classic scheduled rule and of EventBridge Scheduler."""

SCHEDULED_DETAIL_TYPE = "Scheduled Event"


class Schedule(BaseModel):
    """One scheduled firing."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    event_id: str
    """EventBridge's id of the event (logged; the sweep itself is idempotent)."""
    source: str
    """``aws.events`` or ``aws.scheduler``."""
    time: str | None
    """The event's ``time`` as sent (informational; the sweep reads the clock)."""
    detail: dict[str, Any]
    """``detail`` as an object (Scheduler's JSON string decoded)."""
    replay: str | None = None
    """``replay-name`` when the event is an archive replay."""


def parse_schedule(event: Mapping[str, Any]) -> Schedule:
    """Read a scheduled event.

    Args:
        event: ``{"id", "source", "detail-type": "Scheduled Event", "time", "detail": {} | "{}", ...}``.

    Returns:
        The :class:`Schedule`.

    Raises:
        InvalidEventError: not a mapping; ``source`` not one of :data:`SCHEDULE_SOURCES`;
            ``detail-type`` not ``Scheduled Event``; a missing id; a ``detail`` that is neither an
            object nor a string holding one; a ``replay-name`` that is not a string.
    """
    if not isinstance(event, Mapping):
        raise InvalidEventError("a scheduled event must be a JSON object")
    data = EventBridgeEvent(dict(event))
    source = event.get("source")
    if source not in SCHEDULE_SOURCES:
        raise InvalidEventError(f"source {source!r} is not a schedule: expected one of {', '.join(SCHEDULE_SOURCES)}")
    if event.get("detail-type") != SCHEDULED_DETAIL_TYPE:
        raise InvalidEventError(f"detail-type {event.get('detail-type')!r} is not '{SCHEDULED_DETAIL_TYPE}'")
    event_id = event.get("id")
    if not isinstance(event_id, str) or not event_id.strip():
        raise InvalidEventError("a scheduled event needs a non-blank 'id'")
    detail: Any = event.get("detail", {})
    if isinstance(detail, str):
        try:
            detail = json.loads(detail) if detail.strip() else {}
        except json.JSONDecodeError as exc:
            raise InvalidEventError(f"detail is a string but not JSON: {exc.msg}") from exc
    if detail is None:
        detail = {}
    if not isinstance(detail, dict):
        raise InvalidEventError(f"detail must be an object, got {type(detail).__name__}")
    time = event.get("time")
    replay = event.get("replay-name")
    if replay is not None and not isinstance(replay, str):
        raise InvalidEventError(f"replay-name must be a string, got {type(replay).__name__}")
    try:
        return Schedule(
            event_id=event_id,
            source=source,
            time=time if isinstance(time, str) else None,
            detail=detail,
            replay=data.replay_name,
        )
    except ValidationError as exc:  # any field this reading missed: a 400, never a crash (issue 13 item 5)
        first = exc.errors()[0]
        raise InvalidEventError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
