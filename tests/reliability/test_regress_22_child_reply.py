"""Issue 22: a reply a caller forwards to its child is the pair's event — applied once, whatever the door.

Found by the randomized pair schedules on the memory store: ``event ev7 (deliver, delivery id 'd-7') on
s0 was refused but applied 1 times``. Caller ``s0`` is parked at its child's decision (``subhuman``).
``ev7`` is delivered to ``s0`` (refused: a decision park takes no delivery, §3.5, and nothing changes),
then redelivered with the same id through ``send``: at a decision park that is a reply, which the caller
forwards to the child (§3.6, §5.10). The child's claim commits the reply (its message, ``d-7``), then
the process dies. The retry of ``d-7`` through ``deliver`` used to be refused, so its caller learned
"not applied" of an event that was in the child's transcript: only the child remembered the id, and
every door at the caller asked the caller alone. Now a caller's duplicate check asks the child its
park delegates to, and the caller adopts its child's ids when it settles with it, so the id stays a
duplicate after the pair moved on (before, a redelivered reply was applied a second time then).

Found next by the same soak: a firing sent to the caller while its child answers a reply under a live
lease was refused for good (``SessionNotParkedError`` of the child), so the inbox marked its item
``failed``; the pair is mid-turn, exactly as a single session would be (``SessionNotResumableError``),
so the item stays pending and is applied once the reply is over.

Rule source: BEHAVIOUR.md §3.5, §3.6, §5.10; README "promises" (a firing with a delivery id is applied
once: a redelivery raises ``DuplicateDeliveryError``; another writer mid-turn means "not now").
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax.errors import DuplicateDeliveryError
from archmax.session.records import DELIVERY_IDS_KEPT
from reliability.harness import Fault, Interloper
from reliability.regress_env import *  # noqa: F403 - the moto server fixture
from reliability.regress_env import pair_driver
from reliability.schedules import LEASE_TTL_S

KINDS = ("memory", "filesystem", "aws")
CHILD = "s0~work:sub:3"
REPLY_CLAIMED = Fault("crash-before", 2)
"""The process dies after the child's reply claim (the firing's first write), before the reply's release."""


