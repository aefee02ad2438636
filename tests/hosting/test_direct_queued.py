"""A direct firing never overtakes the inbox: queued ids are refused, a lost drain-lease answer is asked again.

Rule source: DESIGN.md §3 "Inbox" (the lease holder drains in arrival order); issue 22 (found by
the filesystem pair soak: ``inbox events of s0 applied out of arrival order``). Runs on memory,
filesystem and AWS (AwsStore + DynamoInbox on moto) hosts.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax.clock import format_instant
from archmax.errors import DeliveryQueuedError, DuplicateDeliveryError, StoreError, is_retryable
from archmax.hosting.host import Host
from archmax.hosting.inbox_base import InboxCapability
from archmax.session.firing import Firing
from archmax.session.notes import is_runtime_note

SID = "AAQk-1"
FIRST_TURN = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}, "expect_state": "intake"},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
]


def ack(n: int) -> dict[str, Any]:
    return {"say": f"ack {n}", "call": {"archmax_wait": {"reason": "more mail"}}, "expect_state": "clarify"}


def email(text: str, delivery_id: str) -> Firing:
    return Firing(trigger="email_received", message=text, variables={"conversation_id": SID}, delivery_id=delivery_id)


def user_texts(host: Host) -> list[str]:
    return [m.content for m in host.agent.sessions.messages(SID) if m.role == "user" and not is_runtime_note(m)]


def stalled_host(make_host: Any, clock: Any) -> Host:
    """A parked session whose inbox holds ``ses-2`` then ``ses-3``, pending behind another drainer's lease."""
    host = make_host([*FIRST_TURN, ack(1), ack(2), ack(3)])
    host.accept(email("first", "ses-1"))
    assert host.inbox.try_acquire(SID, "drain-elsewhere", format_instant(clock.now()), 900)
    host.accept(email("second", "ses-2"))
    host.accept(email("third", "ses-3"))
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-2", "ses-3"]
    return host


@pytest.mark.parametrize("door", ["send_now", "deliver_now"])
def test_a_direct_firing_of_a_queued_id_is_refused_and_applied_later_in_arrival_order(make_host, clock, door):
    host = stalled_host(make_host, clock)
    before = host.agent.sessions.messages(SID)
    with pytest.raises(DeliveryQueuedError) as refused:
        if door == "send_now":
            host.send_now(SID, "third", trigger="email_received", delivery_id="ses-3")
        else:
            host.deliver_now(SID, trigger="email_received", message="third", delivery_id="ses-3")
    assert refused.value.delivery_id == "ses-3" and is_retryable(refused.value)
    assert "waits in the inbox" in str(refused.value)
    assert host.agent.sessions.messages(SID) == before  # nothing applied now
    assert host.inbox.get(SID, "ses-3").status == "pending"

    clock.advance(seconds=901)  # the other drainer's lease expires; the sweep's re-drive drains in order
    host.drain(SID)
    assert user_texts(host) == ["first", "second", "third"]
    with pytest.raises(DuplicateDeliveryError):  # applied once, by the drain: a retry is told so
        host.send_now(SID, "third", trigger="email_received", delivery_id="ses-3")
    assert user_texts(host) == ["first", "second", "third"]


def test_a_direct_firing_of_a_new_id_runs_now(make_host, clock):
    host = make_host([*FIRST_TURN, ack(1)])
    host.accept(email("first", "ses-1"))
    outcome = host.send_now(SID, "direct", trigger="email_received", delivery_id="cli-1")
    assert outcome.status == "awaiting_input"
    assert user_texts(host) == ["first", "direct"]
    assert host.inbox.get(SID, "cli-1") is None  # a direct firing is never inboxed


