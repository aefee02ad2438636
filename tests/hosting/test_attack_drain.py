"""Attacks on the unleased drain of ``DynamoInbox`` + ``AwsStore`` (moto), where features meet.

Rule source: DESIGN.md §3 "Inbox" (an accepted firing is applied once, never lost, in arrival
order; a refused item changes nothing and is not retried), BEHAVIOUR.md §5.10 (a caller and its
child are one queue), issue 22 (a direct firing whose id waits in the inbox is refused as queued),
issue 24 (``Host._drain_unleased``: no drain lease, no riders; the argument is its docstring).

Each "container" is its own ``AwsStore`` + ``DynamoInbox`` + agent over the same moto tables, as
two Lambda containers are: nothing is shared in memory but the clock. A crash is a
``BaseException`` raised where the process would die, so nothing on the way handles it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.exceptions import ClientError

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.engine import deliveries
from archmax.errors import (
    CommitConflictError,
    DeliveryQueuedError,
    DuplicateDeliveryError,
    SessionNotAwaitingInputError,
    SessionNotResumableError,
    StoreError,
    is_retryable,
)
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import Firing
from archmax.session.records import SessionStatus

from ._models import GatedModel, Runner
from .conftest import INBOX_TABLE, SUPPORT_INBOX
from .test_host import FIRST_TURN, SID, ack, email, user_texts


class Crash(BaseException):
    """The process dies here: not an Exception, so nothing on the way handles it."""


@pytest.fixture
def container(aws: Any, clock: FakeClock) -> Callable[..., Host]:
    """``container(model_or_entries, **host_kwargs)``: a Host with its OWN store, inbox and agent (a Lambda container)."""

    def build(model: Any, **kwargs: Any) -> Host:
        model = ScriptedModel(model) if isinstance(model, list) else model
        store = aws.store()
        inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
        kwargs.setdefault("waker", lambda sid: None)  # wakes are explicit in these tests
        return Host(create_agent(SUPPORT_INBOX, store, model, clock=clock), inbox, **kwargs)

    return build


@contextmanager
def crash_on_mark(host: Host, delivery_id: str) -> Iterator[None]:
    """The process dies as it is about to mark ``delivery_id`` (after the turn's commit landed)."""
    mark = host.inbox.mark

    def dying(session_id: str, did: str, *args: Any, **kwargs: Any) -> None:
        if did == delivery_id:
            raise Crash(f"died before marking {did}")
        mark(session_id, did, *args, **kwargs)

    host.inbox.mark = dying  # type: ignore[method-assign]
    try:
        yield
    finally:
        del host.inbox.mark


def status_of(host: Host, delivery_id: str, sid: str = SID) -> str | None:
    item = host.inbox.get(sid, delivery_id)
    return None if item is None else item.status


def kinds(results: list[Any]) -> list[str]:
    return [getattr(r, "kind", None) or type(r).__name__ for r in results]


@contextmanager
def fault(
    client: Any, operation: str, code: str, *, times: int = 1, when: Callable[[dict[str, Any]], bool] | None = None
) -> Iterator[list[str]]:
    """The next ``times`` calls of ``operation`` for which ``when(params)`` holds answer ``code`` (a throttle, a 500).

    Raised from botocore's ``before-parameter-build`` hook, so the request never reaches moto.
    """
    answered: list[str] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        if len(answered) >= times or (when is not None and not when(params)):
            return
        answered.append(code)
        raise ClientError({"Error": {"Code": code, "Message": f"injected {code}"}}, operation)

    service = client.meta.service_model.service_name
    event, uid = f"before-parameter-build.{service}.{operation}", f"fault-{id(answered)}"
    client.meta.events.register(event, before, unique_id=uid)
    try:
        yield answered
    finally:
        client.meta.events.unregister(event, unique_id=uid)


def on_inbox(params: dict[str, Any]) -> bool:
    """A call on the inbox table (the sessions table shares the client)."""
    tables = {params.get("TableName")} | {
        w.get("TableName") for i in params.get("TransactItems", []) for w in i.values()
    }
    return INBOX_TABLE in tables


def inbox_fault(client: Any, operation: str, code: str, *, when: Callable[[dict[str, Any]], bool] | None = None) -> Any:
    """:func:`fault` on the inbox table's calls only."""
    return fault(client, operation, code, when=lambda p: on_inbox(p) and (when is None or when(p)))


# ---------------------------------------------------------------- a crash between the commit and the mark


def test_a_crash_before_the_mark_then_two_concurrent_redrives_apply_nothing_twice(container, aws):
    first = container(FIRST_TURN)
    first.accept(email("About the thing we discussed", "ses-1"))
    with crash_on_mark(first, "ses-1"), pytest.raises(Crash):
        first.drain(SID)
    version = first.agent.store.head(SID).version
    assert status_of(first, "ses-1") == "pending"

    # two containers re-drive at once: both read the view before either applies (a barrier after the view)
    a, b = container([]), container([])  # empty scripts: a model call would raise
    barrier = threading.Barrier(2, timeout=30)
    for host in (a, b):
        view = host.inbox.drain_view

        def after_view(sid: str, _view: Any = view) -> Any:
            seen = _view(sid)
            if seen.items:
                barrier.wait()
            return seen

        host.inbox.drain_view = after_view  # type: ignore[method-assign]
    runners = [Runner(a.drain, SID), Runner(b.drain, SID)]
    for r in runners:
        r.start()
    for r in runners:
        r.join(60)
    assert [r.raised for r in runners] == [None, None]
    assert [kinds(r.result) for r in runners] == [["DuplicateDeliveryError"]] * 2
    assert status_of(a, "ses-1") == "done"
    assert a.agent.store.head(SID).version == version  # nothing committed by either re-drive
    assert user_texts(a) == ["About the thing we discussed"]


def test_a_crash_before_the_mark_refuses_a_direct_retry_as_queued_until_the_redrive_marks_it(container):
    first = container(FIRST_TURN)
    first.accept(email("About the thing we discussed", "ses-1"))
    with crash_on_mark(first, "ses-1"), pytest.raises(Crash):
        first.drain(SID)

    other = container([])
    with pytest.raises(DeliveryQueuedError):  # the id waits in the inbox (applied, but not marked)
        other.send_now(SID, "About the thing we discussed", trigger="email_reply", delivery_id="ses-1")
    assert kinds(other.drain(SID)) == ["DuplicateDeliveryError"]
    with pytest.raises(DuplicateDeliveryError):  # marked: the retry's own answer now
        other.send_now(SID, "About the thing we discussed", trigger="email_reply", delivery_id="ses-1")
    assert user_texts(other) == ["About the thing we discussed"]


def test_a_crash_before_the_mark_with_a_later_item_waiting_applies_each_once_in_order(container):
    first = container(FIRST_TURN)
    first.accept(email("About the thing we discussed", "ses-1"))
    first.accept(email("It is order 42", "ses-2"))
    with crash_on_mark(first, "ses-1"), pytest.raises(Crash):
        first.drain(SID)
    redriver = container([ack(1)])
    report = redriver.sweep()
    assert [r.results for r in report.redriven] == [["duplicate", "parked"]]
    assert (status_of(redriver, "ses-1"), status_of(redriver, "ses-2")) == ("done", "done")
    assert user_texts(redriver) == ["About the thing we discussed", "It is order 42"]


# ---------------------------------------------------------------- refused items


def test_a_refused_item_then_a_good_one_the_refusal_changes_nothing_and_is_not_retried(container):
    host = container(FIRST_TURN)
    # a deliver item for a session that is not parked (it does not exist yet): refused at the drain
    host.accept(Firing(trigger="webhook", variables={"x": 1}, delivery_id="evt-1"), session_id=SID, kind="deliver")
    host.accept(email("About the thing we discussed", "ses-1"))
    results = host.drain(SID)
    assert kinds(results) == ["SessionNotAwaitingInputError", "parked"]
    assert status_of(host, "evt-1") == "failed" and status_of(host, "ses-1") == "done"
    assert host.sweep().redriven == []  # not retried
    assert user_texts(host) == ["About the thing we discussed"]
    assert "x" not in host.agent.sessions.get(SID).variables


def test_a_crash_before_marking_a_refusal_refuses_it_again_on_redrive_and_the_next_item_runs_once(container):
    host = container(FIRST_TURN)
    host.accept(Firing(trigger="webhook", variables={"x": 1}, delivery_id="evt-1"), session_id=SID, kind="deliver")
    host.accept(email("About the thing we discussed", "ses-1"))
    with crash_on_mark(host, "evt-1"), pytest.raises(Crash):
        host.drain(SID)
    assert host.agent.store.head(SID) is None  # the refusal wrote nothing
    redriver = container(FIRST_TURN)
    assert [r.results for r in redriver.sweep().redriven] == [["SessionNotAwaitingInputError", "parked"]]
    assert status_of(redriver, "evt-1") == "failed"
    assert user_texts(redriver) == ["About the thing we discussed"]


# ---------------------------------------------------------------- inbox faults


def test_a_throttled_mark_leaves_the_item_pending_and_the_redrive_marks_it_without_applying_again(container, aws):
    host = container(FIRST_TURN)
    host.accept(email("About the thing we discussed", "ses-1"))
    with inbox_fault(aws.dynamodb, "UpdateItem", "ThrottlingException") as answered, pytest.raises(StoreError):
        host.drain(SID)
    assert answered == ["ThrottlingException"]
    version = host.agent.store.head(SID).version
    assert status_of(host, "ses-1") == "pending"
    assert kinds(container([]).drain(SID)) == ["DuplicateDeliveryError"]
    assert status_of(host, "ses-1") == "done"
    assert host.agent.store.head(SID).version == version
    assert user_texts(host) == ["About the thing we discussed"]


def test_a_failed_view_applies_nothing_and_the_next_drain_applies_the_item_once(container, aws):
    host = container(FIRST_TURN)
    host.accept(email("About the thing we discussed", "ses-1"))
    with inbox_fault(aws.dynamodb, "Query", "InternalServerError"), pytest.raises(StoreError):
        host.drain(SID)
    assert host.agent.store.head(SID) is None
    assert kinds(host.drain(SID)) == ["parked"]
    assert user_texts(host) == ["About the thing we discussed"]


def test_a_view_failing_after_the_items_were_applied_raises_and_leaves_nothing_pending(container, aws):
    host = container(FIRST_TURN + [ack(1)])
    host.accept(email("About the thing we discussed", "ses-1"))
    host.accept(email("It is order 42", "ses-2"))
    queries: list[int] = []

    def second_query(_params: dict[str, Any]) -> bool:  # the first view passes; the one after both items fails
        queries.append(1)
        return len(queries) == 2

    with inbox_fault(aws.dynamodb, "Query", "ThrottlingException", when=second_query), pytest.raises(StoreError):
        host.drain(SID)
    assert (status_of(host, "ses-1"), status_of(host, "ses-2")) == ("done", "done")
    assert host.inbox.sessions_with_pending() == []
    assert user_texts(host) == ["About the thing we discussed", "It is order 42"]


def test_a_failed_accept_writes_nothing_and_wakes_nothing(container, aws):
    woken: list[str] = []
    host = container(FIRST_TURN, waker=woken.append)
    with inbox_fault(aws.dynamodb, "TransactWriteItems", "InternalServerError"), pytest.raises(StoreError):
        host.accept(email("About the thing we discussed", "ses-1"))
    assert woken == []
    assert host.inbox.get(SID, "ses-1") is None
    assert host.inbox.sessions_with_pending() == []
    host.accept(email("About the thing we discussed", "ses-1"))  # the sender's retry lands once
    assert woken == [SID]
    assert kinds(host.drain(SID)) == ["parked"]


# ---------------------------------------------------------------- the session lease expires mid-drain


def test_a_drainer_whose_lease_expired_mid_turn_is_taken_over_and_its_late_commit_changes_nothing(container, clock):
    slow_model = GatedModel(FIRST_TURN)
    slow = container(slow_model)
    slow.accept(email("About the thing we discussed", "ses-1"))
    slow.accept(email("It is order 42", "ses-2"))
    running = Runner(slow.drain, SID)
    running.start()
    assert slow_model.entered.wait(30)  # ses-1's turn holds the session, inside its first model call
    clock.advance(seconds=901)  # its lease expired: the process looks dead

    taker = container(FIRST_TURN + [ack(1)])
    report = taker.sweep()
    assert [r.results for r in report.redriven] == [["parked", "parked"]]  # ses-1 continued, then ses-2
    assert report.redriven[0].recovered

    slow_model.open()
    running.join(60)
    assert running.raised is None
    assert kinds(running.result) == [type(running.result[0]).__name__]
    assert isinstance(running.result[0], CommitConflictError | SessionNotResumableError)  # lost: left alone
    assert (status_of(taker, "ses-1"), status_of(taker, "ses-2")) == ("done", "done")
    assert user_texts(taker) == ["About the thing we discussed", "It is order 42"]
    assert taker.agent.store.head(SID).status == SessionStatus.AWAITING_INPUT


# ---------------------------------------------------------------- two drainers and a direct deliver


DIRECT = {
    "send_now": lambda host: host.send_now(SID, "Direct", trigger="email_reply", delivery_id="direct-1"),
    "deliver_now": lambda host: host.deliver_now(SID, trigger="webhook", message="Direct", delivery_id="direct-1"),
}


@pytest.mark.parametrize("door", sorted(DIRECT))
def test_two_drainers_and_a_direct_firing_race_each_firing_applied_once_and_the_inbox_in_order(container, door):
    script = FIRST_TURN + [ack(n) for n in range(1, 6)]
    seed = container(script)
    seed.accept(email("First", "ses-0"))
    assert kinds(seed.drain(SID)) == ["parked"]
    for n in (1, 2, 3):
        seed.accept(email(f"Inbox {n}", f"ses-{n}"))
    # separate containers, each a script long enough for any share of the work
    hosts = [container([ack(n) for n in range(1, 6)]) for _ in range(3)]
    runners = [
        Runner(hosts[0].drain, SID),
        Runner(hosts[1].drain, SID),
        Runner(DIRECT[door], hosts[2]),
    ]
    for r in runners:
        r.start()
    for r in runners:
        r.join(60)
    # a direct firing that met a drain's turn is refused, nothing applied (a deliver: the session is not parked)
    allowed = (SessionNotAwaitingInputError,) if door == "deliver_now" else ()
    assert all(r.raised is None or is_retryable(r.raised) or isinstance(r.raised, allowed) for r in runners), [
        r.raised for r in runners
    ]
    seed.sweep()  # whatever a lost race left pending
    if runners[2].raised is not None:  # the caller retries it
        DIRECT[door](hosts[2])
    texts = user_texts(seed)
    assert sorted(texts) == sorted(["First", "Inbox 1", "Inbox 2", "Inbox 3", "Direct"])  # each once
    inboxed = [t for t in texts if t.startswith("Inbox")]
    assert inboxed == ["Inbox 1", "Inbox 2", "Inbox 3"]  # the inbox's in arrival order
    assert seed.inbox.sessions_with_pending() == []


# ---------------------------------------------------------------- the applied-but-unmarked id leaves the window


@pytest.fixture
def small_window(monkeypatch: pytest.MonkeyPatch) -> int:
    """The record keeps the newest 3 delivery ids instead of 200 (the rule is the same; 200 turns are slow)."""
    monkeypatch.setattr(deliveries, "DELIVERY_IDS_KEPT", 3)
    return 3


def _crashed_before_marking_ses_1(container: Callable[..., Host], replies: int) -> Host:
    first = container(FIRST_TURN + [ack(n) for n in range(1, replies + 1)])
    first.accept(email("About the thing we discussed", "ses-1"))
    with crash_on_mark(first, "ses-1"), pytest.raises(Crash):
        first.drain(SID)
    return first


def test_an_unmarked_id_pushed_out_of_the_window_is_still_answered_duplicate_on_redrive(container, small_window):
    host = _crashed_before_marking_ses_1(container, small_window)
    for n in range(1, small_window + 1):  # direct replies (never inboxed) push ses-1 out of the window
        host.send_now(SID, f"Direct {n}", trigger="email_reply", delivery_id=f"direct-{n}")
    record = host.agent.store.load(SID)
    assert "ses-1" not in record.delivery_ids and len(record.delivery_ids) == small_window
    assert host.agent.store.get(SID, deliveries.marker_path("ses-1")) is not None  # written before it left

    assert [r.results for r in container([]).sweep().redriven] == [["duplicate"]]
    assert status_of(host, "ses-1") == "done"
    assert user_texts(host).count("About the thing we discussed") == 1


def test_a_marker_write_that_fails_keeps_the_id_in_the_window_and_the_redrive_is_still_a_duplicate(
    container, aws, small_window
):
    host = _crashed_before_marking_ses_1(container, small_window)
    for n in range(1, small_window):
        host.send_now(SID, f"Direct {n}", trigger="email_reply", delivery_id=f"direct-{n}")
    before = host.agent.store.head(SID).version

    def is_marker(params: dict[str, Any]) -> bool:
        return deliveries.MARKERS in str(params.get("Key", ""))

    with fault(aws.s3, "PutObject", "InternalError", when=is_marker) as answered, pytest.raises(StoreError):
        host.send_now(SID, "Direct last", trigger="email_reply", delivery_id="direct-last")
    assert answered == ["InternalError"]
    assert host.agent.store.head(SID).version == before  # the commit that would drop ses-1 was never tried
    assert "ses-1" in host.agent.store.load(SID).delivery_ids

    assert kinds(container([]).drain(SID)) == ["DuplicateDeliveryError"]
    assert user_texts(host).count("About the thing we discussed") == 1
    assert "Direct last" not in user_texts(host)


# ---------------------------------------------------------------- a caller and its child: one queue, warm containers

LOOKUP_WITH_REVIEW = {
    "states": {
        "find": {"triggers": {"manual": None}, "transitions": [{"to": "review", "description": "A person approves."}]},
        "review": {
            "type": "human",
            "transitions": [
                {"to": "approved", "description": "Approved."},
                {"to": "find", "description": "Again."},
            ],
        },
        "approved": None,
    }
}
CALLER = {
    "states": {
        "ask": {
            "triggers": {"manual": None},
            "tools": {"allow": ["archmax_workflow_lookup"]},
            "transitions": [{"to": "done", "description": "Answered."}],
        },
        "done": None,
    }
}
TO_REVIEW = {"call": {"archmax_advance": {"to": "review", "reason": "needs approval"}}}


@pytest.fixture
def pair_container(aws: Any, clock: FakeClock, tmp_path: Path) -> Callable[[list[dict[str, Any]]], Host]:
    """``pair_container(entries)``: a container (own store, inbox, agent) of a caller whose child parks at a decision."""
    for slug, doc in {"parent": CALLER, "lookup": LOOKUP_WITH_REVIEW}.items():
        (tmp_path / slug).mkdir()
        (tmp_path / slug / "workflow.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")

    def build(entries: list[dict[str, Any]]) -> Host:
        agent = create_agent(tmp_path / "parent", aws.store(), ScriptedModel(entries), clock=clock)
        return Host(agent, DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock), waker=lambda sid: None)

    return build


