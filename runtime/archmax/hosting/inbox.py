"""The inbox: where firings wait for their session — protocol, records and every implementation.

Rule source: DESIGN.md §3 "Inbox", issue 4 item 2. Import from here::

    from archmax.hosting.inbox import InboxItem, MemoryInbox, FilesystemInbox, DynamoInbox

``DynamoInbox`` imports boto3 only when built without a client.
"""

from __future__ import annotations

import threading

from archmax.hosting.inbox_base import (
    DRAIN_KEY,
    DrainView,
    Inbox,
    InboxCapability,
    InboxItem,
    InboxState,
    ItemKind,
    ItemStatus,
    LocalInbox,
    queue_id,
)
from archmax.hosting.inbox_dynamo import DynamoInbox
from archmax.hosting.inbox_fs import FilesystemInbox
from archmax.session.ids import validate_delivery_id, validate_session_id

__all__ = [
    "DRAIN_KEY",
    "DynamoInbox",
    "FilesystemInbox",
    "Inbox",
    "InboxCapability",
    "InboxItem",
    "ItemKind",
    "ItemStatus",
    "MemoryInbox",
    "queue_id",
    "validate_delivery_id",
]


class MemoryInbox(LocalInbox):
    """An :class:`Inbox` in process memory, safe for threads (tests, embedded hosts).

    Example:
        >>> inbox = MemoryInbox()
        >>> inbox.try_acquire("chat-1", "me", "2025-01-01T00:00:00.000Z", 60)
        True
    """

    def __init__(self) -> None:
        self._states: dict[str, InboxState] = {}
        self._lock = threading.Lock()

    def _state(self, session_id: str) -> InboxState:
        validate_session_id(session_id)
        state = self._states.get(session_id)
        if state is None:
            state = self._states[session_id] = InboxState(session_id=session_id)
        return state

    def put(self, item: InboxItem, *, new_session: bool = False) -> bool:
        """See :meth:`Inbox.put`. Raises InvalidSessionIdError, InvalidDeliveryIdError."""
        validate_delivery_id(item.delivery_id, session_id=item.session_id)
        with self._lock:
            return self._state(item.session_id).put(item)

    def pending(self, session_id: str) -> list[InboxItem]:
        """See :meth:`Inbox.pending`."""
        with self._lock:
            return self._state(session_id).pending()

    def get(self, session_id: str, delivery_id: str) -> InboxItem | None:
        """See :meth:`Inbox.get`."""
        with self._lock:
            return self._state(session_id).items.get(delivery_id)

    def mark(self, session_id: str, delivery_id: str, status: ItemStatus, error: str | None = None) -> None:
        """See :meth:`Inbox.mark`. Raises KeyError for an unknown item (a host bug)."""
        with self._lock:
            self._state(session_id).mark(delivery_id, status, error)

    def sessions_with_pending(self) -> list[str]:
        """See :meth:`Inbox.sessions_with_pending`."""
        with self._lock:
            return sorted(sid for sid, state in self._states.items() if state.pending())

    def try_acquire(self, session_id: str, owner: str, now: str, ttl_s: float) -> bool:
        """See :meth:`Inbox.try_acquire`."""
        with self._lock:
            return self._state(session_id).try_acquire(owner, now, ttl_s)

    def arrivals(self, session_id: str) -> int:
        """See :meth:`Inbox.arrivals`."""
        with self._lock:
            return self._state(session_id).arrivals

    def release(self, session_id: str, owner: str, seen_arrivals: int) -> bool:
        """See :meth:`Inbox.release`."""
        with self._lock:
            return self._state(session_id).release(owner, seen_arrivals)

    def drain_view(self, session_id: str) -> DrainView:
        """See :meth:`Inbox.drain_view`: one look under the lock."""
        with self._lock:
            return self._state(session_id).drain_view()
