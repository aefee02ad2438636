"""Lifecycle events sent to ``create_agent(on_event=...)``.

Rule source: BEHAVIOUR.md §3.11 (events). Every event shares the envelope
``{type, ts, seq, session_id, level}``; ``seq`` counts per session and is checkpointed, so it
keeps counting across processes. A failing subscriber never fails the session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from archmax.clock import Clock, format_instant
from archmax.session.records import Checkpoint

EventHandler = Callable[[dict[str, Any]], None]
log = logging.getLogger("archmax.events")


class EventEmitter:
    """Builds event envelopes and hands them to the subscriber.

    Args:
        handler: The subscriber, or None.
        clock: The injected clock.
    """

    def __init__(self, handler: EventHandler | None, clock: Clock) -> None:
        self._handler = handler
        self._clock = clock

    def emit(self, record: Checkpoint, type_: str, level: str = "info", **fields: Any) -> dict[str, Any]:
        """Emit one event about ``record``'s session; returns the event (also when nobody listens)."""
        record.event_seq += 1
        event = {
            "type": type_,
            "ts": format_instant(self._clock.now()),
            "seq": record.event_seq,
            "session_id": record.session_id,
            "level": level,
            **{k: v for k, v in fields.items() if v is not None},
        }
        if self._handler is not None:
            try:
                self._handler(event)
            except Exception:  # a subscriber's bug must not break a session
                log.exception("on_event subscriber failed for %s", type_)
        return event
