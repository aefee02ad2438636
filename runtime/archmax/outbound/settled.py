"""Which outbox entries are settled (sent, or failed for good): what a committer may drop from the record.

Rule source: issue 20 item 1 and DESIGN.md §3 "The change stream". An entry is *settled* once it has
a sent or failed record (:meth:`~archmax.stores.base.SessionStore.outbox_outcomes`: files under
``outbox/`` by default, one item per entry on AWS); only then may a commit drop it from the
checkpoint's outbox (:func:`archmax.outbound.outbox.record_outbox`).
"""

from __future__ import annotations

from typing import Any

from archmax.session.records import OutboxEntry
from archmax.stores.base import OutboxOutcome


def settled_in(store: Any, session_id: str, entries: list[OutboxEntry], *, created_at: str) -> Any:
    """``entry -> bool``: whether the entry is settled, asking the store once, on the first question.

    What a committer passes to :func:`~archmax.outbound.outbox.record_outbox` (``settled=``): it is
    asked only when the record holds more than ``OUTBOX_KEPT`` entries, so most commits ask nothing.
    ``entries`` are the ones it may ask about (the record's outbox before the commit), of the session
    created at ``created_at``; the store is asked about all of them at once. A store that fails the question makes every entry unsettled:
    they stay, nothing is lost.
    """
    known: list[dict[str, OutboxOutcome]] = []

    def settled(entry: OutboxEntry) -> bool:
        if not known:
            try:
                known.append(store.outbox_outcomes(session_id, [e.id for e in entries], created_at=created_at))
            except Exception:  # noqa: BLE001 - not knowing keeps the entry; a commit never fails on it
                known.append({})
        return entry.id in known[0]

    return settled


__all__ = ["settled_in"]
