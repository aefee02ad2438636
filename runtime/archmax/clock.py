"""Injected time (CONVENTIONS: "Time is injected").

Instants are UTC strings ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (BEHAVIOUR.md conventions), so string
comparison orders them. Trail timestamps are integer epoch milliseconds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Anything that says what time it is, as an aware UTC ``datetime``."""

    def now(self) -> datetime:
        """The current instant, an aware UTC ``datetime``.

        Every "now" of the runtime reads it (BEHAVIOUR.md conventions: the clock can be injected).
        """
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        """The wall clock's current instant, an aware UTC ``datetime``."""
        return datetime.now(UTC)


class FakeClock:
    """A clock tests set and advance by hand; it never moves on its own.

    Args:
        start: The first instant, an aware datetime or an instant string. Defaults to 2025-01-01T00:00:00Z.
    """

    def __init__(self, start: datetime | str | None = None) -> None:
        if start is None:
            start = datetime(2025, 1, 1, tzinfo=UTC)
        self._now = parse_instant(start) if isinstance(start, str) else start.astimezone(UTC)

    def now(self) -> datetime:
        """The instant last set or advanced to (an aware UTC ``datetime``); reading it never moves the clock."""
        return self._now

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**kwargs)`` and return the new instant."""
        self._now = self._now + (delta if delta is not None else timedelta(**kwargs))
        return self._now

    def set(self, instant: datetime | str) -> None:
        """Jump to ``instant`` (an aware datetime or an instant string)."""
        self._now = parse_instant(instant) if isinstance(instant, str) else instant.astimezone(UTC)


def format_instant(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC (milliseconds truncated)."""
    moment = moment.astimezone(UTC)
    # strftime's %Y does not pad years before 1000, which would break string ordering
    return f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_instant(text: str) -> datetime:
    """Parse an instant written by :func:`format_instant` (or any ISO-8601 form ``datetime`` reads)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def epoch_ms(moment: datetime) -> int:
    """Integer epoch milliseconds of an aware datetime (trail timestamps)."""
    return int(moment.timestamp() * 1000)
