"""Host: inbox-then-wake, in-order exactly-once draining, direct deliveries, the sweep.

Rule source: DESIGN.md §3 "Inbox" and §4; issue 4 items 2–3 and "Done when" (20 threads
delivering to one park; 20 emails to one running session; a turn that dies mid-turn recovered
by the sweep). Runs on memory, filesystem and AWS (AwsStore + DynamoInbox on moto) hosts.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from archmax.errors import (
    DuplicateDeliveryError,
    EmptyMessageError,
    InvalidDeliveryIdError,
    InvalidFilePathError,
    InvalidVariableNameError,
    ModelThrottledError,
    SessionNotAwaitingInputError,
    StoreError,
    UnknownSessionTriggerError,
)
from archmax.hosting.host import Accepted, Host
from archmax.hosting.inbox import MemoryInbox
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import FileIn, Firing
from archmax.session.notes import is_runtime_note
from archmax.session.records import SessionStatus

from ._models import GatedModel, ProcessDied, Runner
from .conftest import SUPPORT_INBOX

SID = "AAQk-1"
TO_CLARIFY = {
    "call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}},
    "expect_state": "intake",
}
ASK = {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}}
FIRST_TURN = [TO_CLARIFY, ASK]


def ack(n: int) -> dict[str, Any]:
    return {"say": f"ack {n}", "call": {"archmax_wait": {"reason": "more mail"}}, "expect_state": "clarify"}


def email(text: str, delivery_id: str | None = None, *, trigger: str = "email_received", **extra: Any) -> Firing:
    variables = {"conversation_id": SID, **extra.pop("variables", {})}
    return Firing(trigger=trigger, message=text, variables=variables, delivery_id=delivery_id, **extra)


def user_texts(host: Any, sid: str = SID) -> list[str]:
    return [m.content for m in host.agent.sessions.messages(sid) if m.role == "user" and not is_runtime_note(m)]


# ---------------------------------------------------------------- accept


def test_an_email_is_inboxed_then_its_turn_runs_and_the_item_is_done(make_host):
    host = make_host(FIRST_TURN)
    accepted = host.accept(email("About the thing we discussed", "ses-1"))
    assert accepted == Accepted(session_id=SID, delivery_id="ses-1", disposition="turn", duplicate=False)
    assert host.agent.sessions.get(SID).status == SessionStatus.AWAITING_INPUT
    assert host.inbox.get(SID, "ses-1").status == "done"
    assert host.inbox.pending(SID) == []
    assert user_texts(host) == ["About the thing we discussed"]


def test_a_redelivered_email_is_a_no_op_that_adds_nothing_to_the_transcript(make_host):
    host = make_host(FIRST_TURN)
    host.accept(email("About the thing we discussed", "ses-1"))
    before = host.agent.sessions.messages(SID)
    again = host.accept(email("About the thing we discussed", "ses-1"))
    assert again.duplicate is True
    assert again.disposition == "resume"  # what it would mean now; nothing was applied
    assert host.agent.sessions.messages(SID) == before
    assert host.inbox.arrivals(SID) == 1


def test_a_firing_without_a_delivery_id_gets_a_fresh_one(make_host):
    host = make_host(FIRST_TURN)
    accepted = host.accept(email("Hello"))
    assert accepted.delivery_id.startswith("archmax-")
    assert host.inbox.get(SID, accepted.delivery_id).status == "done"


@pytest.mark.parametrize(
    ("firing", "error"),
    [
        (email("Hi", "d-1", variables={"Bad-Name": 1}), InvalidVariableNameError),
        (email("Hi", "d-1", files={"doc": FileIn(name="../etc/passwd", content="x")}), InvalidFilePathError),
        (email("Hi", "d-1", files={"Doc": FileIn(name="a.txt", content="x")}), InvalidVariableNameError),
        (email("   ", "d-1"), EmptyMessageError),
        (email("Hi", "a\x00b"), InvalidDeliveryIdError),
        (email("Hi", "d-1", trigger="no_such_trigger"), UnknownSessionTriggerError),
    ],
)
def test_a_firing_a_send_would_refuse_is_refused_before_anything_is_written(make_host, firing, error):
    host = make_host([])
    with pytest.raises(error):
        host.accept(firing, session_id=SID)
    assert host.inbox.sessions_with_pending() == []
    assert host.inbox.arrivals(SID) == 0
    assert host.agent.sessions.get(SID) is None


def test_a_deliver_item_for_a_session_that_is_not_parked_is_recorded_failed_not_retried(make_host):
    host = make_host([])
    host.accept(
        Firing(trigger="webhook", variables={"x": 1}, delivery_id="evt-1"),
        session_id="nobody",
        kind="deliver",
    )
    item = host.inbox.get("nobody", "evt-1")
    assert item.status == "failed"
    assert item.error.startswith("SessionNotAwaitingInputError: ")
    assert host.sweep().redriven == []


def test_an_item_whose_waker_never_ran_is_applied_by_the_sweep(make_host):
    woken: list[str] = []
    host = make_host(FIRST_TURN, waker=woken.append)
    host.accept(email("About the thing we discussed", "ses-1"))
    assert woken == [SID]
    assert host.agent.sessions.get(SID) is None  # nothing ran yet: the item waits
    report = host.sweep()
    assert [(r.session_id, r.results) for r in report.redriven] == [(SID, ["parked"])]
    assert host.inbox.get(SID, "ses-1").status == "done"


# ---------------------------------------------------------------- 20 emails to a running session


def test_twenty_emails_to_a_running_session_are_all_inboxed_and_each_handled_once_in_order(make_host):
    model = GatedModel(FIRST_TURN + [ack(n) for n in range(20)])
    host = make_host(model)
    first = Runner(host.accept, email("First email", "ses-0"))
    first.start()
    assert model.entered.wait(timeout=30)  # the first turn is running, holding both leases

    barrier = threading.Barrier(20)

    def send_one(n: int) -> Accepted:
        barrier.wait(timeout=30)
        return host.accept(email(f"Email {n}", f"ses-{n + 1}"))

    senders = [Runner(send_one, n) for n in range(20)]
    for t in senders:
        t.start()
    for t in senders:
        t.join(timeout=60)
    assert [t.raised for t in senders] == [None] * 20
    assert {t.result.disposition for t in senders} == {"queued"}
    waiting = [i.delivery_id for i in host.inbox.pending(SID)]
    assert waiting[0] == "ses-0"  # its send has not returned yet, so it is not done
    assert sorted(waiting[1:]) == sorted(f"ses-{n + 1}" for n in range(20))  # all 20 wait while the turn runs

    model.open()
    first.join(timeout=120)
    assert first.raised is None
    arrival_order = sorted(range(20), key=lambda n: host.inbox.get(SID, f"ses-{n + 1}").seq)
    assert user_texts(host) == ["First email"] + [f"Email {n}" for n in arrival_order]
    assert host.inbox.pending(SID) == []
    assert all(host.inbox.get(SID, f"ses-{n}").status == "done" for n in range(21))
    assert host.agent.sessions.get(SID).status == SessionStatus.AWAITING_INPUT


def test_emails_arriving_while_the_drainer_works_are_picked_up_before_it_lets_go(make_host):
    """The release race: items put after the drainer read the counter are drained, not stranded."""
    model = GatedModel(FIRST_TURN + [ack(n) for n in range(3)])
    host = make_host(model)
    first = Runner(host.accept, email("First email", "ses-0"))
    first.start()
    assert model.entered.wait(timeout=30)
    for n in range(3):
        host.accept(email(f"Email {n}", f"ses-{n + 1}"))
    model.open()
    first.join(timeout=60)
    assert first.raised is None
    assert user_texts(host) == ["First email", "Email 0", "Email 1", "Email 2"]
    assert host.inbox.sessions_with_pending() == []


# ---------------------------------------------------------------- a turn that dies mid-turn


def test_a_turn_that_dies_mid_turn_is_taken_over_by_the_sweep_after_its_lease_expires(make_host, clock):
    model = GatedModel([TO_CLARIFY, ASK, ack(2)], die=True)
    host = make_host(model)
    dying = Runner(host.accept, email("First email", "ses-1"))
    dying.start()
    assert model.entered.wait(timeout=30)  # mid-turn: engine lease (and drain lease, but on AWS) held

    second = host.accept(email("Are you there?", "ses-2"))
    assert second.disposition == "queued"

    live = host.sweep()  # the leases are live: nobody may take over yet
    # the drain lease keeps the sweep's drainer out; on AWS (no drain lease, issue 24) the session's
    # own lease does: its drainer finds ses-1 applied by the turn running now, leaves it and stops
    busy = ["duplicate"] if make_host.kind == "aws" else []
    assert [(r.session_id, r.results, r.recovered) for r in live.redriven] == [(SID, busy, False)]
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-1", "ses-2"]

    clock.advance(seconds=901)
    report = host.sweep()
    assert report.recovered == [SID]
    # ses-1 was applied before the crash: redriving it continues the dead turn (not a duplicate drop),
    # which parks; then ses-2 is delivered into that park.
    assert report.redriven[0].results == ["parked", "parked"]
    assert user_texts(host) == ["First email", "Are you there?"]  # neither event lost, none twice
    assert host.inbox.pending(SID) == []
    assert host.agent.sessions.get(SID).status == SessionStatus.AWAITING_INPUT

    version = host.agent.store.head(SID).version
    model.open()  # the dead process's call "returns": its late writes must change nothing
    dying.join(timeout=60)
    assert isinstance(dying.raised, ProcessDied)
    assert host.agent.store.head(SID).version == version


# ---------------------------------------------------------------- direct deliveries and timers


def test_twenty_threads_delivering_to_one_park_through_aws_let_exactly_one_resume_it(make_aws_host):
    answer = [
        {
            "call": {"archmax_advance": {"to": "answer", "reason": "reply names ORD-1001"}},
            "expect_state": "clarify",
        },
        {"say": "ORD-1001 ships tomorrow."},
    ]
    host = make_aws_host(FIRST_TURN + answer)
    host.accept(email("About the thing we discussed", "ses-1"))
    barrier = threading.Barrier(20)

    def deliver(n: int) -> Any:
        barrier.wait(timeout=30)
        return host.deliver_now(SID, trigger="email_reply", variables={"reply_body": f"It's ORD-1001 ({n})"})

    runners = [Runner(deliver, n) for n in range(20)]
    for t in runners:
        t.start()
    for t in runners:
        t.join(timeout=120)
    winners = [t.result for t in runners if t.raised is None]
    losers = [t.raised for t in runners if t.raised is not None]
    assert len(winners) == 1 and winners[0].kind == "completed"
    assert len(losers) == 19 and all(isinstance(e, SessionNotAwaitingInputError) for e in losers)
    assert host.agent.sessions.get(SID).status == SessionStatus.COMPLETED


def test_deliver_now_refuses_a_redelivered_id_and_changes_nothing(make_host):
    host = make_host(FIRST_TURN + [ack(0)])
    host.accept(email("About the thing we discussed", "ses-1"))
    host.deliver_now(SID, trigger="email_reply", message="ORD-1001", delivery_id="evt-9")
    before = host.agent.sessions.messages(SID)
    with pytest.raises(DuplicateDeliveryError):
        host.deliver_now(SID, trigger="email_reply", message="ORD-1001", delivery_id="evt-9")
    assert host.agent.sessions.messages(SID) == before


def test_a_key_applied_directly_then_reused_for_an_inboxed_message_is_done_and_says_why(make_host):
    """A reused Idempotency-Key (/deliveries, then /messages): nothing is applied twice, and the item names the duplicate."""
    host = make_host(FIRST_TURN + [ack(0)])
    host.accept(email("About the thing we discussed", "ses-1"))
    host.deliver_now(SID, trigger="email_reply", message="ORD-1001", delivery_id="k-10")
    before = host.agent.sessions.messages(SID)
    host.accept(email("hello again", "k-10", trigger="email_reply"))
    item = host.inbox.get(SID, "k-10")
    assert item.status == "done" and item.error.startswith("DuplicateDeliveryError")
    assert host.agent.sessions.messages(SID) == before


def test_the_sweep_wakes_a_due_park_with_the_timer_trigger(make_host, clock):
    wait_an_hour = {
        "say": "I'll check back.",
        "call": {"archmax_wait": {"reason": "a follow-up", "until": "1h"}},
    }
    host = make_host([TO_CLARIFY, wait_an_hour, {"say": "Closing this for now."}])
    host.accept(email("About the thing we discussed", "ses-1"))
    assert host.sweep().due == []  # not due yet
    clock.advance(hours=1)
    report = host.sweep()
    assert report.due == [(SID, "completed")]
    assert host.agent.sessions.get(SID).variables["now"]["value"] == report.now


class OutageModel:
    """A provider that is down for its first call (a ModelError after retries), then answers."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.script = ScriptedModel(entries)
        self.down = True

    def complete(self, request: Any) -> Any:
        if self.down:
            self.down = False
            raise ModelThrottledError("throttled beyond the retry budget")
        return self.script.complete(request)


