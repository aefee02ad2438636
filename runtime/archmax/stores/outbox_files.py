"""Outbox entry state as create-only files in the session folder: the port's default (issue 20 items 1-3, 5).

Rule source: issue 20 (a sender claims an entry before sending; a sent or failed record is written
once) and issue 24 (the AWS store keeps the same facts as items instead; this is what the memory,
filesystem and backend stores keep). Every fact is a create-only file under ``outbox/``, so one
listing answers for every entry:

* ``outbox/<id>.sent.json``: the entry was sent (the result record, written once);
* ``outbox/<id>.failed.json``: the entry can never be sent;
* ``outbox/<id>.claim-<n>.json``: the ``n``-th claim on sending it (``{"owner", "expires_at",
  "released"}``). The highest ``n`` is the one that counts; a sender takes an entry over by
  creating claim ``n + 1``, which only one of several racing senders can do, and only once claim
  ``n`` is released or expired. A release is claim ``n + 1`` created already released.

``created_at`` is not needed here: ``delete`` removes the folder, these files with it.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from archmax.errors import PathExistsError
from archmax.stores.base import OutboxClaim, OutboxOutcome

_NAME = re.compile(r"^outbox/(?P<id>\d{10}-\d+)\.(?:(?P<done>sent|failed)|claim-(?P<claim>\d+))\.json$")


def outcome_path(entry_id: str, outcome: OutboxOutcome) -> str:
    """``outbox/<entry id>.sent.json`` or ``outbox/<entry id>.failed.json``."""
    return f"outbox/{entry_id}.{outcome.value}.json"


def claim_path(entry_id: str, n: int) -> str:
    """The path of the ``n``-th claim (from 1) on sending the entry."""
    return f"outbox/{entry_id}.claim-{n:04d}.json"


@dataclass
class OutboxListing:
    """One listing of a session's ``outbox/`` folder."""

    settled: dict[str, OutboxOutcome] = field(default_factory=dict)
    """Entry id -> its recorded outcome (sent wins over failed)."""
    claims: dict[str, int] = field(default_factory=dict)
    """Entry id -> the highest claim number made on it."""

    @classmethod
    def of(cls, paths: Iterable[str]) -> OutboxListing:
        """Read the facts the ``paths`` of ``outbox/`` hold (other names are ignored)."""
        found = cls()
        for path in paths:
            match = _NAME.match(path)
            if match is None:
                continue
            entry_id = match["id"]
            if match["done"] is not None:
                if found.settled.get(entry_id) != OutboxOutcome.SENT:
                    found.settled[entry_id] = OutboxOutcome(match["done"])
            else:
                found.claims[entry_id] = max(found.claims.get(entry_id, 0), int(match["claim"]))
        return found


class FileOutboxState:
    """The outbox-state members of the store port on ``list_files`` / ``get`` / ``seed`` (see the module docstring)."""

    def list_files(self, session_id: str, prefix: str = "") -> builtins.list[str]:  # pragma: no cover
        """Defined by each store itself."""
        raise NotImplementedError

    def get(self, session_id: str, path: str) -> bytes | None:  # pragma: no cover
        """Defined by each store itself."""
        raise NotImplementedError

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:  # pragma: no cover
        """Defined by each store itself."""
        raise NotImplementedError

    def outbox_claim(
        self, session_id: str, entry_id: str, *, created_at: str, owner: str, now: str, until: str
    ) -> OutboxClaim:
        """Create claim ``n + 1`` once claim ``n`` is over (one listing, one create-only write; see the port)."""
        listing = OutboxListing.of(self.list_files(session_id, "outbox"))
        if entry_id in listing.settled:
            return OutboxClaim(listing.settled[entry_id].value)
        last = listing.claims.get(entry_id, 0)
        if last and not self._claim_over(session_id, entry_id, last, now):
            return OutboxClaim.HELD
        body = json.dumps({"owner": owner, "expires_at": until, "released": False})
        try:
            self.seed(session_id, {claim_path(entry_id, last + 1): body + "\n"}, create_only=True)
        except PathExistsError:
            return OutboxClaim.HELD  # another sender claimed it first
        if last:  # a takeover: the sender it took over from may have finished after the listing
            for outcome in (OutboxOutcome.SENT, OutboxOutcome.FAILED):
                if self.get(session_id, outcome_path(entry_id, outcome)) is not None:
                    return OutboxClaim(outcome.value)
        return OutboxClaim.CLAIMED

    def outbox_release(self, session_id: str, entry_id: str, *, created_at: str, owner: str, now: str) -> None:
        """Create the next claim, already released, when ``owner`` holds the last one."""
        listing = OutboxListing.of(self.list_files(session_id, "outbox"))
        last = listing.claims.get(entry_id, 0)
        if not last or entry_id in listing.settled or self._claim_field(session_id, entry_id, last, "owner") != owner:
            return
        body = json.dumps({"owner": owner, "expires_at": now, "released": True})
        try:
            self.seed(session_id, {claim_path(entry_id, last + 1): body + "\n"}, create_only=True)
        except PathExistsError:
            pass  # another sender claimed it meanwhile: nothing of ours to let go

    def outbox_record(
        self, session_id: str, entry_id: str, outcome: OutboxOutcome, body: str, *, created_at: str
    ) -> bool:
        """Create ``outbox/<id>.<outcome>.json`` (create-only); False when it exists."""
        try:
            self.seed(session_id, {outcome_path(entry_id, outcome): body}, create_only=True)
        except PathExistsError:
            return False
        return True

    def outbox_outcomes(
        self, session_id: str, entry_ids: Iterable[str], *, created_at: str
    ) -> dict[str, OutboxOutcome]:
        """The settled ones among ``entry_ids``, from one listing of ``outbox/``."""
        wanted = set(entry_ids)
        if not wanted:
            return {}
        settled = OutboxListing.of(self.list_files(session_id, "outbox")).settled
        return {entry_id: outcome for entry_id, outcome in settled.items() if entry_id in wanted}

    def outbox_result(self, session_id: str, entry_id: str, *, created_at: str) -> str | None:
        """The text of ``outbox/<id>.sent.json``, or ``None``."""
        data = self.get(session_id, outcome_path(entry_id, OutboxOutcome.SENT))
        return None if data is None else data.decode("utf-8")

    def _claim_field(self, session_id: str, entry_id: str, n: int, name: str) -> object:
        data = self.get(session_id, claim_path(entry_id, n))
        try:
            claim = json.loads(data) if data is not None else None
        except ValueError:
            return None  # a torn claim file holds nothing
        return claim.get(name) if isinstance(claim, dict) else None

    def _claim_over(self, session_id: str, entry_id: str, n: int, now: str) -> bool:
        """Whether claim ``n`` no longer holds the entry (released, expired, absent or unreadable)."""
        data = self.get(session_id, claim_path(entry_id, n))
        try:
            claim = json.loads(data) if data is not None else None
        except ValueError:
            return True
        if not isinstance(claim, dict):
            return True
        expires = claim.get("expires_at")
        return bool(claim.get("released")) or not isinstance(expires, str) or expires <= now


__all__ = ["FileOutboxState", "OutboxListing", "claim_path", "outcome_path"]
