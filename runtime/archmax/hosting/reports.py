"""What the host answers: an accepted firing, a re-driven session, a sweep's report.

Rule source: DESIGN.md §3 "Inbox" and §4 (hosting); the shapes :class:`~archmax.hosting.host.Host`
returns and the handlers serialize.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from archmax.hosting.sweep import ERROR as SWEEP_ERROR
from archmax.hosting.sweep import SKIPPED

Disposition = Literal["turn", "resume", "reply", "queued"]


class Accepted(BaseModel):
    """What :meth:`Host.accept` answers once the firing is durably inboxed (a webhook's ``202`` body).

    Attributes:
        session_id: The resolved session id.
        delivery_id: The firing's delivery id (given, or a fresh uuid).
        disposition: What the firing means now: ``turn``/``resume``/``reply`` as ``resolve_session``
            says, or ``queued`` when the session is mid-turn (decided when the item is applied).
        duplicate: The delivery id was inboxed before; nothing new was written.
        warnings: ``resolve_session``'s warnings (e.g. a session path that did not resolve).
    """

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    session_id: str
    delivery_id: str
    disposition: Disposition
    duplicate: bool
    warnings: list[str] = Field(default_factory=list)


class Redrive(BaseModel):
    """One session drained by the sweep.

    Attributes:
        session_id: The session.
        results: Per applied item: the Outcome's kind, ``duplicate``, or the refusal's class name.
        recovered: A send took the session over after its lease expired (§3.12).
    """

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    session_id: str
    results: list[str] = Field(default_factory=list)
    recovered: bool = False


class SweepReport(BaseModel):
    """What :meth:`Host.sweep` did.

    Attributes:
        now: The instant swept at.
        due: ``(session_id, kind)`` of every due park woken with ``timer`` (see ``archmax.hosting.sweep``);
            with the timer queue (issue 24 goal 3) ``queued``, ``waiting`` (queued by an earlier sweep) or ``error``.
        due_skipped: Why due parks and stale turns were not swept (a store without ``list``), else ``None``.
        redriven: Every session with waiting inbox items, drained.
        stale: ``(session_id, kind)`` of every other ``running`` session whose lease had expired (or
            was missing), handed to ``recover`` (``archmax.hosting.sweep.recover_stale``): the
            continued turn's Outcome kind, ``skipped`` (another process got there first) or ``error``.
        outbox: ``(session_id, kind)`` of every session whose committed, unsent outbox entries the
            sweep sent (``archmax.hosting.sweep.send_outbox``): ``sent`` or ``error`` (issue 20 item 2).
    """

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    now: str
    due: list[tuple[str, str]] = Field(default_factory=list)
    due_skipped: str | None = None
    redriven: list[Redrive] = Field(default_factory=list)
    stale: list[tuple[str, str]] = Field(default_factory=list)
    outbox: list[tuple[str, str]] = Field(default_factory=list)
    oldest_park: str | None = None
    """The session of the workflow's oldest open park (BEHAVIOUR.md §5.11), or ``None``."""
    oldest_park_age_s: float | None = None
    """That park's age in seconds at ``now``: the ``OldestParkAge`` metric."""

    @property
    def recovered(self) -> list[str]:
        """Ids of sessions this sweep took over after their lease expired: by a re-drive, then by ``recover``."""
        redriven = [r.session_id for r in self.redriven if r.recovered]
        return redriven + [sid for sid, kind in self.stale if kind not in (SKIPPED, SWEEP_ERROR)]


__all__ = ["Accepted", "Disposition", "Redrive", "SweepReport"]
