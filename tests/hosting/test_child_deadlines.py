"""A child's deadline is its caller's: the caller's sweep fires ``timeout`` into the pair (§5.10, §5.11).

Rule source: BEHAVIOUR.md §5.10 ("A child that parks makes the caller park"; "a firing addressed to
a child's id reaches the pair through its caller") and §5.11 ("When it passes before any delivery,
the sweep fires the trigger ``timeout`` into the park"), issue 21 item 7. A child runs another
workflow, so only its caller is in the index the caller's sweep reads (``due_parks(workflow=...)``):
the caller's mirrored park carries the child's deadline (``timeout``/``timeout_at``, hence the
head's ``resume_at``), and the timeout the sweep fires at the caller reaches the child through the
pair. The child then continues (a wait) or takes its ``on_timeout`` edge (a human state), and the
caller resumes when the child finishes. Run on memory, filesystem and AWS (moto).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from archmax import MemoryStore, SessionStatus, create_agent
from archmax.clock import FakeClock, format_instant
from archmax.hosting.sweep import sweep
from archmax.models.scripted import ScriptedModel
from archmax.session.notes import is_runtime_note
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore

from .conftest import moto_env

T0 = "2025-01-01T00:00:00.000Z"
CALLER, CHILD = "p1", "p1~work:check:1"
DESK = workflow_from_dict(
    {
        "states": {
            "work": {
                "triggers": {"manual": None},
                "tools": {"allow": ["archmax_workflow_check"]},
                "transitions": [{"to": "done", "description": "Answered."}],
            },
            "done": None,
        }
    },
    "desk",
)
CHECK = workflow_from_dict(
    {
        "states": {
            "look": {
                "triggers": {"manual": None},
                "transitions": [{"to": "review", "description": "A person checks it."}],
            },
            "review": {
                "type": "human",
                "timeout": "1d",
                "transitions": [
                    {"to": "approved", "description": "Approved."},
                    {"to": "escalated", "description": "Nobody answered.", "on_timeout": True},
                ],
            },
            "approved": None,
            "escalated": None,
        }
    },
    "check",
)
CALL = {"call": {"archmax_workflow_check": {}}}
CALLER_DONE = {"say": "Caller done."}


@pytest.fixture(params=["memory", "filesystem", "aws"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "filesystem":
        return FilesystemStore(tmp_path / "sessions")
    request.getfixturevalue("hosting_moto_server")
    return moto_env().fresh_env().store()


def _agent(store: Any, entries: list[dict[str, Any]], clock: FakeClock) -> Any:
    return create_agent(DESK, store, ScriptedModel(entries), clock=clock, workflows={"check": CHECK})


def _notes(agent: Any, sid: str) -> list[str]:
    return [m.content for m in agent.sessions.messages(sid) if is_runtime_note(m)]


def test_a_childs_wait_deadline_is_fired_by_its_callers_sweep_and_the_caller_resumes(store: Any) -> None:
    clock = FakeClock(T0)
    wait = {"say": "Waiting for the stock.", "call": {"archmax_wait": {"reason": "the stock", "timeout": "2h"}}}
    agent = _agent(store, [CALL, wait, {"say": "No stock came; giving up."}, CALLER_DONE], clock)

    parked = agent.workflow.send(CALLER, "Check the stock.")
    assert parked.kind == "parked" and store.load(CHILD).pending_input.timeout_at == "2025-01-01T02:00:00.000Z"
    caller = store.load(CALLER)
    assert caller.pending_input.timeout == "2h" and caller.pending_input.timeout_at == "2025-01-01T02:00:00.000Z"
    assert store.head(CALLER).resume_at == "2025-01-01T02:00:00.000Z"  # what due_parks keys on
    assert parked.pending.timeout_at == "2025-01-01T02:00:00.000Z"  # the caller's Outcome shows it
    assert agent.sessions.get(CALLER).timeout_at == "2025-01-01T02:00:00.000Z"  # and its summary

    clock.advance(timedelta(hours=1, minutes=59))
    assert sweep(agent) == []
    clock.advance(timedelta(minutes=1))
    assert [p.session_id for p in store.due_parks(format_instant(clock.now()), workflow="desk")] == [CALLER]

    assert sweep(agent) == [(CALLER, "completed")]

    child = store.load(CHILD)
    assert child.status == SessionStatus.COMPLETED and child.trigger == "timeout"
    assert any("'timeout' arrived" in note for note in _notes(agent, CHILD))
    final = store.load(CALLER)
    assert final.status == SessionStatus.COMPLETED and final.delegation is None
    assert any(note.startswith("[sub-workflow: check] No stock came") for note in _notes(agent, CALLER))
    assert sweep(agent) == []


def test_a_childs_human_state_deadline_takes_its_on_timeout_edge_through_the_callers_sweep(store: Any) -> None:
    clock = FakeClock(T0)
    to_review = {"call": {"archmax_advance": {"to": "review", "reason": "needs a person"}}}
    entries = [CALL, to_review, {"say": "Please review."}, {"say": "Escalated to the manager."}, CALLER_DONE]
    agent = _agent(store, entries, clock)

    parked = agent.workflow.send(CALLER, "Check the refund.")
    assert parked.kind == "parked" and parked.delegation["session_id"] == CHILD
    caller = store.load(CALLER)
    assert caller.status == SessionStatus.AWAITING_DECISION
    assert caller.pending_decision.timeout_at == store.load(CHILD).pending_decision.timeout_at
    assert caller.pending_decision.timeout_at == "2025-01-02T00:00:00.000Z"
    assert store.head(CALLER).resume_at == "2025-01-02T00:00:00.000Z"
    assert parked.pending.timeout_at == "2025-01-02T00:00:00.000Z"
    assert agent.sessions.get(CALLER).timeout_at == "2025-01-02T00:00:00.000Z"

    clock.advance(timedelta(hours=23))
    assert sweep(agent) == []
    clock.advance(timedelta(hours=1))
    assert sweep(agent) == [(CALLER, "completed")]

    child = store.load(CHILD)
    assert child.status == SessionStatus.COMPLETED and child.position == "escalated"
    assert child.trail[-1].reason == "timeout"
    final = store.load(CALLER)
    assert final.status == SessionStatus.COMPLETED and final.position == "work"  # the caller stays in its state
    assert any(note.startswith("[sub-workflow: check] Escalated") for note in _notes(agent, CALLER))


def test_a_decision_before_the_childs_deadline_wins_and_the_sweep_then_fires_nothing(store: Any) -> None:
    clock = FakeClock(T0)
    to_review = {"call": {"archmax_advance": {"to": "review", "reason": "needs a person"}}}
    entries = [CALL, to_review, {"say": "Please review."}, {"say": "Approved."}, CALLER_DONE]
    agent = _agent(store, entries, clock)
    agent.workflow.send(CALLER, "Check the refund.")
    clock.advance(timedelta(hours=2))
    assert agent.workflow.decide(CALLER, to="approved").kind == "completed"
    clock.advance(timedelta(days=2))
    assert sweep(agent) == []
    assert store.load(CHILD).position == "approved"


def test_a_firing_at_the_child_naming_the_childs_current_park_is_applied_through_its_caller(store: Any) -> None:
    """The child's summary shows its own ``park_id``; a delivery to the child naming it answers the pair's park.

    §5.10: a firing addressed to a child's id is applied as if sent to its caller; §5.11: only a park
    that is no longer current is refused. The child's park is current, so naming it is no stale park.
    """
    clock = FakeClock(T0)
    wait = {"say": "Waiting for the stock.", "call": {"archmax_wait": {"reason": "the stock"}}}
    agent = _agent(store, [CALL, wait, {"say": "Stock came."}, CALLER_DONE], clock)
    agent.workflow.send(CALLER, "Check the stock.")
    child_park = agent.sessions.get(CHILD).park_id
    assert child_park is not None and child_park != agent.sessions.get(CALLER).park_id

    assert agent.workflow.deliver(CHILD, trigger="stock", park_id=child_park).kind == "completed"
    assert store.load(CHILD).status == SessionStatus.COMPLETED
    assert store.load(CALLER).status == SessionStatus.COMPLETED


def test_a_decision_at_the_child_naming_an_earlier_child_park_is_refused_and_the_current_one_applied(
    store: Any,
) -> None:
    from archmax.errors import SessionNotParkedError, SessionStateError

    clock = FakeClock(T0)
    to_review = {"call": {"archmax_advance": {"to": "review", "reason": "needs a person"}}}
    entries = [CALL, to_review, {"say": "Please review."}, {"say": "Approved."}, CALLER_DONE]
    agent = _agent(store, entries, clock)
    agent.workflow.send(CALLER, "Check the refund.")
    current = agent.sessions.get(CHILD).park_id
    assert current is not None
    stale = f"{CHILD}@v1"
    assert stale != current
    before = store.load(CALLER).version
    with pytest.raises((SessionNotParkedError, SessionStateError)):
        agent.workflow.decide(CHILD, to="approved", park_id=stale)
    assert store.load(CALLER).version == before
    assert agent.workflow.decide(CHILD, to="approved", park_id=current).kind == "completed"
    assert store.load(CHILD).position == "approved"