class LostAcquireAnswer:
    """An inbox whose first ``try_acquire`` is applied, then its answer lost (the error a timeout gives)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.lost = inner, 0

    def try_acquire(self, session_id: str, owner: str, now: str, ttl_s: float) -> bool:
        got = self.inner.try_acquire(session_id, owner, now, ttl_s)
        if self.lost == 0:
            self.lost += 1
            raise StoreError("the answer of try_acquire was lost (a timeout after the write)")
        return got

    def __getattr__(self, name: str) -> Any:  # every other member as the inbox has it
        return getattr(self.inner, name)


def test_a_drain_whose_lease_answer_was_lost_asks_again_and_drains_now(make_host, clock):
    host = make_host([*FIRST_TURN, ack(1)])
    if InboxCapability.SESSION_LEASE_DRAIN in host.inbox.capabilities:
        pytest.skip("the drain of DynamoInbox takes no drain lease")
    host.inbox = LostAcquireAnswer(host.inbox)
    host.accept(email("first", "ses-1"))
    assert host.inbox.lost == 1
    assert host.inbox.get(SID, "ses-1").status == "done"  # drained now, not after the lease's 900 s
    assert user_texts(host) == ["first"]
    assert host.inbox.try_acquire(SID, "next-drainer", format_instant(clock.now()), 900)  # and the lease was let go


class FailedRelease:
    """An inbox whose first ``release`` fails: unapplied (a throttled call) or applied, its answer lost."""

    def __init__(self, inner: Any, applied: bool) -> None:
        self.inner, self.applied, self.failed = inner, applied, 0

    def release(self, session_id: str, owner: str, seen_arrivals: int) -> bool:
        if self.failed == 0:
            self.failed += 1
            if self.applied:
                self.inner.release(session_id, owner, seen_arrivals)
            raise StoreError("release: no answer")
        return self.inner.release(session_id, owner, seen_arrivals)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("applied", [False, True])
def test_a_drain_whose_release_failed_asks_again_so_the_next_wake_drains_now(make_host, clock, applied):
    """Issue 22's other half, at the end of a drain (found by attack29): a ``release`` that failed left
    the lease with an owner nobody runs, so the next firing's wake could not drain and its item waited
    for the lease to expire (900 s) and a sweep."""
    host = make_host([*FIRST_TURN, ack(1)])
    if InboxCapability.SESSION_LEASE_DRAIN in host.inbox.capabilities:
        pytest.skip("the drain of DynamoInbox takes no drain lease")
    host.inbox = FailedRelease(host.inbox, applied)
    host.accept(email("first", "ses-1"))
    assert host.inbox.failed == 1
    host.accept(email("second", "ses-2"))
    assert host.inbox.get(SID, "ses-2").status == "done"  # drained by its own wake, not after 900 s
    assert user_texts(host) == ["first", "second"]
    assert host.inbox.try_acquire(SID, "next-drainer", format_instant(clock.now()), 900)  # and it was let go


class FailsOnce:
    """An inbox whose next ``times`` calls of ``method`` fail: unapplied (an outage's blip) or applied, the answer lost."""

    def __init__(self, inner: Any, method: str, times: int = 1, *, applied: bool = False) -> None:
        self.inner, self.method, self.left, self.applied, self.failed = inner, method, times, applied, 0

    def __getattr__(self, name: str) -> Any:
        member = getattr(self.inner, name)
        if name != self.method:
            return member

        def failing(*args: Any, **kwargs: Any) -> Any:
            if self.left:
                self.left -= 1
                self.failed += 1
                if self.applied:
                    member(*args, **kwargs)
                raise StoreError(f"{name}: the inbox did not answer")
            return member(*args, **kwargs)

        return failing


@pytest.mark.parametrize(
    ("method", "times", "applied"),
    [("mark", 1, False), ("arrivals_and_pending", 1, False), ("try_acquire", 2, True)],
)
def test_a_drain_that_failed_on_an_inbox_error_lets_its_lease_go_so_the_next_wake_drains_now(
    make_host, clock, method, times, applied
):
    """Found by attack29: a drain that raised a retryable inbox error while holding the drain lease
    (its ``mark`` after the turn, its read of the pending items, or both asks of a ``try_acquire``
    that took the lease and lost both answers)
    left the lease with an owner nobody runs, so the next firing's wake could not drain and both
    items waited for the lease's 900 s and a sweep. A drain that fails lets its lease go (best effort)."""
    host = make_host([*FIRST_TURN, ack(1)])
    if InboxCapability.SESSION_LEASE_DRAIN in host.inbox.capabilities:
        pytest.skip("the drain of DynamoInbox takes no drain lease")
    host.inbox = FailsOnce(host.inbox, method, times, applied=applied)
    host.accept(email("first", "ses-1"))  # its drain fails; the item stays pending
    assert host.inbox.failed == times
    host.accept(email("second", "ses-2"))
    assert [host.inbox.get(SID, d).status for d in ("ses-1", "ses-2")] == ["done", "done"]
    assert user_texts(host) == ["first", "second"]


def test_a_direct_retry_while_the_drain_applies_that_very_id_is_refused_then_answered_duplicate(make_host):
    """Threads (attack29, held): the drain's turn for ``ses-1`` is mid-flight when a direct retry of
    ``ses-1`` and a new direct firing arrive; the retry is refused as queued (the item is still
    pending while it is applied), the new id as mid-turn, and after the turn the retry is a duplicate."""
    from archmax.errors import SessionNotResumableError

    from ._models import GatedModel, Runner

    model = GatedModel([*FIRST_TURN, ack(1)])
    host = make_host(model)
    drain = Runner(host.accept, email("first", "ses-1"))
    drain.start()
    assert model.entered.wait(timeout=30)
    with pytest.raises(DeliveryQueuedError):
        host.send_now(SID, "first", trigger="email_received", delivery_id="ses-1")
    with pytest.raises(SessionNotResumableError) as busy:
        host.send_now(SID, "direct", trigger="email_received", delivery_id="cli-1")
    assert not isinstance(busy.value, DeliveryQueuedError)
    model.open()
    drain.join(timeout=60)
    assert drain.raised is None
    with pytest.raises(DuplicateDeliveryError):
        host.send_now(SID, "first", trigger="email_received", delivery_id="ses-1")
    assert user_texts(host) == ["first"]
    assert host.inbox.get(SID, "ses-1").status == "done"


@pytest.mark.parametrize(
    ("session_id", "queue"),
    [
        ("AAQk-1", "AAQk-1"),
        ("p1~work:check:1", "p1"),
        ("p1~work:check:1~review:sub:2", "p1"),
        ("not~a child", "not~a child"),  # a ``~`` that names no child: the session is its own queue
    ],
)
def test_a_chain_of_sub_workflows_shares_its_roots_queue(session_id: str, queue: str) -> None:
    from archmax.hosting.inbox import queue_id

    assert queue_id(session_id) == queue
