"""The harness's own checks catch what they are for, on every store kind (issue 9, issue 22).

* A refused direct call (a typed error, no fault armed) that changed a stored byte fails the schedule:
  ``Driver.call`` compares :meth:`World.snapshot` before and after (§3.5: a refusal changes nothing).
  On AWS the snapshot covers the sessions table's items and the bucket's objects; both are broken here.
* :meth:`World.versions` (the pair driver's "which sessions did this step write") is what the store's
  ``list()`` and ``head()`` say, also on AWS where it is one Scan.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from archmax.errors import SessionNotParkedError
from archmax.hosting.host import Host

from .counters import StoreCounters
from .harness import World
from .invariants import Ledger, Violation
from .schedules import Driver

KINDS = ("memory", "filesystem", "aws")


@pytest.fixture(params=KINDS)
def driver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Driver]:
    """A driver on a fresh world whose three sessions are opened (s0 parked at a decision, s1 waiting)."""
    table = StoreCounters(Counter(), Counter())  # not the soak table: this is no schedule
    world = World(request.param, table, tmp=tmp_path)
    d = Driver(world, Ledger(), table)
    try:
        for sid, act in (("s0", "human"), ("s1", "wait"), ("s2", "done")):
            d.run(("send", sid, act, True, False), None)
        yield d
    finally:
        world.close()


def _writes(world: World) -> dict[str, Callable[[str], Any]]:
    """Ways a broken door could change a stored byte: a spec (every kind); on AWS an item and an object."""
    out: dict[str, Callable[[str], Any]] = {"spec": lambda sid: world.raw_store.put_spec("junk", {"by": sid})}
    if world.kind == "aws":
        env = world.aws
        out["item"] = lambda sid: env.dynamodb.update_item(
            TableName=env.table_name,
            Key={"pk": {"S": sid}},
            UpdateExpression="SET junk = :x",
            ExpressionAttributeValues={":x": {"S": "x"}},
        )
        out["object"] = lambda sid: env.s3.put_object(Bucket=env.bucket, Key=f"{sid}/junk", Body=b"x")
    return out


def test_a_refused_call_that_changes_nothing_passes(driver: Driver) -> None:
    """The control: deciding a session that is not parked at a decision is refused, and no byte moves."""
    driver.run(("decide", "s1", "done", "done"), None)
    refused = list(driver.ledger.events.values())[-1]
    assert refused.status == "refused"


def test_a_refused_call_that_changes_a_byte_fails(driver: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decide door that writes before refusing (every write it could make) is caught by the snapshot."""
    for write in _writes(driver.world).values():

        def broken(host: Host, session_id: str, *_: Any, write: Callable[[str], Any] = write, **__: Any) -> Any:
            write(session_id)
            raise SessionNotParkedError(session_id, "broken on purpose")

        monkeypatch.setattr(Host, "decide_now", broken)
        with pytest.raises(Violation, match="was refused .* but changed stored bytes"):
            driver.run(("decide", "s1", "done", "done"), None)
        monkeypatch.undo()


def test_versions_are_the_list_and_heads(driver: Driver) -> None:
    """After sessions were opened and one moved on, the one-call view agrees with list() and head()."""
    driver.run(("send", "s1", "done", True, False), None)
    store = driver.world.raw_store
    expected = {sid: store.head(sid).version for sid in store.list()}
    assert driver.world.versions() == expected
    assert set(expected) == {"s0", "s1", "s2"}
