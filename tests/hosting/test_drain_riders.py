"""The drain's lease and done marks ride the session's commits (AwsStore + DynamoInbox, issue 10).

Rule source: issue 10 ("drain = lease, pending items and arrivals counter in one Query; mark-done +
release in one transaction"), DESIGN.md §3 "Inbox" (an item is done only once applied; the lease goes
only when nothing new arrived), ``archmax.stores.riders``. Each test also runs with the store behind
a wrapper with exactly the store protocol's members (issue 23): riders are a ``commit`` argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from archmax import create_agent
from archmax.errors import CommitConflictError
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


def test_a_drained_email_costs_one_query_and_its_mark_and_release_ride_the_turns_commits(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("About the thing we discussed", "ses-1"))
    with CallLog(aws.dynamodb) as log:
        results = host.drain(SID)
    assert [r.kind for r in results] == ["parked"]  # type: ignore[union-attr]
    assert log.count("dynamodb.Query") == 1
    assert log.count("dynamodb.TransactWriteItems") == 2  # the claim (+ drain lease), the park (+ mark, release)
    assert log.calls[0] == "dynamodb.Query"
    assert host.inbox.get(SID, "ses-1").status == "done"
    assert "lease_owner" not in _drain_item(aws, SID)
    assert user_texts(host) == ["About the thing we discussed"]


def test_a_drain_finds_the_lease_held_by_another_drainer_and_leaves_the_item_pending(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("Hello", "ses-1"))
    assert host.inbox.try_acquire(SID, "someone-else", T0, 900)
    assert host.drain(SID) == []
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-1"]
    assert host.agent.sessions.get(SID) is None


# ---------------------------------------------------------------- the store's transaction


def test_a_claim_whose_drain_lease_rider_fails_is_a_conflict_and_writes_nothing(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    assert inbox.try_acquire("s-1", "other", T0, 900)
    riders = inbox.riders("s-1", "d-1", owner="me", now=T0, ttl_s=900, release_seen=1)
    with pytest.raises(CommitConflictError):
        store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    assert store.load("s-1") is None
    assert not riders.claimed
    assert _drain_item(aws, "s-1")["lease_owner"]["S"] == "other"


def test_the_turns_last_commit_marks_the_item_done_and_lets_the_lease_go_in_one_transaction(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", owner="me", now=T0, ttl_s=900, release_seen=1)
    store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)  # the claim takes the drain lease
    assert riders.claimed and _drain_item(aws, "s-1")["lease_owner"]["S"] == "me"
    with CallLog(aws.dynamodb) as log:
        store.commit("s-1", _ended("s-1", 2, "d-1"), 1, lease_owner="engine", riders=riders)
    assert log.calls == ["dynamodb.TransactWriteItems"]
    assert riders.done
    assert inbox.get("s-1", "d-1").status == "done"
    assert "lease_owner" not in _drain_item(aws, "s-1")
    assert store.head("s-1").version == 2


def test_an_item_that_arrived_during_the_turn_keeps_the_lease_and_the_commit_still_lands(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", owner="me", now=T0, ttl_s=900, release_seen=1)
    store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    _put(inbox, "s-1", "d-2")  # the counter moves on: the release's condition fails
    store.commit("s-1", _ended("s-1", 2, "d-1"), 1, lease_owner="engine", riders=riders)
    assert store.head("s-1").version == 2
    assert not riders.done  # neither the mark nor the release: the drain writes them itself
    assert inbox.get("s-1", "d-1").status == "pending"
    assert _drain_item(aws, "s-1")["lease_owner"]["S"] == "me"


# ---------------------------------------------------------------- which commit carries what


def test_riders_ride_only_their_sessions_claim_and_its_ending_commit_that_applied_the_firing():
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


def test_a_claim_whose_answer_was_lost_knows_it_took_the_drain_lease(aws, clock, wrap):
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    _put(inbox, "s-1", "d-1")
    riders = inbox.riders("s-1", "d-1", owner="me", now=T0, ttl_s=900, release_seen=1)
    with LoseFirstTransactionAnswer(aws.dynamodb) as lost:
        store.commit("s-1", record("s-1", 1, lease_owner="engine"), 0, riders=riders)
    assert lost.fired == 1
    assert riders.claimed  # the retry's conflict was our own landed write: its riders landed with it
    assert store.head("s-1").version == 1
    assert _drain_item(aws, "s-1")["lease_owner"]["S"] == "me"