def test_a_reply_drained_by_a_container_whose_view_of_the_caller_is_old_is_mailed_by_the_caller(pair_container):
    """The caller answers a person at its child's decision by committing the child's words to its outbox (issue 20
    item 4). A warm container remembers the caller at an older version (issue 24: the claim is the read); the
    reply is forwarded to the child without claiming the caller, so nothing checked that view before the child was
    written, and the caller's commit of the answer then lost to its own newer version: the child answered, the
    item was marked done, and the person's mail was never committed."""
    warm = pair_container(
        [{"call": {"archmax_workflow_lookup": {}}}, TO_REVIEW, {"say": "Please approve."}, {"say": "It is pending."}]
    )
    assert warm.agent.workflow.send("s", "go").parked_channel == "decision"  # warm remembers the caller now
    other = pair_container([TO_REVIEW, {"say": "Please approve again."}])
    assert other.decide_now("s", to="find").parked_channel == "decision"  # the child parks again: caller moved on
    before = other.agent.store.load("s")

    other.accept(Firing(trigger="manual", message="What is pending?", delivery_id="mail-1"), session_id="s")
    assert [getattr(r, "reply", r) for r in warm.drain("s")] == ["It is pending."]  # the child answered

    after = other.agent.store.load("s")
    assert status_of(other, "mail-1", "s") == "done"
    assert len(after.outbox) == len(before.outbox) + 1  # the answer's mail, committed by the caller
    assert after.version == before.version + 1


