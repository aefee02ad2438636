"""Issue 22: the pair schedule that applied a retried firing at a child's id twice, replayed step by step.

Found by the randomized pair schedules on the memory store: ``event ev13 (send, delivery id 'd-13') on
s0~work:sub:7 was accepted but applied 2 times``. Caller ``s0``'s seventh child call fails at the
child's first write (``error-before``): ``s0`` is left ``running`` with its lease let go and its call
naming ``s0~work:sub:7``, a child that was never written. ``ev13`` is sent to that id: the caller
takes it (it takes over the dead turn and finishes with the event), then the process dies before it
answers. After ``s0`` calls another child, recovery retries ``ev13`` with its delivery id: the retry
must be the caller's duplicate, not a new session ``s0~work:sub:7`` holding ``ev13`` again. Every
store kind; the unit tests of the rule are ``tests/unit/subworkflows/test_child_retry.py``.

Rule source: BEHAVIOUR.md §5.10, §3.12; README "promises" (a firing with a delivery id is applied once).
"""

from __future__ import annotations

from typing import Any

import pytest

from reliability.harness import Fault
from reliability.regress_env import *  # noqa: F403 - the moto server fixture
from reliability.regress_env import pair_driver
from reliability.schedules import LEASE_TTL_S

SUBDONE = "subdone"


WRITES = {
    "memory": (Fault("error-before", 5), Fault("crash-before", 5)),
    "filesystem": (Fault("error-before", 5), Fault("crash-before", 5)),
    "aws": (Fault("error-before", 4), Fault("crash-after", 2)),
}
"""Per store kind: the faults of the found schedule — at the child's first write of the seventh call, and
in ``ev13``'s firing after the caller's last commit, before the answer (on AWS the stream sends the
outbox, not the firing's process, and the store writes once fewer per turn)."""


@pytest.fixture(params=sorted(WRITES))
def driver(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    with pair_driver(request.param, request, tmp_path) as driver:
        yield driver, WRITES[request.param]


def test_a_retried_firing_at_a_child_id_the_caller_applied_is_applied_once(driver: Any) -> None:
    driver, (at_child, after_caller) = driver
    for sid in ("s0", "s1", "s2"):
        driver.run(("send", sid, "done", True, False), None)
    driver.run(("send", "s0", SUBDONE, True, False), None)
    driver.run(("send", "s2", SUBDONE, True, False), None)
    for _ in range(5):
        driver.run(("send", "s0", SUBDONE, False, False), None)
    driver.run(("accept", "s0", SUBDONE, True, False), at_child)  # the child's first write
    driver.run(("send", "s1", SUBDONE, False, False), None)
    store = driver.world.raw_store
    assert store.load("s0").delegation.session_id == "s0~work:sub:7" and store.load("s0~work:sub:7") is None

    # the failed call keeps the pair's leases until they run out (test_regress_22_child_error.py): after
    # that, ev13 at the child's id takes the caller's dead turn over, as when this schedule was found
    driver.world.advance(LEASE_TTL_S + 1)
    driver.run(("child", "send", "s0", "done", True), after_caller)  # ev13 at the child's id
    driver.run(("send", "s0", SUBDONE, False, False), None)

    ev13 = driver.ledger.events[13]
    assert (ev13.session_id, ev13.delivery_id, ev13.status) == ("s0~work:sub:7", "d-13", "doubt")
    assert any("ev13" in m.content for m in store.load("s0").messages)  # the caller took it, then died
    driver.recover_and_check()  # the retry of d-13 is the caller's duplicate: exactly once
    assert store.load("s0~work:sub:7") is None
