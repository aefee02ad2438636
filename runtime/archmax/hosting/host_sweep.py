"""One sweep of a host: due parks, inbox re-drives, dead turns, unsent mail, the oldest park.

Rule source: DESIGN.md §3 "Inbox" and §4 (the timer function), BEHAVIOUR.md §5.11, issue 20 item 2.
:meth:`archmax.hosting.host.Host.sweep` documents the steps; each lives in :mod:`archmax.hosting.sweep`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from archmax.errors import DuplicateDeliveryError, SessionStoreCapabilityError
from archmax.hosting.reports import Redrive, SweepReport
from archmax.hosting.sweep import oldest_park, recover_stale, send_outbox, sweep
from archmax.session.results import Outcome

if TYPE_CHECKING:
    from archmax.hosting.host import Host

log = logging.getLogger("archmax.hosting")


def sweep_host(host: Host, instant: str) -> SweepReport:
    """The steps of :meth:`archmax.hosting.host.Host.sweep` at ``instant`` (its docstring says which)."""
    report = SweepReport(now=instant)
    # The outbox first: what was marked before this sweep. The commits of its own wakes are the
    # outbound function's (their stream records) or the next sweep's: sending them here too would race
    # the sender for every entry the sweep's turns made (issue 24: the timer cycle paid it twice).
    report.outbox = send_outbox(
        host.agent.store,
        host.sweep_outbound() if host.sweep_outbound is not None else host.agent.runtime.outbound,
        workflow=host.agent.spec.slug,
        on_error=lambda sid, exc: log.warning("outbox entries of %r not sent yet: %s", sid, exc),
    )
    try:
        report.due = sweep(
            host.agent,
            instant,
            on_error=lambda sid, exc: log.warning("timer delivery to %r failed: %s", sid, exc),
            on_due=host.on_due,
            hand_off=host.timers,
        )
    except SessionStoreCapabilityError as exc:
        report.due_skipped = str(exc)
    report.redriven = [_redrive(host, sid) for sid in host.inbox.sessions_with_pending()]
    if report.due_skipped is None:
        driven = {sid for sid, _kind in report.due} | {r.session_id for r in report.redriven}
        report.stale = recover_stale(
            host.agent,
            instant,
            exclude=driven,
            on_error=lambda sid, exc: log.warning("recovering the dead turn of %r failed: %s", sid, exc),
        )
        found = oldest_park(host.agent, instant)  # a wait nobody answers is seen (§5.11)
        if found is not None:
            report.oldest_park, report.oldest_park_age_s = found
    return report


def _redrive(host: Host, session_id: str) -> Redrive:
    """Drain one session's waiting inbox items; what each came to."""
    entry = Redrive(session_id=session_id)
    for result in host.drain(session_id):
        if isinstance(result, Outcome):
            entry.results.append(result.kind)
            entry.recovered = entry.recovered or result.recovered
        elif isinstance(result, DuplicateDeliveryError):
            entry.results.append("duplicate")
        else:
            entry.results.append(type(result).__name__)
    return entry
