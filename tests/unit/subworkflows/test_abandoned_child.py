"""A new turn of a caller abandons its sub-workflow call: the parked child is closed, not stranded.

Caller ``s`` (workflow ``a``) calls ``b`` from its state ``work``; ``b`` waits (``archmax_wait`` with
``until``), so ``s`` parks through it (§5.10). ``invoke("s")`` opens a new turn (§3.9, §8), which
abandons the call in flight. Before the fix the child ``s~work:b:1`` stayed ``awaiting_input`` for
ever: the oldest-park metric reported it, its timer was still due, and a firing at its id still ran it.
The rule chosen (the contract is silent on the child): the child is closed ``rejected`` right after the
caller's claim, which records the abandoned call; a close that did not land is done at the child's next
touch; every firing at the child's id is refused with ``SubworkflowCallAbandonedError`` and changes
nothing (``archmax.engine.abandon``). Memory and filesystem stores.

Rule source: BEHAVIOUR.md §5.10 (child ids; a firing at a child's id reaches the pair through its
caller), §8 step 5 (a turn opening resets the park records), §3.9 (invoke), §3.1 (``rejected``: the
runtime ended the turn), §5.11 (oldest-park metric, timers name their park), §3.3 (a refusal writes nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax import MemoryStore, SessionNotAwaitingInputError, SessionNotParkedError, create_agent
from archmax.clock import FakeClock
from archmax.engine import turn
from archmax.engine.abandon import abandoned_reason
from archmax.errors import SubworkflowCallAbandonedError
from archmax.hosting.timers import DueTimer, fire
from archmax.models.scripted import ScriptedModel
from archmax.session.records import SessionStatus
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore

from ._chain import calling

T0 = "2025-01-01T00:00:00.000Z"
LATER = "2025-01-01T02:00:00.000Z"
CHILD = "s~work:b:1"
WAITS = {"states": {"look": {"triggers": {"manual": None}}}}
TO_THE_PARK = [
    {"call": {"archmax_workflow_b": {}}},  # s calls b
    {"say": "Which colour?", "call": {"archmax_wait": {"reason": "a colour", "until": "1h"}}},  # b waits
]
SCRIPT = [*TO_THE_PARK, {"say": "New work done."}]  # ... and s's new turn answers


class Built:
    """An agent of workflow ``a`` (calls ``b``) and the events it emitted."""

    def __init__(self, kind: str, tmp_path: Path, script: list[dict[str, Any]]) -> None:
        self.store = MemoryStore() if kind == "memory" else FilesystemStore(tmp_path / "sessions")
        self.events: list[dict[str, Any]] = []
        self.agent = create_agent(
            calling("a", "b"),
            self.store,
            ScriptedModel(script),
            clock=FakeClock(T0),
            workflows={"b": workflow_from_dict(WAITS, "b")},
            on_event=self.events.append,
        )

    def snapshot(self, *ids: str) -> dict[str, str | None]:
        loaded = {sid: self.store.load(sid) for sid in ids}
        return {sid: rec.model_dump_json() if rec else None for sid, rec in loaded.items()}


@pytest.fixture(params=["memory", "filesystem"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _parked(kind: str, tmp_path: Path, script: list[dict[str, Any]] = SCRIPT) -> Built:
    built = Built(kind, tmp_path, script)
    assert built.agent.workflow.send("s", "Go.").kind == "parked"
    assert built.store.load(CHILD).status == SessionStatus.AWAITING_INPUT
    return built


def test_reproduction_a_new_turn_leaves_no_child_awaiting_input(kind: str, tmp_path: Path) -> None:
    built = _parked(kind, tmp_path)
    out = built.agent.invoke("s", message="A new piece of work.")
    assert (out.kind, out.reply) == ("completed", "New work done.")  # the caller's new turn proceeds
    child = built.store.load(CHILD)
    assert child.status == SessionStatus.REJECTED
    assert child.rejected == abandoned_reason("s")
    assert (child.pending_input, child.park_phase, child.lease) == (None, None, None)
    caller = built.store.load("s")
    assert (caller.status, caller.delegation, caller.abandoned_calls) == (SessionStatus.COMPLETED, None, [CHILD])


def test_the_closed_child_records_a_rejection_event_and_both_sessions_warn(kind: str, tmp_path: Path) -> None:
    built = _parked(kind, tmp_path)
    built.agent.invoke("s", message="A new piece of work.")
    child = built.store.load(CHILD)
    assert child.outbox[-1].detail_type == "Session Rejected"
    assert child.outbox[-1].version == child.version
    warned = {(e["session_id"], e["scope"]) for e in built.events if e["type"] == "warning"}
    assert {("s", "park"), (CHILD, "park")} <= warned


def test_the_child_leaves_the_due_listing_and_the_oldest_park_metric(kind: str, tmp_path: Path) -> None:
    built = _parked(kind, tmp_path)
    assert CHILD in [p.session_id for p in built.store.due_parks(LATER)]
    assert built.store.oldest_park("b") is not None
    built.agent.invoke("s", message="A new piece of work.")
    assert built.store.due_parks(LATER) == []
    assert built.store.oldest_park("b") is None


def test_a_timer_due_on_the_child_does_not_resume_it(kind: str, tmp_path: Path) -> None:
    built = _parked(kind, tmp_path)
    listed = next(p for p in built.store.due_parks(LATER) if p.session_id == CHILD)
    built.agent.invoke("s", message="A new piece of work.")
    before = built.snapshot("s", CHILD)
    timer = DueTimer(session_id=CHILD, park_version=listed.version, resume_at=listed.resume_at, now=LATER)
    with pytest.raises(SubworkflowCallAbandonedError) as refused:
        fire(built.agent, timer)
    assert isinstance(refused.value, SessionNotAwaitingInputError)  # a sweep reports it "skipped"
    assert built.snapshot("s", CHILD) == before


@pytest.mark.parametrize(
    "fire_at_child",
    [
        lambda a: a.workflow.send(CHILD, "Blue.", delivery_id="late-1"),
        lambda a: a.workflow.deliver(CHILD, trigger="manual", message="Blue."),
        lambda a: a.workflow.reply(CHILD, "Blue."),
        lambda a: a.workflow.decide(CHILD, to="look"),
    ],
    ids=["send", "deliver", "reply", "decide"],
)
def test_a_firing_at_the_childs_id_is_refused_naming_why_and_changes_nothing(
    kind: str, tmp_path: Path, fire_at_child: Any
) -> None:
    built = _parked(kind, tmp_path)
    built.agent.invoke("s", message="A new piece of work.")
    before = built.snapshot("s", CHILD)
    with pytest.raises(SubworkflowCallAbandonedError) as refused:
        fire_at_child(built.agent)
    err = refused.value
    assert (err.session_id, err.caller_id, err.status) == (CHILD, "s", "rejected")
    assert "abandoned" in str(err) and "'s'" in str(err)
    assert isinstance(err, SessionNotAwaitingInputError) and isinstance(err, SessionNotParkedError)
    assert built.snapshot("s", CHILD) == before


def test_the_caller_calls_again_after_the_abandoned_call(kind: str, tmp_path: Path) -> None:
    script = [*TO_THE_PARK, {"say": "New work done."}, *TO_THE_PARK]
    built = _parked(kind, tmp_path, script)
    built.agent.invoke("s", message="A new piece of work.")
    assert built.agent.workflow.send("s", "Again.").kind == "parked"  # a finished caller: a new turn, a new call
    caller = built.store.load("s")
    assert caller.delegation.session_id == "s~work:b:2"
    assert built.store.load("s~work:b:2").status == SessionStatus.AWAITING_INPUT
    assert built.store.load(CHILD).status == SessionStatus.REJECTED


def test_a_close_that_did_not_land_is_done_at_the_childs_next_touch(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _parked(kind, tmp_path)
    monkeypatch.setattr(turn, "close_abandoned", lambda *args: [])  # the process stopped after the caller's claim
    built.agent.invoke("s", message="A new piece of work.")
    assert built.store.load(CHILD).status == SessionStatus.AWAITING_INPUT
    assert built.store.load("s").abandoned_calls == [CHILD]  # the caller's claim is the pair's commit point
    caller_before = built.snapshot("s")
    with pytest.raises(SubworkflowCallAbandonedError):
        built.agent.workflow.deliver(CHILD, trigger="manual", message="Blue.")
    child = built.store.load(CHILD)
    assert (child.status, child.rejected) == (SessionStatus.REJECTED, abandoned_reason("s"))
    assert not [m for m in child.messages if m.role == "user" and m.content == "Blue."]
    assert built.snapshot("s") == caller_before


def test_a_sweeps_recovery_of_an_abandoned_childs_dead_turn_closes_it_and_continues_nothing(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _parked(kind, tmp_path)
    dead = built.store.load(CHILD)  # as if the child's turn had died holding a lease that has lapsed since
    dead.status, dead.version = SessionStatus.RUNNING, dead.version + 1
    built.store.commit(CHILD, dead, dead.version - 1)
    monkeypatch.setattr(turn, "close_abandoned", lambda *args: [])  # the caller's close did not land
    built.agent.invoke("s", message="A new piece of work.")
    assert built.agent.workflow.recover(CHILD) is None  # no turn continued: a sweep reports it skipped
    child = built.store.load(CHILD)
    assert (child.status, child.rejected) == (SessionStatus.REJECTED, abandoned_reason("s"))
