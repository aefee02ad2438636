"""The sender clears a session's outbox mark only when every entry of the record is settled (issue 20 item 2),
asking the store only about entries it has not seen settle (issue 24: a warm outbound function reads nothing
more per park than the park's own entries).
"""

from __future__ import annotations

from typing import Any

from archmax import MemoryStore
from archmax.clock import FakeClock
from archmax.outbound.aliases import MemoryAliases
from archmax.outbound.dispatch import Dispatcher
from archmax.outbound.transports import Delivery, MailOff
from archmax.session.records import Checkpoint, OutboxEntry, SessionStatus

SID = "settle-1"
T0 = "2025-01-01T00:00:00.000Z"


class Bus:
    def __init__(self) -> None:
        self.put: list[str] = []

    def publish(self, session_id: str, entry: OutboxEntry) -> Delivery:
        self.put.append(entry.id)
        return Delivery(transport="eventbridge", where="bus", provider_id=f"ev-{entry.id}")


class Asked:
    """The memory store, counting the settled questions asked of it."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.asked: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def outbox_outcomes(self, session_id: str, entry_ids: Any, **kw: Any) -> Any:
        self.asked.append(list(entry_ids))
        return self._store.outbox_outcomes(session_id, entry_ids, **kw)


def _parked(store: MemoryStore, version: int, *, created_at: str = T0) -> Checkpoint:
    record = Checkpoint(
        session_id=SID, version=version, workflow="w", status=SessionStatus.AWAITING_INPUT,
        created_at=created_at, updated_at=T0,
        outbox=[OutboxEntry(version=v, index=0, kind="event", detail_type="Session Parked") for v in range(1, version + 1)],
    )  # fmt: skip
    store.commit(SID, record, version - 1)
    return record


def test_a_warm_sender_asks_only_about_entries_it_never_saw_settle_and_clears_the_mark_each_park():
    memory = MemoryStore()
    store, bus = Asked(memory), Bus()
    dispatcher = Dispatcher(store, mailer=MailOff(), publisher=bus, aliases=MemoryAliases(), clock=FakeClock(T0))
    first = _parked(memory, 1)
    dispatcher.dispatch(first, versions={1})
    assert store.asked == [] and memory.outbox_pending() == []  # its only entry was its own
    second = _parked(memory, 2)
    assert memory.outbox_pending() == [SID]
    dispatcher.dispatch(second, versions={2})
    assert store.asked == [] and memory.outbox_pending() == []  # v1's entry: seen settled by this sender
    cold = Dispatcher(store, mailer=MailOff(), publisher=bus, aliases=MemoryAliases(), clock=FakeClock(T0))
    third = _parked(memory, 3)
    cold.dispatch(third, versions={3})
    assert store.asked == [[third.outbox[0].id, third.outbox[1].id]] and memory.outbox_pending() == []
    assert bus.put == [e.id for e in third.outbox]  # each sent once


def test_an_older_entry_not_settled_keeps_the_mark_for_the_sweep():
    memory = MemoryStore()
    store, bus = Asked(memory), Bus()
    dispatcher = Dispatcher(store, mailer=MailOff(), publisher=bus, aliases=MemoryAliases(), clock=FakeClock(T0))
    _parked(memory, 1)  # its stream record never came (or failed for good)
    dispatcher.dispatch(_parked(memory, 2), versions={2})
    assert memory.outbox_pending() == [SID] and bus.put == ["0000000002-0"]
    dispatcher.dispatch(memory.load(SID))  # the sweep
    assert memory.outbox_pending() == [] and bus.put == ["0000000002-0", "0000000001-0"]
