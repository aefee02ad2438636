"""Writes that ride a session's commit: an inbox drain's lease and its item's done mark (issue 10).

Rule source: DESIGN.md §3 "Inbox" (a drainer holds the session's drain lease; an item is done only
once its firing was applied; the lease goes only when nothing new arrived) and issue 10 ("mark-done
+ release in one transaction"; the Lambda path in at most 5 AWS calls).

The drain hands one :class:`Riders` per inbox item to the operation it runs; the operation's
commits pass them explicitly, ``store.commit(..., riders=riders)``. A store that declares
``Capability.COMMIT_RIDERS`` (``AwsStore``) writes the riders in the same DynamoDB transaction as
its commit of that session:

* ``on_claim`` rides the first commit that holds the session's lease (the claim): the drain lease
  is taken or extended. It is *required*: when its condition fails (another drainer took the
  lease), the commit fails as a :class:`~archmax.errors.CommitConflictError` (retryable: the item
  stays pending) and nothing is written.
* ``on_done`` rides the commit that lets the lease go with the session parked or finished and the
  firing's delivery id in the record (so a redelivery would be a duplicate): the item's done mark,
  and for the last item the drainer saw, the drain lease's release conditional on the arrivals
  counter. It is *optional*: when a condition fails (an item arrived meanwhile) the commit is made
  again without it and the drain marks and releases with its own writes.

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
        on_claim: DynamoDB ``TransactWriteItems`` entries for the claim (required).
        on_done: Entries for the commit that ends the turn (optional).
        claimed: ``on_claim`` was written (set by the store).
        done: ``on_done`` was written (set by the store).
    """

    session_id: str
    delivery_id: str
    on_claim: list[dict[str, Any]] = field(default_factory=list)
    on_done: list[dict[str, Any]] = field(default_factory=list)
    claimed: bool = False
    done: bool = False

    def for_commit(self, record: Checkpoint) -> tuple[RiderKind, list[dict[str, Any]]] | None:
        """What rides the commit of ``record``: ``(kind, items)``, or ``None`` for a plain commit."""
        if record.session_id != self.session_id:
            return None
        if record.lease is not None:
            return ("claim", self.on_claim) if self.on_claim and not self.claimed else None
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