# ---------------------------------------------------------------- a process that dies mid-turn keeps its lease


@contextmanager
def dies_at_session_write(client: Any, after: int) -> Iterator[None]:
    """The process dies at every sessions-table UpdateItem after the first ``after`` (its lease is never let go)."""
    seen: list[int] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == INBOX_TABLE:
            return
        seen.append(1)
        if len(seen) > after:
            raise Crash("killed mid-turn")

    event = "before-parameter-build.dynamodb.UpdateItem"
    client.meta.events.register(event, before, unique_id="dies-at-session-write")
    try:
        yield
    finally:
        client.meta.events.unregister(event, unique_id="dies-at-session-write")


def test_a_turn_whose_process_died_holding_the_lease_blocks_the_queue_until_it_expires_then_both_apply_in_order(
    container, aws, clock
):
    dying = container(FIRST_TURN)
    dying.accept(email("About the thing we discussed", "ses-1"))
    with dies_at_session_write(aws.dynamodb, after=1), pytest.raises(Crash):  # the claim lands; nothing after it
        dying.drain(SID)
    head = dying.agent.store.head(SID)
    assert head.status == SessionStatus.RUNNING and head.lease is not None  # died holding the lease

    second = container(FIRST_TURN + [ack(1)])
    second.accept(email("It is order 42", "ses-2"))
    # its own drainer finds ses-1 applied by a turn that still holds the session: left to it, stops in order
    assert kinds(second.drain(SID)) == ["DuplicateDeliveryError"]
    assert [i.delivery_id for i in second.inbox.pending(SID)] == ["ses-1", "ses-2"]

    clock.advance(seconds=901)  # the dead turn's lease expired
    report = container(FIRST_TURN + [ack(1)]).sweep()
    assert [r.results for r in report.redriven] == [["parked", "parked"]]  # ses-1's turn continued, then ses-2
    assert report.redriven[0].recovered
    assert second.inbox.sessions_with_pending() == []
    assert user_texts(second) == ["About the thing we discussed", "It is order 42"]


