"""The inbox's records and protocol: where a firing waits for its session.

Rule source: DESIGN.md §3 "Inbox" and issue 4 item 2: inbound emails and webhooks are first
written as inbox items keyed by (session id, delivery id), so a duplicate is a no-op and nothing
is lost while a turn runs; a per-session drain lease and an arrivals counter let the lease holder
drain in order and let go only when nothing new arrived (one conditional write).

Implementations: :class:`~archmax.hosting.inbox.MemoryInbox`,
:class:`~archmax.hosting.inbox_fs.FilesystemInbox`, :class:`~archmax.hosting.inbox_dynamo.DynamoInbox`.
Memory and filesystem share :class:`InboxState`, the pure logic of one session's inbox, and
:class:`LocalInbox`, their declared absence of the DynamoDB fast paths (:class:`InboxCapability`).
"""

from __future__ import annotations

import base64
from datetime import timedelta
from enum import StrEnum
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from archmax.clock import format_instant, parse_instant
from archmax.session.firing import Firing
from archmax.session.ids import parent_session_id

ItemStatus = Literal["pending", "done", "failed"]
ItemKind = Literal["send", "deliver"]

DRAIN_KEY = "~drain"
"""The reserved key of a session's lease-and-counter record (DynamoDB ``sk``)."""


