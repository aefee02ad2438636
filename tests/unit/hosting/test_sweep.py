"""``archmax.hosting.sweep.sweep``: due parks woken with ``timer`` (BEHAVIOUR.md §11, seed "Waiting for a time")."""

from __future__ import annotations

from datetime import timedelta

import yaml

from archmax import FakeClock, MemoryStore, create_agent
from archmax.hosting.sweep import sweep, sweep_failed
from archmax.models.scripted import ScriptedModel

WORKFLOW = {
    "title": "Poller",
    "states": {
        "poll": {
            "instructions": "Check, then wait a day.",
            "triggers": {"start": {"description": "Begin polling."}},
        }
    },
}
WAIT = {"say": "Not yet.", "call": {"archmax_wait": {"reason": "not posted", "until": "1d"}}}


def _agent(tmp_path, store, clock, entries, on_event=None):
    folder = tmp_path / "workflows" / "poller"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workflow.yaml").write_text(yaml.safe_dump(WORKFLOW), encoding="utf-8")
    return create_agent(folder, store, ScriptedModel(entries), clock=clock, on_event=on_event)


def test_due_park_is_delivered_timer_with_now_and_parks_again(tmp_path, clock: FakeClock):
    store = MemoryStore()
    agent = _agent(tmp_path, store, clock, [WAIT, WAIT])
    agent.workflow.send("p-1", "go", trigger="start")
    clock.advance(timedelta(days=1))
    now = "2025-01-02T00:00:00.000Z"
    assert sweep(agent, now) == [("p-1", "parked")]
    rec = store.load("p-1")
    assert rec.trigger == "timer"
    assert rec.variables["now"].value == now
    assert rec.pending_input.resume_at == "2025-01-03T00:00:00.000Z"


def test_nothing_is_due_before_resume_at(tmp_path, clock: FakeClock):
    agent = _agent(tmp_path, MemoryStore(), clock, [WAIT])
    agent.workflow.send("p-1", "go", trigger="start")
    assert sweep(agent, "2025-01-01T23:59:59.999Z") == []


def test_now_defaults_to_the_agents_clock(tmp_path, clock: FakeClock):
    agent = _agent(tmp_path, MemoryStore(), clock, [WAIT, {"say": "Posted."}])
    agent.workflow.send("p-1", "go", trigger="start")
    assert sweep(agent) == []
    clock.advance(timedelta(days=1))
    assert sweep(agent) == [("p-1", "completed")]


def test_a_session_resumed_elsewhere_during_the_sweep_is_skipped_and_is_not_a_failure(tmp_path, clock: FakeClock):
    store = MemoryStore()
    # p-1 is due first; while the sweep wakes it, a reply resumes p-2 through another agent
    other = _agent(tmp_path, store, clock, [WAIT, {"say": "Thanks for the reply."}])

    def on_event(event: dict) -> None:
        if event["type"] == "delivered" and event["session_id"] == "p-1":
            other.workflow.deliver("p-2", trigger="email_reply", variables={"reply_body": "paid"})

    sweeper = _agent(tmp_path, store, clock, [WAIT, {"say": "Posted."}], on_event=on_event)
    sweeper.workflow.send("p-1", "go", trigger="start")
    clock.advance(minutes=1)
    other.workflow.send("p-2", "go", trigger="start")
    clock.advance(timedelta(days=2))
    results = sweep(sweeper, "2025-01-03T00:00:00.000Z")
    assert results == [("p-1", "completed"), ("p-2", "skipped")]
    assert not sweep_failed(results)
    assert store.load("p-2").trail[-1].reason == "email_reply"  # the sweep's timer never landed on p-2


def test_sweep_failed_counts_failed_rejected_and_errors_but_not_skips():
    assert not sweep_failed([("a", "parked"), ("b", "completed"), ("c", "skipped")])
    assert sweep_failed([("a", "failed")])
    assert sweep_failed([("a", "rejected")])
    assert sweep_failed([("a", "error")])
