"""The drain's done marks and arrivals check ride the session's commits (AwsStore + DynamoInbox, issues 10, 24).

Rule source: issue 10 ("drain = pending items and arrivals counter in one Query; mark-done in the
turn's transaction"), issue 24 (nothing rides the claim: it is one plain conditional write, the
session's own lease keeping a second drainer out, since a transaction bills the session item
twice), DESIGN.md §3 "Inbox" (an item is done only once applied; the lease holder lets go only when
nothing new arrived), ``archmax.stores.riders``. Each test also runs with the store behind a wrapper
with exactly the store protocol's members (issue 23): riders are a ``commit`` argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from archmax import create_agent
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox, InboxItem
from archmax.hosting.inbox_base import DRAIN_KEY
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import Firing
from archmax.session.records import SessionStatus
from archmax.stores.base import SessionStore
from archmax.stores.riders import Riders
from stores.aws.moto_env import CallLog
from stores.aws.records import record
from stores.protocol_only import protocol_only

from .conftest import INBOX_TABLE, SUPPORT_INBOX
from .test_host import FIRST_TURN, SID, email, user_texts

T0 = "2025-01-01T00:00:00.000Z"


@pytest.fixture(params=["bare", "protocol-only"])
def wrap(request: pytest.FixtureRequest) -> Callable[[SessionStore], SessionStore]:
    """The store as built, or behind the protocol-only wrapper (the test id names which)."""
    return protocol_only if request.param == "protocol-only" else (lambda store: store)


@pytest.fixture
def make_aws_host(aws: Any, clock: Any, wrap: Callable[[SessionStore], SessionStore]) -> Callable[..., Host]:
    """``make_aws_host(entries, **host_kwargs)``: a Host on the (wrapped) AwsStore + DynamoInbox."""
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)

    def build(entries: list[dict[str, Any]], **kwargs: Any) -> Host:
        return Host(create_agent(SUPPORT_INBOX, store, ScriptedModel(entries), clock=clock), inbox, **kwargs)

    return build


def _drain_item(aws: Any, sid: str) -> dict[str, Any]:
    key = {"pk": {"S": sid}, "sk": {"S": DRAIN_KEY}}
    return aws.dynamodb.get_item(TableName=INBOX_TABLE, Key=key, ConsistentRead=True).get("Item", {})


def _put(inbox: DynamoInbox, sid: str, delivery_id: str) -> None:
    inbox.put(
        InboxItem(session_id=sid, delivery_id=delivery_id, arrived_at=T0, firing=Firing(trigger="t", message="m"))
    )


def _ended(sid: str, version: int, delivery_id: str) -> Any:
    rec = record(sid, version, status=SessionStatus.AWAITING_INPUT)
    rec.delivery_ids = [delivery_id]
    return rec


# ---------------------------------------------------------------- the drain


def test_a_drained_email_costs_one_query_a_plain_claim_and_one_transaction_that_marks_it(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("About the thing we discussed", "ses-1"))
    with CallLog(aws.dynamodb) as log:
        results = host.drain(SID)
    assert [r.kind for r in results] == ["parked"]  # type: ignore[union-attr]
    assert log.calls[0] == "dynamodb.Query" and log.count("dynamodb.Query") == 1
    assert log.count("dynamodb.UpdateItem") == 1  # the claim: the session item alone
    assert log.count("dynamodb.TransactWriteItems") == 1  # the park, the done mark and the counter check
    assert host.inbox.get(SID, "ses-1").status == "done"
    assert "lease_owner" not in _drain_item(aws, SID)  # no drain lease was taken
    assert user_texts(host) == ["About the thing we discussed"]


def test_a_drain_finds_the_lease_held_by_a_plain_drainer_and_leaves_the_item_pending(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("Hello", "ses-1"))
    assert host.inbox.try_acquire(SID, "someone-else", T0, 900)
    assert host.drain(SID) == []
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-1"]
    assert host.agent.sessions.get(SID) is None


def test_a_second_drainer_loses_the_claim_to_the_first_and_the_firing_is_applied_once(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("Hello", "ses-1"))
    item = host.inbox.pending(SID)[0]
    first = host.inbox.riders(SID, "ses-1", seen=1)
    assert not isinstance(host._apply(item, first), Exception) and first.claimed and first.done
    second = host.inbox.riders(SID, "ses-1", seen=1)  # a drainer that read the view before the first applied it
    assert type(host._apply(item, second)).__name__ == "DuplicateDeliveryError"
    assert not second.claimed and not second.mid_turn  # nobody holds the session: marked done as a duplicate
    assert host.inbox.get(SID, "ses-1").status == "done"
    assert user_texts(host) == ["Hello"]


# ---------------------------------------------------------------- the store's transaction


def test_the_claim_is_one_plain_conditional_write_and_is_noted_on_the_riders(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", seen=1)
    with CallLog(aws.dynamodb) as log:
        store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    assert log.calls == ["dynamodb.UpdateItem"]
    assert riders.claimed and not riders.done
    assert store.head("s-1").version == 1
    assert inbox.get("s-1", "d-1").status == "pending"


def test_the_turns_last_commit_marks_the_item_done_and_checks_the_counter_in_one_transaction(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", seen=1)
    store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    with CallLog(aws.dynamodb) as log:
        store.commit("s-1", _ended("s-1", 2, "d-1"), 1, lease_owner="engine", riders=riders)
    assert log.calls == ["dynamodb.TransactWriteItems"]
    assert riders.done
    assert inbox.get("s-1", "d-1").status == "done"
    assert store.head("s-1").version == 2


def test_an_item_that_arrived_during_the_turn_fails_the_check_and_the_commit_still_lands(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", seen=1)
    store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    _put(inbox, "s-1", "d-2")  # the counter moves on: the check fails
    store.commit("s-1", _ended("s-1", 2, "d-1"), 1, lease_owner="engine", riders=riders)
    assert store.head("s-1").version == 2
    assert not riders.done  # the mark did not ride: the drain writes it itself and goes round
    assert inbox.get("s-1", "d-1").status == "pending"


def test_a_done_rider_for_an_item_not_last_in_the_view_checks_no_counter(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", seen=None)
    store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    _put(inbox, "s-1", "d-2")
    store.commit("s-1", _ended("s-1", 2, "d-1"), 1, lease_owner="engine", riders=riders)
    assert riders.done and inbox.get("s-1", "d-1").status == "done"
    assert [i.delivery_id for i in inbox.pending("s-1")] == ["d-2"]


# ---------------------------------------------------------------- which commit carries what


def test_riders_ride_only_their_sessions_claim_and_its_ending_commit_that_applied_the_firing():
    assert Riders("s-1", "d-1").for_commit(record("s-1", 1, lease_owner="e")) == ("claim", [])  # noted, plain
    riders = Riders("s-1", "d-1", on_claim=[{"claim": 1}], on_done=[{"done": 1}])
    assert riders.for_commit(record("child", 1, lease_owner="e")) is None  # a sub-workflow's session
    assert riders.for_commit(record("s-1", 1, lease_owner="e")) == ("claim", [{"claim": 1}])
    riders.landed("claim")
    assert riders.for_commit(record("s-1", 2, lease_owner="e")) is None  # a mid-turn commit
    assert riders.for_commit(record("s-1", 3)) is None  # running without a lease: a crash's release
    assert riders.for_commit(record("s-1", 3, status=SessionStatus.AWAITING_INPUT)) is None  # d-1 not applied
    assert riders.for_commit(_ended("s-1", 3, "d-1")) == ("done", [{"done": 1}])
    riders.landed("done")
    assert riders.for_commit(_ended("s-1", 4, "d-1")) is None


class LoseFirstTransactionAnswer:
    """A ``before-send`` hook: the first TransactWriteItems reaches moto (applied), its answer is lost.

    botocore then sends it again, as it does in production; moto (unlike DynamoDB) ignores the
    request token, so the retry fails its conditions against the write that already landed.
    """

    def __init__(self, client: Any) -> None:
        from botocore.httpsession import URLLib3Session

        self._client, self._http, self.fired = client, URLLib3Session(), 0

    def __enter__(self) -> LoseFirstTransactionAnswer:
        self._client.meta.events.register("before-send.dynamodb", self._send, unique_id=f"lose-{id(self)}")
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.meta.events.unregister("before-send.dynamodb", unique_id=f"lose-{id(self)}")

    def _send(self, request: Any, **_: Any) -> None:
        from botocore.exceptions import ReadTimeoutError

        target = request.headers.get("X-Amz-Target") or b""
        target = target.decode() if isinstance(target, bytes) else target
        if self.fired or not target.endswith(".TransactWriteItems"):
            return None
        self.fired += 1
        self._http.send(request)
        raise ReadTimeoutError(endpoint_url=request.url)


def test_a_turns_last_commit_whose_answer_was_lost_knows_its_mark_landed(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", seen=1)
    store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    with LoseFirstTransactionAnswer(aws.dynamodb) as lost:
        store.commit("s-1", _ended("s-1", 2, "d-1"), 1, lease_owner="engine", riders=riders)
    assert lost.fired == 1
    assert riders.done  # the retry's conflict was our own landed write: its riders landed with it
    assert store.head("s-1").version == 2
    assert inbox.get("s-1", "d-1").status == "done"
