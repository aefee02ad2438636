"""What the session folder says about its outbox entries: sent, failed for good, claimed.

Rule source: issue 20 items 1-3 and DESIGN.md §3 "The change stream". Every fact is a create-only
file under ``outbox/`` in the session folder, so one listing answers for every entry:

* ``outbox/<id>.sent.json``: the entry was sent (the result record, written once);
* ``outbox/<id>.failed.json``: the entry can never be sent (issue 20 item 5);
* ``outbox/<id>.claim-<n>.json``: the ``n``-th claim on sending it (issue 20 item 3). The highest
  ``n`` is the one that counts; a sender takes an entry over by creating claim ``n + 1``, which
  only one of several racing senders can do.

An entry is *settled* once it has a sent or failed record: only then may a commit drop it from the
checkpoint's outbox (:func:`archmax.outbound.outbox.record_outbox`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from archmax.session.records import OutboxEntry

_NAME = re.compile(r"^outbox/(?P<id>\d{10}-\d+)\.(?:(?P<done>sent|failed)|claim-(?P<claim>\d+))\.json$")


def claim_path(entry: OutboxEntry, n: int) -> str:
    """The path of the ``n``-th claim (from 1) on sending ``entry``."""
    return f"outbox/{entry.id}.claim-{n:04d}.json"


@dataclass
class OutboxFiles:
    """One listing of a session's ``outbox/`` folder, read for every entry of its record."""

    sent: set[str] = field(default_factory=set)
    """Ids of entries with a sent record."""
    failed: set[str] = field(default_factory=set)
    """Ids of entries with a failed record."""
    claims: dict[str, int] = field(default_factory=dict)
    """Entry id -> the highest claim number made on it."""

    @classmethod
    def of(cls, store: Any, session_id: str) -> OutboxFiles:
        """List the session's ``outbox/`` folder (one store call).

        Raises:
            StoreError: the store failed listing.
        """
        found = cls()
        for path in store.list_files(session_id, "outbox"):
            match = _NAME.match(path)
            if match is None:
                continue
            entry_id = match["id"]
            if match["done"] == "sent":
                found.sent.add(entry_id)
            elif match["done"] == "failed":
                found.failed.add(entry_id)
            else:
                found.claims[entry_id] = max(found.claims.get(entry_id, 0), int(match["claim"]))
        return found

    def settled(self, entry: OutboxEntry) -> bool:
        """Whether ``entry`` is sent or failed for good: nothing is left to send."""
        return entry.id in self.sent or entry.id in self.failed


def settled_in(store: Any, session_id: str) -> Any:
    """``entry -> bool``: whether the entry is settled, listing the folder once, on the first question.

    What a committer passes to :func:`~archmax.outbound.outbox.record_outbox` (``settled=``): it is
    asked only when the record holds more than ``OUTBOX_KEPT`` entries, so most commits list nothing.
    A store that fails the listing makes every entry unsettled: they stay, nothing is lost.
    """
    listing: list[OutboxFiles] = []

    def settled(entry: OutboxEntry) -> bool:
        if not listing:
            try:
                listing.append(OutboxFiles.of(store, session_id))
            except Exception:  # noqa: BLE001 - not knowing keeps the entry; a commit never fails on it
                listing.append(OutboxFiles())
        return listing[0].settled(entry)

    return settled


__all__ = ["OutboxFiles", "claim_path", "settled_in"]
