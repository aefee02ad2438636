"""Adversarial: real threads racing the inbox, the drain lease and the park on AwsStore + DynamoInbox (moto server).

Every test checks the same four things at the end: exactly once (each distinct event reaches the
transcript once), in order (the inbox's arrival numbers), nothing lost (no item left pending), and
nothing applied twice (duplicates are reported as such and change nothing).

Rule sources: DESIGN.md §3 "Inbox" (keyed by delivery id so a duplicate is a no-op; the lease
holder drains in order and lets go only when nothing new arrived), issue 4 "Done when" (20
emails to one running session, each handled once, in order), BEHAVIOUR.md §3.5 (racing deliveries:
exactly one proceeds), §3.12 (a lease that expired is taken over; the old holder's late commit is
refused).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from archmax.clock import FakeClock
from archmax.errors import DuplicateDeliveryError, SessionNotAwaitingInputError
from archmax.session.firing import Firing
from archmax.session.notes import is_runtime_note

from ._aws_env import Deployment, GatedModel, Runner, body, event, fresh_aws, moto_env

SID = "AAQk-1"
TO_CLARIFY = {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}, "expect_state": "intake"}
ASK = {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}}


def ack(n: int) -> dict[str, Any]:
    return {"say": f"ack {n}", "call": {"archmax_wait": {"reason": "more mail"}}, "expect_state": "clarify"}


@pytest.fixture(scope="module")
def _server() -> Any:
    yield moto_env().server()


@pytest.fixture
def deploy(_server: Any, clock: FakeClock) -> Any:
    env = fresh_aws()
    return lambda model: Deployment(env, clock, model)


def user_texts(d: Deployment) -> list[str]:
    return [m.content for m in d.agent.sessions.messages(SID) if m.role == "user" and not is_runtime_note(m)]


def webhook(text: str, key: str) -> dict[str, Any]:
    evt = event("apigw_send_message.json")
    evt["headers"]["idempotency-key"] = key
    evt["body"] = json.dumps({"message": text, "trigger": "email_received", "variables": {"conversation_id": SID}})
    return evt


def email(text: str, delivery_id: str) -> Firing:
    return Firing(trigger="email_received", message=text, variables={"conversation_id": SID}, delivery_id=delivery_id)


def run_all(runners: list[Runner]) -> None:
    for t in runners:
        t.start()
    for t in runners:
        t.join(timeout=180)
    assert not any(t.is_alive() for t in runners)


def test_twenty_webhooks_with_distinct_and_duplicate_keys_to_a_running_session_apply_each_key_once_in_order(
    deploy: Any,
) -> None:
    model = GatedModel([TO_CLARIFY, ASK] + [ack(n) for n in range(10)])
    d = deploy(model)
    first = Runner(d.call, "send", webhook("First", "k-first"))
    first.start()
    assert model.entered.wait(timeout=60)  # the first turn runs, holding both leases

    barrier = threading.Barrier(20)

    def post(n: int) -> dict[str, Any]:
        barrier.wait(timeout=60)
        return d.call("send", webhook(f"Email {n % 10}", f"k-{n % 10}"))  # every key sent twice

    racers = [Runner(post, n) for n in range(20)]
    run_all(racers)
    assert [t.raised for t in racers] == [None] * 20
    answers = [body(t.result) for t in racers]
    assert {t.result["statusCode"] for t in racers} == {202}
    fresh = sorted(a["delivery_id"] for a in answers if not a["duplicate"])
    assert fresh == sorted(f"k-{n}" for n in range(10))  # of each pair exactly one was new
    assert sum(a["duplicate"] for a in answers) == 10

    model.open()
    first.join(timeout=180)
    assert first.raised is None and first.result["statusCode"] == 202
    order = sorted(range(10), key=lambda n: d.inbox.get(SID, f"k-{n}").seq)
    assert user_texts(d) == ["First"] + [f"Email {n}" for n in order]  # each once, in arrival order
    assert d.inbox.pending(SID) == [] and d.inbox.sessions_with_pending() == []
    assert d.agent.sessions.get(SID).status == "awaiting_input"


@pytest.mark.parametrize("other", ["drain", "sweep"])
def test_a_drain_racing_another_drain_or_a_sweep_applies_every_waiting_item_once_in_order(
    deploy: Any, other: str
) -> None:
    d = deploy([TO_CLARIFY, ASK] + [ack(n) for n in range(8)])
    d.host._waker = lambda session_id: None  # items wait, as when the async self-invoke has not run yet
    for n in range(8):
        d.host.accept(email(f"Email {n}", f"ses-{n}"))
    assert len(d.inbox.pending(SID)) == 8

    barrier = threading.Barrier(2)

    def go(what: str) -> Any:
        barrier.wait(timeout=60)
        return d.host.drain(SID) if what == "drain" else d.host.sweep()

    racers = [Runner(go, "drain"), Runner(go, other)]
    run_all(racers)
    assert [t.raised for t in racers] == [None, None]
    assert user_texts(d) == [f"Email {n}" for n in range(8)]
    assert d.inbox.pending(SID) == []
    assert all(d.inbox.get(SID, f"ses-{n}").status == "done" for n in range(8))


def test_a_drain_whose_lease_expires_mid_turn_is_taken_over_and_its_late_write_changes_nothing(
    deploy: Any, clock: FakeClock
) -> None:
    model = GatedModel([TO_CLARIFY, ASK, ack(1)])
    d = deploy(model)
    slow = Runner(d.host.accept, email("First", "ses-0"))  # drains inline, then is held in its first model call
    slow.start()
    assert model.entered.wait(timeout=60)
    d.host._waker = lambda session_id: None
    d.host.accept(email("Second", "ses-1"))

    clock.advance(seconds=901)  # both the drain lease and the engine lease have expired
    taken = d.host.drain(SID)  # another drainer takes both over and finishes the work
    assert [getattr(r, "kind", type(r).__name__) for r in taken] == ["parked", "parked"]
    assert taken[0].recovered is True
    version = d.store.head(SID).version
    texts = user_texts(d)

    model.open()  # the slow drainer's call returns: its commit must be refused, nothing re-applied
    slow.join(timeout=120)
    assert slow.raised is None
    assert d.store.head(SID).version == version
    assert user_texts(d) == texts == ["First", "Second"]
    assert d.inbox.pending(SID) == []
    assert [d.inbox.get(SID, f"ses-{n}").status for n in range(2)] == ["done", "done"]
    assert d.agent.sessions.get(SID).status == "awaiting_input"


def test_twenty_direct_deliver_invokes_of_one_retried_event_resume_the_park_once(deploy: Any) -> None:
    d = deploy([TO_CLARIFY, ASK, {"say": "Thanks, noted.", "call": {"archmax_wait": {"reason": "more"}}}])
    d.call("send", webhook("First", "k-first"))
    barrier = threading.Barrier(20)

    def invoke(_n: int) -> dict[str, Any]:
        barrier.wait(timeout=60)
        return d.call("deliver", {"session_id": SID, "trigger": "timer", "variables": {"n": 1}, "delivery_id": "evt-1"})

    racers = [Runner(invoke, n) for n in range(20)]
    run_all(racers)
    assert [t.raised for t in racers] == [None] * 20
    answers = [t.result for t in racers]
    assert sum(1 for a in answers if a["ok"]) == 1
    refused = {a["error"] for a in answers if not a["ok"]}
    assert refused <= {SessionNotAwaitingInputError.__name__, DuplicateDeliveryError.__name__}
    notes = [m for m in d.agent.sessions.messages(SID) if is_runtime_note(m) and m.role == "tool"]
    assert sum("'timer' arrived" in m.content for m in notes) == 1
