"""The sweep finishes turns whose process died when nothing waits in the inbox to re-drive them.

Rule source: DESIGN.md §3 "Inbox" ("A lease whose holder died expires; the sweep re-drives sessions
with expired leases or waiting inbox items") and §4 (timer: "re-drive stale leases and inboxes");
BEHAVIOUR.md §3.12 (takeover of an expired lease). A timer turn is never inboxed, so without this
pass a timer turn that dies stays ``running`` until some other event arrives.

Each "process" is its own Host (its own model) over one shared store and inbox, on memory,
filesystem and AWS (AwsStore + DynamoInbox on moto) hosts. Time moves only through the FakeClock.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from archmax.models.scripted import ScriptedModel
from archmax.session.firing import Firing
from archmax.session.notes import is_runtime_note
from archmax.session.records import SessionStatus

from ._models import GatedModel, ProcessDied, Runner

SID = "AAQk-1"
TO_CLARIFY = {
    "call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}},
    "expect_state": "intake",
}
WAIT_AN_HOUR = {"say": "I'll check back.", "call": {"archmax_wait": {"reason": "a follow-up", "until": "1h"}}}
CLOSING = {"say": "Closing this for now."}


class CrashingModel:
    """A model whose every call raises a plain exception: the timer turn's process dies on its first call."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: Any) -> Any:
        self.calls += 1
        raise RuntimeError("the process died mid-call")


class CountingModel:
    """The real ScriptedModel, counting the calls that reached it."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.script = ScriptedModel(entries)
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request: Any) -> Any:
        with self._lock:
            self.calls += 1
        return self.script.complete(request)


def park_until_due(make_host: Any, clock: Any) -> None:
    """Open the conversation, park it on input for an hour, and let the hour pass."""
    opener = make_host([TO_CLARIFY, WAIT_AN_HOUR])
    opener.accept(Firing(trigger="email_received", message="About my order", variables={"conversation_id": SID}))
    assert opener.agent.sessions.get(SID).status == SessionStatus.AWAITING_INPUT
    clock.advance(hours=1)


def assistant_texts(host: Any) -> list[str]:
    return [m.content for m in host.agent.sessions.messages(SID) if m.role == "assistant" and m.content]


def user_texts(host: Any) -> list[str]:
    return [m.content for m in host.agent.sessions.messages(SID) if m.role == "user" and not is_runtime_note(m)]


def test_a_timer_turn_whose_process_died_is_finished_by_the_first_sweep_after_its_lease_expires(make_host, clock):
    park_until_due(make_host, clock)
    doomed = GatedModel([], die=True)
    dying = Runner(make_host(doomed).sweep)
    dying.start()  # this sweep delivers the timer; its first model call holds the turn, lease live
    assert doomed.entered.wait(timeout=30)
    timer_instant = make_host([]).agent.sessions.get(SID).variables["now"]["value"]

    model = CountingModel([CLOSING])
    survivor = make_host(model)
    live = survivor.sweep()
    assert (live.due, live.redriven, live.stale) == ([], [], [])  # running under a live lease: not touched
    assert model.calls == 0
    assert survivor.agent.sessions.get(SID).status == SessionStatus.RUNNING

    clock.advance(seconds=901)  # the engine's 900 s lease has expired
    report = survivor.sweep()
    assert report.stale == [(SID, "completed")]
    assert report.recovered == [SID]
    assert report.due == [] and report.redriven == []
    session = survivor.agent.sessions.get(SID)
    assert session.status == SessionStatus.COMPLETED
    assert session.variables["now"]["value"] == timer_instant  # the timer's turn, continued, not a new one
    assert assistant_texts(survivor)[-1] == "Closing this for now."
    assert model.calls == 1

    version = survivor.agent.store.head(SID).version
    doomed.open()  # the dead process's call "returns": its late writes must change nothing
    dying.join(timeout=60)
    assert isinstance(dying.raised, ProcessDied)
    assert survivor.agent.store.head(SID).version == version
    assert survivor.agent.sessions.get(SID).status == SessionStatus.COMPLETED


def test_a_timer_turn_whose_model_raised_on_its_first_call_is_finished_by_the_next_sweep(make_host, clock):
    park_until_due(make_host, clock)
    crashing = make_host(CrashingModel())
    with pytest.raises(RuntimeError):
        crashing.sweep()  # the timer invocation dies with its turn half done
    assert crashing.agent.sessions.get(SID).status == SessionStatus.RUNNING

    clock.advance(minutes=1)  # the next scheduled sweep
    model = CountingModel([CLOSING])
    survivor = make_host(model)
    report = survivor.sweep()
    assert report.stale == [(SID, "completed")]
    assert report.due == []  # not parked: the timer is not delivered a second time
    assert survivor.agent.sessions.get(SID).status == SessionStatus.COMPLETED
    assert model.calls == 1
    assert user_texts(survivor) == ["About my order"]  # the recovery adds no event of its own

    again = survivor.sweep()
    assert again.stale == [] and model.calls == 1


def test_two_sweeps_racing_over_a_dead_turn_finish_it_exactly_once(make_host, clock):
    park_until_due(make_host, clock)
    with pytest.raises(RuntimeError):
        make_host(CrashingModel()).sweep()
    clock.advance(minutes=1)

    models = [CountingModel([CLOSING]) for _ in range(2)]
    hosts = [make_host(model) for model in models]
    barrier = threading.Barrier(2)

    def sweep(host: Any) -> Any:
        barrier.wait(timeout=30)
        return host.sweep()

    runners = [Runner(sweep, host) for host in hosts]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join(timeout=120)
    assert [r.raised for r in runners] == [None, None]

    outcomes = sorted(kind for r in runners for _sid, kind in r.result.stale)
    assert outcomes in (["completed"], ["completed", "skipped"])  # the loser saw it live, lost, or done
    assert sum(model.calls for model in models) == 1
    assert sum(len(r.result.recovered) for r in runners) == 1
    assert assistant_texts(hosts[0]).count("Closing this for now.") == 1
    assert hosts[0].agent.sessions.get(SID).status == SessionStatus.COMPLETED


def test_a_recovery_that_fails_again_is_reported_and_retried_by_a_later_sweep(make_host, clock):
    park_until_due(make_host, clock)
    with pytest.raises(RuntimeError):
        make_host(CrashingModel()).sweep()
    clock.advance(minutes=1)

    outage = make_host(ScriptedModel([]))  # a provider with nothing to say: a ModelError
    report = outage.sweep()
    assert report.stale == [(SID, "error")]
    assert report.recovered == []
    assert outage.agent.sessions.get(SID).status == SessionStatus.RUNNING

    clock.advance(minutes=1)
    later = make_host([CLOSING]).sweep()
    assert later.stale == [(SID, "completed")]
