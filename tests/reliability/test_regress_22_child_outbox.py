"""Issue 22 with issue 20: what a child commits to send is sent by the operation that committed it.

Found by ``make soak`` (memory+pairs and filesystem+pairs): ``outbox entry s0~work:sub:1/0000000005-0
was committed but never sent``. Caller ``s0`` calls its child ``sub``, which parks on a timer
(``archmax_wait`` with ``until: 5m``). When the timer is due the sweep wakes the child through its
caller (§5.10): the child's turn runs (it parks again) and commits its messages to send (its outbox), then the
caller continues and commits. The door answered the caller's record alone, so the in-process
dispatch sent the caller's outbox and never the child's; only the sweep's outbox pass found it, and
since that pass runs before the sweep's own wakes (issue 24), not until the next sweep.

Now the door answers every session the operation let go of with entries to send (``Applied.others``)
and the in-process dispatch sends them all, so one sweep leaves nothing of the pair unsent.

Rule source: DESIGN.md §3 (sending starts from the commit), issue 20 (every committed outbox entry
sent, once), BEHAVIOUR.md §5.10 (a caller and its child are driven as one).
"""

from __future__ import annotations

from typing import Any

import pytest

from reliability.regress_env import *  # noqa: F403 - the moto server fixture
from reliability.regress_env import pair_driver
from reliability.schedules import LEASE_TTL_S

KINDS = ("memory", "filesystem", "aws")
CHILD = "s0~work:sub:1"


@pytest.fixture(params=KINDS)
def driver(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    with pair_driver(request.param, request, tmp_path) as driver:
        yield driver


def _child_parked_on_a_timer(driver: Any) -> None:
    """The found schedule's steps: three sessions, then ``s0``'s child parks until a timer."""
    for sid in ("s0", "s1", "s2"):
        driver.run(("send", sid, "done", False, False), None)
    driver.run(("send", "s0", "subuntil", False, False), None)
    child = driver.world.raw_store.load(CHILD)
    assert child.status.value == "awaiting_input" and child.resume_at is not None


def _unsent(world: Any) -> dict[str, list[str]]:
    """Session id -> the ids of its committed outbox entries with no ``sent`` record."""
    store = world.raw_store
    out = {}
    for sid in store.list():
        rec = store.load(sid)
        ids = [e.id for e in rec.outbox]
        outcomes = store.outbox_outcomes(sid, ids, created_at=rec.created_at) if ids else {}
        if missing := [i for i in ids if outcomes.get(i) != "sent"]:
            out[sid] = missing
    return out


def test_the_found_schedule_holds(driver: Any) -> None:
    """The schedule as the soak found it, with the soak's recovery and checks (every entry sent once)."""
    _child_parked_on_a_timer(driver)
    driver.recover_and_check()
    assert driver.world.raw_store.load(CHILD).resume_at is None  # the sweep woke it (it waits again, untimed)


@pytest.mark.parametrize("driver", ["memory", "filesystem"], indirect=True)
def test_one_sweep_sends_what_the_wake_of_a_child_committed(driver: Any) -> None:
    """In process: the sweep's wake of the child is one operation, and its dispatch sends both outboxes."""
    world = driver.world
    _child_parked_on_a_timer(driver)
    assert _unsent(world) == {}  # the parks' own messages went with their operations
    sent_before, version = len(world.sink.sent), world.raw_store.load(CHILD).version
    world.advance(6 * 60 + LEASE_TTL_S)  # past the child's 5-minute timer
    report = world.host.sweep()

    assert [sid for sid, _kind in report.due] == ["s0"]  # the caller carries its child's due timer (§5.10)
    child = world.raw_store.load(CHILD)
    assert child.version > version and child.resume_at is None  # its timer's turn ran: it waits again
    child_entries = {f"{CHILD}/{e.id}" for e in child.outbox if e.version == child.version}
    assert child_entries, "the wake's commit of the child recorded something to send"
    assert _unsent(world) == {}
    assert child_entries <= set(world.sink.sent[sent_before:])  # sent now, by the wake's dispatch
