"""Host paths where another workflow's session meets this host's (attack33).

A workflow ``y`` shares the store and inbox with ``x`` (two ``archmax
serve`` on one workspace). Findings not fixed are strict xfails naming what happens instead.

Rule sources: BEHAVIOUR.md §3.3 (a refused firing changes nothing), §5.11 (the oldest-park metric: a
wait nobody answers is seen), DESIGN.md §3 "Inbox".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.hosting.host import Host
from archmax.hosting.inbox import FilesystemInbox, MemoryInbox
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import Firing
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

CHILD = "s~work:b:1"
LOOKS = {"states": {"look": {"triggers": {"manual": None}}}}
ASKING = {"states": {"ask": {"triggers": {"manual": None}}}}
WORKING = {"states": {"work": {"triggers": {"manual": None}}}}
TO_THE_PARK = [
    {"call": {"archmax_workflow_b": {}}},  # s calls b
    {"say": "Which colour?", "call": {"archmax_wait": {"reason": "a colour", "until": "1h"}}},  # b waits
]


@pytest.fixture(params=["memory", "filesystem"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, Any]:
    """One store and one inbox of a kind."""
    if request.param == "memory":
        return MemoryStore(), MemoryInbox()
    return FilesystemStore(tmp_path / "sessions"), FilesystemInbox(tmp_path / "sessions")


def calling(slug: str, callee: str) -> Any:
    doc = {"states": {"work": {"triggers": {"manual": None}, "tools": {"allow": [f"archmax_workflow_{callee}"]}}}}
    return workflow_from_dict(doc, slug)


def host_a(store: Any, inbox: Any, clock: FakeClock, script: list[dict[str, Any]]) -> Host:
    b = workflow_from_dict(LOOKS, "b")
    agent = create_agent(calling("a", "b"), store, ScriptedModel(script), clock=clock, workflows={"b": b})
    return Host(agent, inbox, waker=lambda _sid: None)


# ------------------------------------------------------------------------------------------ x's sweep, y's sessions


class Crashes:
    """A model whose process dies on its first call: the turn stays ``running`` under its lease."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise RuntimeError("the process died")


def test_held_xs_sweep_leaves_ys_due_timer_dead_turn_and_oldest_park_alone(
    shared: tuple[Any, Any], clock: FakeClock
) -> None:
    store, inbox = shared
    waits = [{"say": "Which order?", "call": {"archmax_wait": {"reason": "the order id", "until": "1h"}}}]
    y = create_agent(workflow_from_dict(ASKING, "y"), store, ScriptedModel(waits), clock=clock)
    assert y.workflow.send("parked", "hi").kind == "parked"
    with pytest.raises(RuntimeError):
        create_agent(workflow_from_dict(ASKING, "y"), store, Crashes(), clock=clock).workflow.send("dead", "hi")
    Host(y, inbox, waker=lambda _sid: None).accept(Firing(message="ORD-1", session_id="parked", delivery_id="via-y"))
    clock.advance(days=1)  # y's timer is due and its dead turn's lease expired
    before = {sid: store.load(sid).model_dump_json() for sid in ("parked", "dead")}
    x = Host(create_agent(workflow_from_dict(WORKING, "x"), store, ScriptedModel([]), clock=clock), inbox)
    for _ in range(2):
        report = x.sweep()
        assert (report.due, report.stale, report.oldest_park) == ([], [], None)
        assert [(r.session_id, r.results) for r in report.redriven] == [("parked", ["OtherWorkflowSessionError"])]
    assert inbox.get("parked", "via-y").status == "pending"  # y's own host applies it
    assert {sid: store.load(sid).model_dump_json() for sid in ("parked", "dead")} == before


@pytest.mark.xfail(
    strict=True,
    reason=(
        "attack33: an inbox item names no workflow, and a send to a session that does not exist yet has "
        "no record whose workflow the door could check; so x's sweep, which re-drives every queue of the "
        "shared inbox, applies y's accepted send itself: the session is created as workflow 'x' and y's "
        "event runs under x's states (y's own drain later finds it x's: OtherWorkflowSessionError)"
    ),
)
def test_xs_sweep_does_not_apply_ys_accepted_send_to_a_new_session(shared: tuple[Any, Any], clock: FakeClock) -> None:
    store, inbox = shared
    y = create_agent(workflow_from_dict(ASKING, "y"), store, ScriptedModel([{"say": "y here"}]), clock=clock)
    host_y = Host(y, inbox, waker=lambda _sid: None)  # y's wake did not run (its process stopped after the 202)
    assert host_y.accept(Firing(message="hello", session_id="new-1", delivery_id="d-1")).disposition == "turn"
    x = Host(
        create_agent(workflow_from_dict(WORKING, "x"), store, ScriptedModel([{"say": "x here"}]), clock=clock), inbox
    )
    x.sweep()
    assert store.head("new-1") is None  # still y's to apply
    assert inbox.get("new-1", "d-1").status == "pending"
    assert [getattr(r, "reply", None) for r in host_y.drain("new-1")] == ["y here"]
    assert store.head("new-1").workflow == "y"


@pytest.mark.xfail(
    strict=True,
    reason=(
        "attack33: x accepted a send to a new session, which y then created: x's drain meets "
        "OtherWorkflowSessionError and leaves the item pending for 'its own workflow's host' (_left_pending), "
        "but no other host reads x's inbox, so it stays pending for ever and every sweep of x re-drives it "
        "(before attack32's change it was marked failed). The item names no workflow (the same gap as above)"
    ),
)
def test_an_item_x_accepted_for_a_session_y_then_created_is_settled_not_pending_for_ever(
    shared: tuple[Any, Any], clock: FakeClock
) -> None:
    store, inbox = shared
    x_agent = create_agent(workflow_from_dict(WORKING, "x"), store, ScriptedModel([]), clock=clock)
    x = Host(x_agent, inbox, waker=lambda _sid: None)  # x's wake has not run yet
    assert x.accept(Firing(message="hello", session_id="new-1", delivery_id="d-1")).disposition == "turn"
    y = create_agent(workflow_from_dict(ASKING, "y"), store, ScriptedModel([{"say": "y here"}]), clock=clock)
    assert y.workflow.send("new-1", "first").kind == "completed"  # y got there first, directly
    for _ in range(2):
        x.sweep()
    assert inbox.get("new-1", "d-1").status == "failed"
    assert x.sweep().redriven == []
