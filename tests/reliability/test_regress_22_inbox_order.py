"""Inboxed firings of a session are applied in arrival order (found by the filesystem pair soak on c4071e3; fixed).

``inbox events of s0 applied out of arrival order: [(1, 4), (2, 7), (3, 6)]`` — a replay of the shrunk
schedule, step by step (no child holds a lease in it: every child completes; the memory store fails the
same way, so it is neither the sub-workflow classify change, remembered.py, nor the filesystem drain):

- ev6 (``accept``, id ``d-6``, fault ``error-after 2``): the item is put (seq 1), then the wake's drain
  ``inbox.try_acquire`` is applied but its answer is lost. The drain lease is held by an owner nobody
  runs until it expires (60 s; the schedule's clock does not move), so every later wake's drain gets
  ``[]`` and the inbox of ``s0`` stalls.
- ev6 again through ``send`` (the redeliver rule): the direct door applies it now (transcript position 4).
- ev9 (``accept``, no id): item seq 2, pending (the drain lease is still held).
- ev10 (``accept``, id ``d-10``): item seq 3, pending.
- ev10 again through ``send``: ``agent.workflow.send`` knew nothing of the inbox; ``s0`` is completed
  and idle, so the turn runs and applies ev10 (position 6) ahead of ev9, which waits in the inbox.
- recovery: the lease expires, the sweep drains seq 1 (duplicate, done), seq 2 (ev9 applied, position
  7), seq 3 (duplicate, done).

So a direct firing (``workflow.send``, ``Host.deliver_now``) at a session whose inbox holds earlier
pending items is applied ahead of them — DESIGN.md §3 "Inbox": "the lease holder drains the inbox in
order before it lets go" — and a caller's redelivery through a direct door of an id pending in the
inbox overtakes the items that arrived before it. Exactly-once holds; only the order breaks.
Fixed in ``Host`` (issue 22): a drain whose ``try_acquire`` answer was lost asks again under the same
owner (so the lease is not orphaned), and a direct door (``Host.send_now``, ``Host.deliver_now``; the
CLI's run, email and reply go through ``send_now``) refuses an id that waits in the inbox with
``DeliveryQueuedError``: the drain applies it in its place. ``tests/hosting/test_direct_queued.py``
holds each half on its own.

Rule source: DESIGN.md §3 "Inbox"; BEHAVIOUR.md (inbox drained in arrival order).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from reliability import counters
from reliability.harness import Fault, PairWorld
from reliability.invariants import Ledger
from reliability.pair_schedules import PairDriver
from reliability.schedules import CHANNELS

STEPS: list[tuple[str, Any, Fault | None]] = [
    ("run", ("send", "s0", "subdone", False, False), None),
    ("run", ("send", "s0", "subdone", False, False), None),
    ("run", ("accept", "s0", "subdone", True, False), Fault("error-after", 2)),
    ("run", ("send", "s0", "subdone", False, False), None),
    ("redeliver", ("send", 365), None),
    ("redeliver", ("send", 15), None),
    ("run", ("send", "s0", "subdone", False, False), None),
    ("run", ("accept", "s0", "subdone", False, False), None),
    ("run", ("accept", "s0", "subdone", True, False), Fault("crash-before", 5)),
    ("redeliver", ("send", 114), Fault("outage", 3)),
    ("run", ("deliver", "s0", "sublong", False, False), Fault("error-after", 1)),
    ("run", ("deliver", "s1", "subuntil", True, False), Fault("outage", 3)),
    ("redeliver", ("accept", 556), Fault("error-after", 4)),
]


def _redeliver(driver: PairDriver, pick: int, channel: str, fault: Fault | None) -> None:
    """:meth:`Schedule.redeliver` with its draw fixed."""
    with_ids = [e for e in driver.ledger.events.values() if e.delivery_id and e.channel in CHANNELS]
    if with_ids:
        driver.call(with_ids[pick % len(with_ids)], channel, fault, None)


@pytest.mark.parametrize("kind", ["memory", "filesystem"])
def test_inbox_items_of_a_caller_are_applied_in_arrival_order(kind: str, tmp_path: Any) -> None:
    table = counters.StoreCounters(Counter(), Counter())  # a replay, not a schedule: kept off the summary
    world = PairWorld(kind, table, tmp=tmp_path if kind == "filesystem" else None)
    driver = PairDriver(world, Ledger(), table)
    try:
        for sid in ("s0", "s1", "s2"):
            driver.run(("send", sid, "done", True, False), None)
        for kind, arg, fault in STEPS:
            if kind == "run":
                driver.run(arg, fault)
            else:
                _redeliver(driver, arg[1], arg[0], fault)
        driver.recover_and_check()
    finally:
        world.close()
