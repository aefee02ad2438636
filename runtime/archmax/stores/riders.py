"""Writes that ride a session's commit: an inbox drain's done mark and its arrivals check (issues 10, 24).

Rule source: DESIGN.md §3 "Inbox" (the session's lease holder drains the inbox in order and lets go
only if no new item arrived meanwhile; an item is done only once its firing was applied), issue 10
("mark-done + release in one transaction"; the Lambda path in few AWS calls) and issue 24 (nothing
rides the claim: a transaction bills every item in it twice, and the session item is the big one).

The drain hands one :class:`Riders` per inbox item to the operation it runs; the operation's
commits pass them explicitly, ``store.commit(..., riders=riders)``. A store that declares
``Capability.COMMIT_RIDERS`` (``AwsStore``):

* marks the claim (the first commit that holds the session's lease) as landed, ``claimed``; what
  ``on_claim`` lists rides it in one transaction (the AWS drain lists nothing: the claim is one
  plain conditional write, and the session's own lease is what keeps a second drainer out);
* writes ``on_done`` in the same DynamoDB transaction as the commit that lets the lease go with the
  session parked or finished and the firing's delivery id in the record (so a redelivery would be a
  duplicate): the item's done mark, and for the last item the drainer saw, a check that the inbox's
  arrivals counter is still the one it read. It is *optional*: when a condition fails (an item
  arrived meanwhile) the commit is made again without it, and the drain marks the item itself and
  goes round.

Stores that do not ride (memory, filesystem) ignore riders; the drain then writes as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from archmax.session.records import Checkpoint, SessionStatus

RiderKind = Literal["claim", "done"]


@dataclass
class Riders:
    """The transaction items that ride one inbox item's operation on one session.

    Attributes:
        session_id: Only commits of this session carry them (a sub-workflow's session never does).
        delivery_id: The item's delivery id: ``on_done`` rides only a commit whose record holds it.
        on_claim: DynamoDB ``TransactWriteItems`` entries for the claim (required); may be empty.
        on_done: Entries for the commit that ends the turn (optional).
        claimed: The claim landed, with ``on_claim`` (set by the store).
        done: ``on_done`` was written (set by the store).
        mid_turn: The firing was refused as a duplicate while the turn applying it runs (set by the drain).
    """

    session_id: str
    delivery_id: str
    on_claim: list[dict[str, Any]] = field(default_factory=list)
    on_done: list[dict[str, Any]] = field(default_factory=list)
    claimed: bool = False
    done: bool = False
    mid_turn: bool = False

    def for_commit(self, record: Checkpoint) -> tuple[RiderKind, list[dict[str, Any]]] | None:
        """What rides the commit of ``record``: ``(kind, items)``, or ``None`` for a plain commit."""
        if record.session_id != self.session_id:
            return None
        if record.lease is not None:
            return None if self.claimed else ("claim", self.on_claim)
        ended = record.status != SessionStatus.RUNNING  # a running record without a lease is a crash's release
        if self.on_done and not self.done and ended and self.delivery_id in record.delivery_ids:
            return "done", self.on_done
        return None

    def landed(self, kind: RiderKind) -> None:
        """Record that the riders of ``kind`` were written with their commit."""
        if kind == "claim":
            self.claimed = True
        else:
            self.done = True


__all__ = ["RiderKind", "Riders"]