def _encode_files(files: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for var, f in files.items():
        content = f["content"]
        if isinstance(content, bytes):
            out[var] = {
                "name": f["name"],
                "content": base64.b64encode(content).decode("ascii"),
                "encoding": "base64",
            }
        else:
            out[var] = {"name": f["name"], "content": content, "encoding": "text"}
    return out


def queue_id(session_id: str) -> str:
    """The inbox queue of a session's firings: the root of its sub-workflow chain (no read).

    A caller and its children apply events as one pair, whichever id a firing names (BEHAVIOUR.md
    §5.10), so their firings wait in one queue, drained in arrival order under one drain lease
    (DESIGN.md §3 "Inbox"; issue 22). A session that is no child is its own queue.
    """
    parent = parent_session_id(session_id)
    while parent is not None:
        session_id, parent = parent, parent_session_id(parent)
    return session_id


class InboxItem(BaseModel):
    """One firing waiting for its session; JSON-serialisable (file bytes base64-encoded inside).

    Attributes:
        session_id: The queue the item waits in: :func:`queue_id` of the session the firing is for
            (the root of its sub-workflow chain); ``firing.session_id`` is the session it is applied to.
        delivery_id: The firing's stable id; unique within the session.
        arrived_at: Instant ``YYYY-MM-DDTHH:MM:SS.mmmZ`` the host accepted it.
        kind: ``send`` (the firing rule) or ``deliver`` (into an input park only).
        firing: The firing itself (trigger, variables, files, message).
        status: ``pending`` until applied; ``done`` (applied, or a duplicate) or ``failed`` (a typed refusal).
        error: The refusal's text when ``failed``; for a ``done`` duplicate, why nothing was applied.
        seq: The per-session arrival number the inbox assigned at ``put`` (1, 2, ...); 0 before.
    """

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    session_id: str
    delivery_id: str
    arrived_at: str
    kind: ItemKind = "send"
    firing: Firing
    status: ItemStatus = "pending"
    error: str | None = None
    seq: int = 0

    @field_serializer("firing", when_used="json")
    def _firing_json(self, firing: Firing) -> dict[str, Any]:
        data = firing.model_dump(mode="python")
        data["files"] = _encode_files(data.get("files") or {})
        return data

    @field_validator("firing", mode="before")
    @classmethod
    def _firing_from_json(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("files"), dict):
            files = {}
            for var, f in value["files"].items():
                if isinstance(f, dict) and f.get("encoding") == "base64":
                    files[var] = {"name": f["name"], "content": base64.b64decode(f["content"])}
                elif isinstance(f, dict) and "encoding" in f:
                    files[var] = {"name": f["name"], "content": f["content"]}
                else:
                    files[var] = f
            value = {**value, "files": files}
        return value

    def order_key(self) -> tuple[str, int]:
        """Arrival order: ``arrived_at``, then the per-session sequence."""
        return (self.arrived_at, self.seq)


class DrainView(NamedTuple):
    """One session's inbox as a drainer reads it in one step (``DynamoInbox.drain_view``, issue 10).

    Attributes:
        seen: The arrivals counter.
        owner: The drain lease's holder, or ``None``.
        expires_at: The drain lease's expiry instant, or ``None``.
        items: The pending items in arrival order.
    """

    seen: int
    owner: str | None
    expires_at: str | None
    items: list[InboxItem]

    def held_by_other(self, owner: str, now: str) -> bool:
        """Another drainer holds a live lease at ``now`` (so ``owner`` must not drain)."""
        return self.owner is not None and self.owner != owner and (self.expires_at is None or self.expires_at > now)


class InboxCapability(StrEnum):
    """What an inbox declares it does beyond the core (tested as ``InboxCapability.X in inbox.capabilities``)."""

    SESSION_LEASE_DRAIN = "session_lease_drain"
    """The host drains it without a drain lease: the session's own lease keeps a second drainer out,
    and ``drain_view`` reads the counter, the drain lease and the pending items in ONE strongly
    consistent read, so the drain costs one query a round (``Host._drain_unleased``, issues 10
    and 24). Without it the host takes the drain lease (``try_acquire`` / ``release``)."""


@runtime_checkable
class Inbox(Protocol):
    """Where firings wait for their session (DESIGN.md §3 "Inbox").

    Attributes:
        capabilities: The declared :class:`InboxCapability` set.
    """

    capabilities: frozenset[InboxCapability]

    def put(self, item: InboxItem, *, new_session: bool = False) -> bool:
        """Create the item on (session_id, delivery_id), assign its ``seq`` and bump the arrivals counter.

        Args:
            item: The item.
            new_session: The caller minted the session id just now, so nothing was put for it before
                (a hint: the DynamoDB inbox then needs no read of a counter it never saw).

        Returns:
            ``False`` when that key exists already (a duplicate: nothing changes).
        """
        ...

    def pending(self, session_id: str) -> list[InboxItem]:
        """The session's pending items in arrival order (``arrived_at``, then ``seq``)."""

    def get(self, session_id: str, delivery_id: str) -> InboxItem | None:
        """One item, whatever its status, or ``None``."""

    def mark(self, session_id: str, delivery_id: str, status: ItemStatus, error: str | None = None) -> None:
        """Set an item's status (and error text); a done or failed item leaves the pending set."""

    def sessions_with_pending(self) -> list[str]:
        """Ids of sessions with at least one pending item, sorted (the sweep's re-drive)."""

    def try_acquire(self, session_id: str, owner: str, now: str, ttl_s: float) -> bool:
        """Take (or, for the same owner, extend) the drain lease when it is free or expired at ``now``."""

    def arrivals(self, session_id: str) -> int:
        """The session's arrivals counter: bumped by every successful ``put``."""

    def release(self, session_id: str, owner: str, seen_arrivals: int) -> bool:
        """Let the drain lease go in one conditional step.

        Only if ``owner`` holds it AND the counter still equals ``seen_arrivals``; ``False`` means an
        item arrived (or the lease was lost) meanwhile, and the caller must drain again.
        """
        ...

    def arrivals_and_pending(self, session_id: str) -> tuple[int, list[InboxItem]]:
        """The arrivals counter, then the pending items (one query on DynamoDB)."""
        ...

    def drain_view(self, session_id: str) -> DrainView:
        """The counter, the drain lease and the pending items, read in that order."""
        ...


class LocalInbox:
    """The optional members of :class:`Inbox` for an inbox without the DynamoDB fast paths (memory, files)."""

    capabilities: frozenset[InboxCapability] = frozenset()

    def arrivals(self, session_id: str) -> int:  # pragma: no cover - every inbox defines it
        """Defined by each inbox itself."""
        raise NotImplementedError

    def pending(self, session_id: str) -> list[InboxItem]:  # pragma: no cover - every inbox defines it
        """Defined by each inbox itself."""
        raise NotImplementedError

    def arrivals_and_pending(self, session_id: str) -> tuple[int, list[InboxItem]]:
        """:meth:`arrivals`, then :meth:`pending` (two reads: the counter first, so nothing is missed)."""
        return self.arrivals(session_id), self.pending(session_id)


class InboxState(BaseModel):
    """One session's inbox as a value: items, counter, drain lease (memory and filesystem inboxes).

    Each method is the whole of one inbox operation; the caller holds the session's lock around it.
    """

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    session_id: str
    items: dict[str, InboxItem] = Field(default_factory=dict)
    arrivals: int = 0
    owner: str | None = None
    expires_at: str | None = None

    def put(self, item: InboxItem) -> bool:
        """Add ``item`` as pending with the next arrival number; ``False`` for a known delivery id."""
        if item.delivery_id in self.items:
            return False
        self.arrivals += 1
        self.items[item.delivery_id] = item.model_copy(
            update={"seq": self.arrivals, "status": "pending", "error": None}
        )
        return True

    def pending(self) -> list[InboxItem]:
        """Pending items in arrival order."""
        return sorted((i for i in self.items.values() if i.status == "pending"), key=InboxItem.order_key)

    def mark(self, delivery_id: str, status: ItemStatus, error: str | None) -> None:
        """Record an item's outcome.

        Raises:
            KeyError: no item has this delivery id.
        """
        item = self.items.get(delivery_id)
        if item is None:
            raise KeyError(f"no inbox item '{delivery_id}' for session '{self.session_id}'")
        self.items[delivery_id] = item.model_copy(update={"status": status, "error": error})

    def try_acquire(self, owner: str, now: str, ttl_s: float) -> bool:
        """Take or extend the drain lease (see :meth:`Inbox.try_acquire`)."""
        free = self.owner is None or self.owner == owner or self.expires_at is None or self.expires_at <= now
        if not free:
            return False
        self.owner = owner
        self.expires_at = lease_expiry(now, ttl_s)
        return True

    def release(self, owner: str, seen_arrivals: int) -> bool:
        """Let the drain lease go (see :meth:`Inbox.release`)."""
        if self.owner != owner or self.arrivals != seen_arrivals:
            return False
        self.owner = None
        self.expires_at = None
        return True

    def drain_view(self) -> DrainView:
        """The counter, the drain lease and the pending items (see :meth:`Inbox.drain_view`)."""
        return DrainView(self.arrivals, self.owner, self.expires_at, self.pending())


def lease_expiry(now: str, ttl_s: float) -> str:
    """The instant ``ttl_s`` seconds after ``now`` (both ``YYYY-MM-DDTHH:MM:SS.mmmZ``)."""
    return format_instant(parse_instant(now) + timedelta(seconds=ttl_s))