def test_a_childs_firing_applied_but_unmarked_then_the_callers_each_once_in_one_queue(pair_container):
    child_id = "s~ask:lookup:1"
    ask = {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number"}}}
    first = pair_container(
        [{"call": {"archmax_workflow_lookup": {}}}, ask, {"say": "Found ORD-1."}, {"say": "Your order is ORD-1."}]
    )
    assert first.agent.workflow.send("s", "go").parked_channel == "input"  # through its child
    accepted = first.accept(Firing(trigger="manual", message="ORD-1", delivery_id="x-1"), session_id=child_id)
    assert accepted.session_id == child_id
    first.accept(Firing(trigger="manual", message="Thanks", delivery_id="y-1"), session_id="s")
    assert [i.session_id for i in first.inbox.pending("s")] == ["s", "s"]  # one queue: the caller's
    with crash_on_mark(first, "x-1"), pytest.raises(Crash):
        first.drain("s")
    assert first.agent.store.head("s").status == SessionStatus.COMPLETED  # x-1 reached the child and back

    redriver = pair_container([{"say": "You are welcome."}])
    assert [r.results for r in redriver.sweep().redriven] == [["duplicate", "completed"]]
    caller_texts = [m.content for m in redriver.agent.store.load("s").messages if m.role == "user"]
    child_texts = [m.content for m in redriver.agent.store.load(child_id).messages if m.role == "user"]
    assert caller_texts.count("Thanks") == 1 and "ORD-1" not in caller_texts
    assert child_texts.count("ORD-1") == 1
    assert redriver.inbox.sessions_with_pending() == []


# ---------------------------------------------------------------- the sweep's re-drive racing a live drain


def test_the_sweeps_redrive_during_a_live_drain_changes_nothing_and_the_drainer_finishes_in_order(container):
    model = GatedModel(FIRST_TURN + [ack(1)])
    live = container(model)
    live.accept(email("About the thing we discussed", "ses-1"))
    live.accept(email("It is order 42", "ses-2"))
    running = Runner(live.drain, SID)
    running.start()
    assert model.entered.wait(30)  # ses-1's turn holds the session
    version = live.agent.store.head(SID).version

    report = container([]).sweep()  # another container's sweep, while the lease is live
    assert [r.results for r in report.redriven] == [["duplicate"]]  # ses-1 is the running turn's: left to it
    assert report.stale == []  # its lease is live: not a dead turn
    assert live.agent.store.head(SID).version == version  # the sweep wrote nothing to the session
    assert [i.delivery_id for i in live.inbox.pending(SID)] == ["ses-1", "ses-2"]

    model.open()
    running.join(60)
    assert running.raised is None and kinds(running.result) == ["parked", "parked"]
    assert live.inbox.sessions_with_pending() == []
    assert user_texts(live) == ["About the thing we discussed", "It is order 42"]


def test_a_reply_the_child_applied_unmarked_and_pushed_out_of_its_window_stays_a_duplicate_at_the_caller(
    pair_container, small_window
):
    """The child remembers a forwarded reply; more replies push it out of the child's window (a marker); the call
    ends and the caller adopts the child's ids and markers (issue 22); the unmarked item's re-drive then reaches
    the caller alone, which must still answer it a duplicate."""
    replies = [{"say": f"Answer {n}."} for n in range(small_window + 1)]
    first = pair_container(
        [{"call": {"archmax_workflow_lookup": {}}}, TO_REVIEW, {"say": "Please approve."}, *replies]
        + [{"say": "Approved."}, {"say": "The refund is approved."}]
    )
    assert first.agent.workflow.send("s", "go").parked_channel == "decision"
    first.accept(Firing(trigger="manual", message="What is pending?", delivery_id="mail-x"), session_id="s")
    with crash_on_mark(first, "mail-x"), pytest.raises(Crash):
        first.drain("s")  # the child answered mail-x; the item is still pending
    for n in range(1, small_window + 1):
        assert first.send_now("s", f"And now {n}?", delivery_id=f"mail-{n}").disposition == "reply"
    child = first.agent.store.load("s~ask:lookup:1")
    assert "mail-x" not in child.delivery_ids  # left the child's window, as a marker
    assert first.decide_now("s", to="approved").kind == "completed"  # the call is over: the caller adopted
    caller = first.agent.store.load("s")
    assert "mail-x" not in caller.delivery_ids  # so only the adopted marker can answer its re-drive
    assert first.agent.store.get("s", deliveries.marker_path("mail-x")) is not None

    redriver = pair_container([{"say": "A new turn opened by an event applied before."}])
    assert [r.results for r in redriver.sweep().redriven] == [["duplicate"]]
    caller_texts = [m.content for m in redriver.agent.store.load("s").messages if m.role == "user"]
    assert "What is pending?" not in caller_texts


def test_an_undeclared_trigger_accepted_at_a_park_is_refused_once_the_session_finished_and_the_next_item_runs(
    container,
):
    """A firing at an input park is a delivery, whose trigger is never matched, so the accept lets an undeclared one
    in; an item before it finishes the session, so at the drain it would open a turn: refused, marked failed, never
    retried, and the item after it applied."""
    answer = [
        {"call": {"archmax_advance": {"to": "answer", "reason": "names ORD-1"}}, "expect_state": "clarify"},
        {"say": "ORD-1 has shipped."},
    ]
    host = container(FIRST_TURN + answer + [{"say": "Happy to help again.", "expect_state": "answer"}])
    host.accept(email("About the thing we discussed", "ses-0"))
    assert kinds(host.drain(SID)) == ["parked"]
    host.accept(email("It is ORD-1", "ses-1", trigger="email_reply"))
    bad = host.accept(email("Hello?", "ses-bad", trigger="no_such_trigger"), session_id=SID)
    assert bad.disposition == "resume"  # accepted: what it would be now
    host.accept(email("A new question", "ses-2"))

    assert kinds(host.drain(SID)) == ["completed", "UnknownTriggerError", "completed"]
    assert status_of(host, "ses-bad") == "failed"
    assert host.sweep().redriven == []
    assert user_texts(host) == ["About the thing we discussed", "It is ORD-1", "A new question"]
