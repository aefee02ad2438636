"""Issue 22: a child whose lease commit fails in doubt must not leave its caller unleased.

Found by the randomized pair schedules (memory, then reproduced on filesystem): ``('sweep',) left ['s0']
running without a live lease``. Caller ``s0`` calls a child that finishes within the call; the child's
first write (its claim) applies but its answer is lost (``error-after``). The error runs up through
the caller, which used to let its own lease go at once while the child kept the lease its applied
claim wrote: the pair was half leased, and a sweep could take over neither until the child's lease
ran out, leaving the caller ``running`` with nobody on it. Now the caller keeps its lease too, the
pair's leases run out together, and the sweep then recovers both (as after a crash).

Rule source: BEHAVIOUR.md §3.12 (leases, takeover) and §5.10; issue 22's pair invariant "no session
left running without a lease".
"""

from __future__ import annotations

from typing import Any

import pytest

from reliability.harness import Fault
from reliability.regress_env import *  # noqa: F403 - the moto server fixture
from reliability.regress_env import pair_driver

CHILD_CLAIM = {"memory": 5, "filesystem": 5, "aws": 4}
"""The store write that is the child's claim in the found schedule (AWS writes once fewer per turn)."""


@pytest.fixture(params=sorted(CHILD_CLAIM))
def driver(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    with pair_driver(request.param, request, tmp_path) as driver:
        yield driver, CHILD_CLAIM[request.param]


def test_a_child_claim_lost_in_doubt_leaves_the_caller_leased_and_the_sweep_recovers_the_pair(driver: Any) -> None:
    driver, at = driver
    for sid in ("s0", "s1", "s2"):
        driver.run(("send", sid, "done", True, False), None)
    driver.run(("accept", "s0", "subdone", False, False), Fault("error-after", at))
    store = driver.world.raw_store
    caller, child = store.load("s0"), store.load("s0~work:sub:1")
    assert child is not None and child.lease is not None  # the child's claim applied: it is leased
    assert caller.delegation is not None and caller.lease is not None  # and so is its caller, not let go
    driver.run(("sweep",), None)  # checks: nobody running without a live lease
    driver.recover_and_check()  # once the leases ran out the sweep recovers the pair: every invariant
    assert store.load("s0").status.value == "completed" == store.load("s0~work:sub:1").status.value
