"""What the CLI says about a session that is ``running``: mid-turn under a lease, or stopped part-way.

A turn holds its session with a lease of 15 minutes (the engine's ``lease_ttl_s``, renewed while
the turn runs). A process that dies (``kill -9``, Ctrl-C, a power cut) leaves the session
``running`` with its lease until it expires; from then on ``archmax sweep`` continues the turn
(BEHAVIOUR.md §3.12 recovery). Nothing can tell a live process from a dead one before then, so the
CLI names the instant.

Rule source: BEHAVIOUR.md §3.12; issue 25 items 1 and 2.
"""

from __future__ import annotations

from typing import Any

from archmax.clock import SystemClock, format_instant
from archmax.session.records import SessionStatus

LEASE_MINUTES = 15
"""How long a turn's lease lasts without renewal (``Runtime.lease_ttl_s`` = 900 s), as the docs state it."""

EVERY_LEASE = "9999-12-31T23:59:59.999Z"
"""An instant after every lease: ``store.stale(EVERY_LEASE)`` lists every ``running`` session."""


def now_instant() -> str:
    """The clock's instant as stores compare instants (``YYYY-MM-DDTHH:MM:SS.mmmZ``)."""
    return format_instant(SystemClock().now())


def live_lease(head: Any, now: str) -> str | None:
    """The expiry of the live lease a ``running`` session's head holds at ``now``, else None."""
    if head is None or head.status != SessionStatus.RUNNING or head.lease is None:
        return None
    return head.lease.expires_at if head.lease.live_at(now) else None


def running_line(expires_at: str | None, now: str, sweep: str) -> str:
    """What to know about a ``running`` session: mid-turn until its lease expires, or recoverable now.

    Args:
        expires_at: Its lease's expiry (``SessionSummary.lease_expires_at``), or None when it holds none.
        now: The instant to judge at.
        sweep: The ``archmax sweep`` command line to name.
    """
    if expires_at is not None and expires_at > now:
        return (
            f"mid-turn: lease until {expires_at}; if its process stopped (killed, Ctrl-C), {sweep} "
            f"finishes the turn from then"
        )
    return f"turn stopped part-way: {sweep} finishes it"
