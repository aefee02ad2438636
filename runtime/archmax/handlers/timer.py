"""The timer handler: the 1-minute schedule sweeps due parks and re-drives waiting inboxes.

Rule source: DESIGN.md §4 (timer: sweep due parks, deliver trigger ``timer`` with ``{now}``;
re-drive stale leases and inboxes), the seed, "Waiting for a time, not a reply" (waking a
session is the host's job; a double-fired timer is safe) and issue 24 goal 3: with
``TIMER_QUEUE_URL`` (the stack) the sweep only queues due timers and the wake function
(:mod:`archmax.handlers.wake`) fires them in parallel; without it the sweep fires them itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from archmax.handlers.common import Handler, direct, drain, is_drain_event
from archmax.inbound.eventbridge import parse_schedule

if TYPE_CHECKING:
    from archmax.hosting.wiring import Collaborators


def _jsonable(report: Any) -> dict[str, Any]:
    if hasattr(report, "model_dump"):
        return report.model_dump(mode="json")
    return dict(report)


def build(c: Collaborators) -> Handler:
    """The timer function's handler: a classic ``aws.events`` or a Scheduler event -> ``Host.sweep``.

    Returns:
        ``{"ok": true, "event_id", "report": <SweepReport>}``, or ``{"ok": false, "status": 400, ...}``
        for an event that is not a schedule (nothing swept). The waker's ``{"drain": id}`` (a timer
        delivery that found items waiting wakes its session through this same function) answers
        ``{"ok": true, "drained": [...]}``.
    """

    def sweep(event: Mapping[str, Any]) -> dict[str, Any]:
        schedule = parse_schedule(event)
        return {"event_id": schedule.event_id, "report": _jsonable(c.host.sweep())}

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if is_drain_event(event):
            return direct(lambda: drain(c, event["drain"]))
        return direct(lambda: sweep(event))

    return handle