@pytest.fixture(params=KINDS)
def driver(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    with pair_driver(request.param, request, tmp_path) as driver:
        yield driver


def _caller_at_its_third_childs_decision(driver: Any) -> None:
    """ev1-ev6 of the found schedule: ``s0`` parks at the decision of its third child."""
    for sid in ("s0", "s1", "s2"):
        driver.run(("send", sid, "done", True, False), None)
    driver.run(("send", "s0", "subdone", True, False), None)
    driver.run(("send", "s0", "subdone", False, False), None)
    driver.run(("send", "s0", "subhuman", True, False), None)
    caller = driver.world.raw_store.load("s0")
    assert caller.status.value == "awaiting_decision" and caller.delegation.session_id == CHILD


def test_a_reply_redelivered_after_its_child_died_answering_is_a_duplicate_at_the_caller(driver: Any) -> None:
    """The found schedule, step by step."""
    store = driver.world.raw_store
    _caller_at_its_third_childs_decision(driver)
    at_caller = ("deliver", "s0", "done", True, False)
    at_child = ("child", "deliver", "s0", "done", True)
    driver.run(at_caller, None, Interloper(1, lambda: driver.run(at_child, None, nested=True)))
    ev7 = driver.ledger.events[7]
    assert (ev7.delivery_id, ev7.status) == ("d-7", "refused")  # a decision park takes no delivery
    driver.run(("send", "s0", "subdone", False, False), None)  # replies at the child's decision
    driver.run(("send", "s0", "done", False, False), None)
    driver.run(("send", "s0", "sublong", False, False), None)
    driver.run(("send", "s0", "sublong", False, False), None)

    driver.call(ev7, "send", REPLY_CLAIMED, None)  # d-7 again: a reply, forwarded to the child; dies there
    child = store.load(CHILD)
    assert "d-7" in child.delivery_ids and any("ev7" in m.content for m in child.messages)
    assert "d-7" not in store.load("s0").delivery_ids  # only the child remembers it
    assert ev7.status == "doubt"

    driver.world.advance(LEASE_TTL_S + 1)
    driver.call(ev7, "deliver", None, None)  # the retry by the first door: the pair applied it
    assert ev7.status == "applied"  # DuplicateDeliveryError, not a refusal
    driver.recover_and_check()  # ev7 once, in the child's transcript; every other invariant


@pytest.mark.parametrize("door", ["send", "deliver", "accept"])
def test_a_reply_the_child_applied_stays_a_duplicate_at_the_caller_after_the_pair_moved_on(
    driver: Any, door: str
) -> None:
    """A reply with an id, then the decision finishes the child and the caller: the id is still the pair's."""
    store = driver.world.raw_store
    driver.run(("send", "s0", "subhuman", True, False), None)
    driver.run(("send", "s0", "done", True, False), None)  # ev2: a reply the child answers
    driver.run(("decide", "s0", "done", "done"), None)
    assert store.load("s0").status.value == "completed" and store.load("s0").delegation is None
    ev2 = driver.ledger.events[2]
    driver.call(ev2, door, None, None)  # the same event again: it was applied once
    assert sum("ev2" in m.content for sid in store.list() for m in store.load(sid).messages) == 1
    assert ev2.status == "applied"
    if door != "accept":  # the inbox answers a duplicate item itself; the direct doors raise
        with pytest.raises(DuplicateDeliveryError):
            driver._door(ev2, door)
    assert "d-2" in store.load("s0").delivery_ids  # adopted from the child when the caller settled
    driver.recover_and_check()


def test_a_reply_the_child_applied_stays_a_duplicate_after_a_new_turn_abandoned_the_call(driver: Any) -> None:
    """A new turn (``invoke``) abandons the caller's call in flight; its child's reply ids stay the caller's."""
    store = driver.world.raw_store
    driver.run(("send", "s0", "subhuman", True, False), None)
    driver.run(("send", "s0", "done", True, False), None)  # ev2: a reply the child answers
    driver.world.agent.invoke("s0", message="A new piece of work. act:done")
    assert store.load("s0").delegation is None
    with pytest.raises(DuplicateDeliveryError):
        driver._door(driver.ledger.events[2], "send")
    assert "d-2" in store.load("s0").delivery_ids  # adopted from the child by the new turn's claim
    driver.recover_and_check()


def test_a_firing_at_a_caller_whose_child_answers_a_reply_waits_for_it(driver: Any) -> None:
    """The inbox keeps the item pending while the child's reply holds its lease, then applies it once."""
    store, inbox = driver.world.raw_store, driver.world.raw_inbox
    for sid in ("s0", "s1", "s2"):
        driver.run(("send", sid, "done", True, False), None)
    driver.run(("send", "s0", "subhuman", False, False), None)
    driver.run(("send", "s0", "subdone", False, False), REPLY_CLAIMED)  # the child's reply claim lands; dies
    child = store.load("s0~work:sub:1")
    assert child.lease is not None and any("ev5" in m.content for m in child.messages)

    driver.run(("send", "s0", "done", False, False), None)  # directly: "not now", and nothing changes
    assert driver.ledger.events[6].status == "refused"
    driver.run(("accept", "s0", "subdone", False, False), None)  # through the inbox: kept for later
    item = inbox.get("s0", driver.ledger.inboxed[-1].delivery_id)
    assert (item.status, item.error) == ("pending", None) and "ev7" in item.firing.message
    driver.recover_and_check()  # the lease runs out, the sweep applies ev7 once; every invariant


def test_replies_that_left_the_childs_window_stay_duplicates_at_the_caller_after_the_pair_moved_on(
    driver: Any,
) -> None:
    """More replies than the window keeps (``DELIVERY_IDS_KEPT``) go to a child parked at its decision.

    The child remembers the oldest as markers only; the caller adopts them too when it settles, so a
    redelivery of the first reply after the pair finished is a duplicate (it was applied a second
    time, in the caller's transcript, when the caller adopted the child's window alone).
    """
    store = driver.world.raw_store
    driver.run(("send", "s0", "subhuman", True, False), None)
    for _ in range(DELIVERY_IDS_KEPT + 2):  # replies at the child's decision, each with its id
        driver.run(("send", "s0", "done", True, False), None)
    child = store.load(store.load("s0").delegation.session_id)
    assert "d-2" not in child.delivery_ids and child.status.value == "awaiting_decision"  # a marker now
    driver.run(("decide", "s0", "done", "done"), None)
    assert store.load("s0").status.value == "completed" and store.load("s0").delegation is None
    ev2 = driver.ledger.events[2]
    with pytest.raises(DuplicateDeliveryError):
        driver._door(ev2, "send")
    assert sum(m.content.startswith("ev2 ") for sid in store.list() for m in store.load(sid).messages) == 1
    driver.recover_and_check()


def test_a_session_deleted_and_started_again_calls_a_new_child_and_forgets_the_old_pairs_ids(driver: Any) -> None:
    store, agent = driver.world.raw_store, driver.world.agent
    driver.run(("send", "s0", "subhuman", True, False), None)
    driver.run(("send", "s0", "done", True, False), None)  # ev2 (d-2): a reply the child answers
    driver.run(("decide", "s0", "done", "done"), None)
    assert agent.sessions.delete("s0")  # the id starts over as a new session (§3.10)
    assert not [sid for sid in store.list() if sid.startswith("s0~")]  # its sub-workflow children went with it

    agent.workflow.send("s0", "New work. act:subhuman", delivery_id="new-1")
    rec = store.load("s0")
    assert rec.status.value == "awaiting_decision"  # its own child parks at its decision, as the first did
    assert "d-2" not in rec.delivery_ids  # the deleted session's pair applied it, not this one
    agent.workflow.send("s0", "A reply. act:done", delivery_id="d-2")  # a new event: applied, no duplicate
