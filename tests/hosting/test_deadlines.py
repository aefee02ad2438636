"""Every wait can end (BEHAVIOUR.md §5.11, issue 21 item 7): ``archmax_wait``'s and a human state's ``timeout``.

When the deadline passes before any delivery, the sweep fires the trigger ``timeout`` into the park:
an input park continues with an ``[event]`` note naming it; a human state takes its ``on_timeout``
edge, or without one the turn fails with ``wait timed out after <duration>``. ``until`` and
``timeout`` together: whichever comes first wakes the session, and the trigger names which. Run on
every store (memory, filesystem, AWS on moto): the due listing carries deadlines too.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from archmax import MemoryStore, SessionNotParkedError, SessionStatus, create_agent
from archmax.clock import FakeClock, format_instant
from archmax.hosting.sweep import sweep
from archmax.hosting.timers import LOST_RACE, DueTimer, fire
from archmax.models.scripted import ScriptedModel
from archmax.session.notes import is_runtime_note
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore

from .conftest import moto_env

T0 = "2025-01-01T00:00:00.000Z"
WAITING = workflow_from_dict({"states": {"work": {"triggers": {"manual": None}}}}, "waiting")


def _human(on_timeout: bool, on_error: str | None = None) -> Any:
    review: dict[str, Any] = {
        "type": "human",
        "timeout": "1d",
        "transitions": [
            {"to": "approved", "description": "Approved."},
            {
                "to": "escalated",
                "description": "Nobody answered in time.",
                **({"on_timeout": True} if on_timeout else {}),
            },
        ],
    }
    if on_error:
        review["on_error"] = on_error
    doc = {
        "states": {
            "start": {"triggers": {"manual": None}, "transitions": [{"to": "review", "description": "Ready."}]},
            "review": review,
            "approved": None,
            "escalated": None,
        }
    }
    return workflow_from_dict(doc, "review")


TO_REVIEW = [{"call": {"archmax_advance": {"to": "review", "reason": "ready"}}}, {"say": "Please review."}]


@pytest.fixture(params=["memory", "filesystem", "aws"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "filesystem":
        return FilesystemStore(tmp_path / "sessions")
    request.getfixturevalue("hosting_moto_server")
    return moto_env().fresh_env().store()


def _agent(store: Any, workflow: Any, entries: list[dict[str, Any]], clock: FakeClock) -> Any:
    return create_agent(workflow, store, ScriptedModel(entries), clock=clock)


def _wait(**args: Any) -> dict[str, Any]:
    return {"say": "Waiting for the payment.", "call": {"archmax_wait": {"reason": "the payment", **args}}}


def _notes(agent: Any, sid: str) -> list[str]:
    return [m.content for m in agent.sessions.messages(sid) if is_runtime_note(m) and m.role == "tool"]


def test_a_wait_nobody_answers_continues_with_the_trigger_timeout_at_its_deadline(store: Any) -> None:
    clock = FakeClock(T0)
    agent = _agent(store, WAITING, [_wait(timeout="2h"), {"say": "No payment came; closing."}], clock)
    parked = agent.workflow.send("s1", "Collect the payment.")
    assert parked.pending.timeout == "2h" and parked.pending.timeout_at == "2025-01-01T02:00:00.000Z"
    clock.advance(timedelta(hours=1, minutes=59))
    assert sweep(agent) == []  # not yet
    clock.advance(timedelta(minutes=1))
    assert sweep(agent) == [("s1", "completed")]
    rec = store.load("s1")
    assert rec.trigger == "timeout" and rec.trail[-1].reason == "timeout"
    assert any("'timeout' arrived" in note and '"2h"' in note for note in _notes(agent, "s1"))


def test_a_delivery_before_the_deadline_is_applied_and_the_deadline_then_fires_nothing(store: Any) -> None:
    clock = FakeClock(T0)
    agent = _agent(store, WAITING, [_wait(timeout="2h"), {"say": "Paid, thanks."}], clock)
    agent.workflow.send("s1", "Collect the payment.")
    clock.advance(timedelta(hours=1))
    out = agent.workflow.deliver("s1", trigger="payment", variables={"amount": 40})
    assert out.kind == "completed"
    clock.advance(timedelta(hours=2))
    assert sweep(agent) == []
    assert store.load("s1").trigger == "payment"


@pytest.mark.parametrize(
    ("until", "timeout", "after", "trigger"),
    [("1h", "2h", timedelta(hours=1), "timer"), ("3h", "2h", timedelta(hours=2), "timeout")],
    ids=["until-first", "timeout-first"],
)
def test_until_and_timeout_together_whichever_comes_first_wakes_and_the_trigger_names_it(
    store: Any, until: str, timeout: str, after: timedelta, trigger: str
) -> None:
    clock = FakeClock(T0)
    agent = _agent(store, WAITING, [_wait(until=until, timeout=timeout), {"say": "Woken."}], clock)
    agent.workflow.send("s1", "Collect the payment.")
    clock.advance(after - timedelta(milliseconds=1))
    assert sweep(agent) == []
    clock.advance(timedelta(milliseconds=1))
    assert sweep(agent) == [("s1", "completed")]
    assert store.load("s1").trigger == trigger


@pytest.mark.parametrize("value", ["1.5h", "2025-03-01", "0s", "3 d", 5])
def test_a_malformed_wait_timeout_is_refused_and_nothing_parks(value: Any) -> None:
    clock = FakeClock(T0)
    agent = _agent(MemoryStore(), WAITING, [_wait(timeout=value), {"say": "Understood."}], clock)
    out = agent.workflow.send("s1", "Collect the payment.")
    assert out.kind == "completed"
    [refusal] = [m.content for m in out.messages if m.role == "tool" and m.name == "archmax_wait"]
    assert refusal.startswith("archmax_wait rejected: 'timeout' value ")
    assert refusal.endswith("Expected a duration such as 30m, 2h or 1d (units ms, s, m, h, d).")


def test_a_human_state_nobody_decides_takes_its_on_timeout_edge_at_the_deadline(store: Any) -> None:
    clock = FakeClock(T0)
    agent = _agent(store, _human(on_timeout=True), [*TO_REVIEW, {"say": "Escalated to the manager."}], clock)
    parked = agent.workflow.send("s1", "Refund please")
    assert parked.pending.timeout_at == "2025-01-02T00:00:00.000Z"
    clock.advance(timedelta(hours=23))
    assert sweep(agent) == []
    clock.advance(timedelta(hours=1))
    assert sweep(agent) == [("s1", "completed")]
    rec = store.load("s1")
    assert rec.position == "escalated" and rec.trail[-1].reason == "timeout" and rec.trigger == "timeout"
    with pytest.raises(SessionNotParkedError):  # the person's late decision lands on nothing
        agent.workflow.decide("s1", to="approved")


def test_a_human_state_without_an_on_timeout_edge_fails_the_turn_when_it_times_out(store: Any) -> None:
    clock = FakeClock(T0)
    agent = _agent(store, _human(on_timeout=False), TO_REVIEW, clock)
    agent.workflow.send("s1", "Refund please")
    clock.advance(timedelta(days=1))
    assert sweep(agent) == [("s1", "rejected")]
    rec = store.load("s1")
    assert rec.status == SessionStatus.REJECTED and rec.rejected == "wait timed out after 1d"


def test_a_human_state_timing_out_routes_by_on_error_when_it_has_one(store: Any) -> None:
    clock = FakeClock(T0)
    agent = _agent(store, _human(on_timeout=False, on_error="escalated"), [*TO_REVIEW, {"say": "Escalated."}], clock)
    agent.workflow.send("s1", "Refund please")
    clock.advance(timedelta(days=1))
    assert sweep(agent) == [("s1", "completed")]
    assert store.load("s1").position == "escalated"


def test_a_person_deciding_before_the_deadline_wins_and_the_sweep_then_does_nothing(store: Any) -> None:
    clock = FakeClock(T0)
    agent = _agent(store, _human(on_timeout=True), [*TO_REVIEW, {"say": "Refund sent."}], clock)
    agent.workflow.send("s1", "Refund please")
    clock.advance(timedelta(hours=2))
    assert agent.workflow.decide("s1", to="approved").kind == "completed"
    clock.advance(timedelta(days=2))
    assert sweep(agent) == []
    assert store.load("s1").position == "approved"


def test_a_timer_listed_before_a_persons_reply_still_fires_the_same_park(store: Any) -> None:
    """A reply keeps the park (§3.6: same record), so the timer the sweep listed before it still names it (§5.11)."""
    clock = FakeClock(T0)
    script = [*TO_REVIEW, {"say": "The manager will look at it."}, {"say": "Escalated to the manager."}]
    agent = _agent(store, _human(on_timeout=True), script, clock)
    agent.workflow.send("s1", "Refund please")
    clock.advance(timedelta(days=1))
    now = format_instant(clock.now())
    (listed,) = store.due_parks(now)  # the sweep hands this to the timer queue ...
    timer = DueTimer(session_id="s1", park_version=listed.version, resume_at=listed.resume_at, now=now)
    assert agent.workflow.reply("s1", "Any news?").kind == "parked"  # ... and a person writes meanwhile
    assert store.load("s1").version > listed.version

    assert fire(agent, timer).kind == "completed"  # the worker fires it: the same park, not a stale one
    rec = store.load("s1")
    assert rec.position == "escalated" and rec.trigger == "timeout"
    with pytest.raises(LOST_RACE):  # the same timer again (a duplicate message) changes nothing
        fire(agent, timer)
    assert store.load("s1").version == rec.version


PAYMENT_AT_1H = _wait(until="2025-01-01T01:00:00.000Z")
PAYMENT_AT_5H = _wait(until="2025-01-01T05:00:00.000Z")


def _listed_timer(store: Any, clock: FakeClock) -> DueTimer:
    now = format_instant(clock.now())
    (listed,) = store.due_parks(now)
    return DueTimer(session_id=listed.session_id, park_version=listed.version, resume_at=listed.resume_at, now=now)


def test_a_timer_listed_before_its_park_was_resumed_and_parked_again_is_refused(store: Any) -> None:
    """A new wait at the same state is a new park (§5.11): the old park's timer changes nothing."""
    clock = FakeClock(T0)
    agent = _agent(store, WAITING, [PAYMENT_AT_1H, PAYMENT_AT_5H], clock)
    agent.workflow.send("s1", "Collect the payment.")
    clock.advance(timedelta(hours=1))
    timer = _listed_timer(store, clock)
    assert agent.workflow.deliver("s1", trigger="payment", message="Half of it came.").kind == "parked"
    before = store.load("s1")
    with pytest.raises(LOST_RACE):
        fire(agent, timer)
    assert store.load("s1") == before


def test_a_timer_listed_before_its_session_was_deleted_and_started_again_is_refused(store: Any) -> None:
    """The id started over (§3.10) parks at the listed version again: the version alone cannot tell the parks apart.

    The timer also carries the listed park's wake instant; the new park wakes at its own (it was woken
    four hours early, with the deleted session's timer).
    """
    clock = FakeClock(T0)
    agent = _agent(store, WAITING, [PAYMENT_AT_1H, PAYMENT_AT_5H], clock)
    agent.workflow.send("s1", "Collect the payment.")
    clock.advance(timedelta(hours=1))
    timer = _listed_timer(store, clock)
    assert agent.sessions.delete("s1")
    agent.workflow.send("s1", "Collect another payment.")
    before = store.load("s1")
    assert before.pending_input.parked_version == timer.park_version  # the same number, another park
    with pytest.raises(LOST_RACE):
        fire(agent, timer)
    assert store.load("s1") == before