def test_a_provider_outage_mid_turn_leaves_the_event_pending_and_the_sweep_finishes_its_turn(make_host, clock):
    host = make_host(OutageModel(FIRST_TURN))
    accepted = host.accept(email("First email", "ses-1"))
    assert accepted.session_id == SID
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-1"]  # not marked failed: not lost
    assert host.agent.sessions.get(SID).status == SessionStatus.RUNNING

    report = host.sweep()
    assert report.redriven[0].results == ["parked"]
    assert host.inbox.pending(SID) == []
    assert user_texts(host) == ["First email"]  # the turn was continued, the event not applied twice
    assert host.agent.sessions.get(SID).status == SessionStatus.AWAITING_INPUT


class BrokenInbox(MemoryInbox):
    """An inbox whose reads fail (a DynamoDB outage) — writes still work."""

    def pending(self, session_id: str) -> list[Any]:
        raise StoreError("inbox unavailable")


def test_an_inbox_failure_after_a_direct_delivery_does_not_report_the_applied_delivery_as_failed(clock):
    from archmax import MemoryStore, create_agent

    store = MemoryStore()
    agent = create_agent(SUPPORT_INBOX, store, ScriptedModel(FIRST_TURN + [{"say": "Thanks!"}]), clock=clock)
    agent.workflow.send(SID, "Hello", trigger="email_received", variables={"conversation_id": SID})
    host = Host(agent, BrokenInbox(), clock=clock)
    outcome = host.deliver_now(SID, trigger="email_reply", variables={"reply_body": "ORD-1"})
    assert outcome.kind == "completed"
    assert store.load(SID).status == SessionStatus.COMPLETED
