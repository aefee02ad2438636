"""The drain of ``DynamoInbox`` takes no drain lease and rides nothing on the session's commits (issue 24).

Rule source: issue 24 (a transaction bills every item in it twice, and the session item is the big
one: the done mark is its own small write after the turn, and the drain reads the partition again
before it stops), DESIGN.md §3 "Inbox" (an item is done only once applied; nothing put is
stranded), ``Host._drain_unleased`` (the argument). Each test also runs with the store behind a
wrapper with exactly the store protocol's members (issue 23).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from archmax import create_agent
from archmax.errors import DuplicateDeliveryError
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox
from archmax.hosting.inbox_base import DRAIN_KEY
from archmax.models.scripted import ScriptedModel
from archmax.stores.base import SessionStore
from stores.aws.moto_env import CallLog
from stores.protocol_only import protocol_only

from .conftest import INBOX_TABLE, SUPPORT_INBOX
from .test_host import FIRST_TURN, SID, ack, email, user_texts

T0 = "2025-01-01T00:00:00.000Z"


@pytest.fixture(params=["bare", "protocol-only"])
def wrap(request: pytest.FixtureRequest) -> Callable[[SessionStore], SessionStore]:
    """The store as built, or behind the protocol-only wrapper (the test id names which)."""
    return protocol_only if request.param == "protocol-only" else (lambda store: store)


@pytest.fixture
def make_aws_host(aws: Any, clock: Any, wrap: Callable[[SessionStore], SessionStore]) -> Callable[..., Host]:
    """``make_aws_host(model_or_entries, **host_kwargs)``: a Host on the (wrapped) AwsStore + DynamoInbox."""
    store, inbox = wrap(aws.store()), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)

    def build(model: Any, **kwargs: Any) -> Host:
        model = ScriptedModel(model) if isinstance(model, list) else model
        return Host(create_agent(SUPPORT_INBOX, store, model, clock=clock), inbox, **kwargs)

    return build


def _drain_item(aws: Any, sid: str) -> dict[str, Any]:
    key = {"pk": {"S": sid}, "sk": {"S": DRAIN_KEY}}
    return aws.dynamodb.get_item(TableName=INBOX_TABLE, Key=key, ConsistentRead=True).get("Item", {})


class HookedModel:
    """A :class:`ScriptedModel` that runs ``hook()`` inside its first call: something happening mid-turn."""

    def __init__(self, entries: list[dict[str, Any]], hook: Callable[[], None]) -> None:
        self.script, self._hook, self._first = ScriptedModel(entries), hook, True

    def complete(self, request: Any) -> Any:
        if self._first:
            self._first = False
            self._hook()
        return self.script.complete(request)


def _in_another_thread(call: Callable[[], Any]) -> Any:
    """``call()`` on another thread, joined: another container, in a known order."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["raised"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    if "raised" in out:
        raise out["raised"]
    return out["result"]


# ---------------------------------------------------------------- the drain's calls


def test_a_drained_email_is_a_query_a_plain_claim_a_plain_commit_a_mark_and_a_query(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("About the thing we discussed", "ses-1"))
    with CallLog(aws.dynamodb) as log:
        results = host.drain(SID)
    assert [r.kind for r in results] == ["parked"]  # type: ignore[union-attr]
    assert log.calls == [
        "dynamodb.Query",  # the view: counter, drain lease, pending items
        "dynamodb.GetItem",  # the session: none yet (a first email)
        "dynamodb.UpdateItem",  # the claim: the session item alone
        "dynamodb.UpdateItem",  # the park: the session item alone, no transaction
        "dynamodb.UpdateItem",  # the done mark: the inbox item alone
        "dynamodb.Query",  # the view again: nothing arrived, so the drain stops
    ]
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


def test_a_second_drainer_that_read_the_item_before_it_was_applied_marks_it_a_duplicate(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("Hello", "ses-1"))
    item = host.inbox.pending(SID)[0]
    assert not isinstance(host._apply(item), Exception)  # noqa: SLF001 - the first drainer's one item
    second = host._apply(item)  # noqa: SLF001 - a drainer that read the view before the first applied it
    assert isinstance(second, DuplicateDeliveryError)
    assert host.inbox.get(SID, "ses-1").status == "done"
    assert user_texts(host) == ["Hello"]


# ---------------------------------------------------------------- a crash between the commit and the mark


class Crash(Exception):
    """The process dies: not an ArchmaxError, so the drain lets it through with nothing marked."""


def test_a_crash_between_the_turns_commit_and_the_mark_is_answered_duplicate_on_redrive_and_marked(
    make_aws_host, aws, monkeypatch
):
    host = make_aws_host(FIRST_TURN, waker=lambda sid: None)
    host.accept(email("Hello", "ses-1"))

    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash

    with monkeypatch.context() as patched:
        patched.setattr(host.inbox, "mark", crash)
        with pytest.raises(Crash):
            host.drain(SID)
    head = host.agent.store.head(SID)
    assert head.status == "awaiting_input" and head.lease is None  # the turn's commit landed and let go
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-1"]  # not marked

    results = host.sweep().redriven[0].results  # the sweep's re-drive, in a fresh drain
    assert results == ["duplicate"]
    assert host.inbox.get(SID, "ses-1").status == "done"
    assert "DuplicateDeliveryError" in (host.inbox.get(SID, "ses-1").error or "")
    assert host.agent.store.head(SID).version == head.version  # nothing applied twice: no commit at all
    assert user_texts(host) == ["Hello"]


# ---------------------------------------------------------------- items put while the drainer works


def test_an_item_put_during_the_turn_stops_its_own_drainer_and_the_holder_applies_it_going_round(make_aws_host, aws):
    seen: list[Any] = []

    def second_email() -> None:  # its accept wakes its own drainer (another container) mid-turn
        seen.append(_in_another_thread(lambda: host.accept(email("It is order 42", "ses-2"))))

    drained: list[list[Any]] = []
    host = make_aws_host(HookedModel(FIRST_TURN + [ack(1)], second_email), waker=lambda sid: None)
    host._waker = lambda sid: drained.append(host.drain(sid))  # noqa: SLF001 - every wake drains, as Lambda does
    host.accept(email("About the thing we discussed", "ses-1"))

    assert seen[0].disposition == "queued"
    own, holder = drained  # the second email's drainer ended first (inside the turn), then the holder
    assert [type(r) for r in own] == [DuplicateDeliveryError]  # ses-1: the running turn's: left to it, stop
    assert [getattr(r, "kind", r) for r in holder] == ["parked", "parked"]  # ses-1, then ses-2 going round
    assert host.inbox.get(SID, "ses-1").status == "done" and host.inbox.get(SID, "ses-1").error is None
    assert host.inbox.get(SID, "ses-2").status == "done"
    assert host.inbox.sessions_with_pending() == []
    assert user_texts(host) == ["About the thing we discussed", "It is order 42"]


def test_an_item_put_after_the_holder_let_go_is_applied_by_its_own_drainer(make_aws_host, aws, monkeypatch):
    """Put between the holder's commit (the session's lease let go) and its final view: both drainers see it."""
    host = make_aws_host(FIRST_TURN + [ack(1)], waker=lambda sid: None)
    host.accept(email("About the thing we discussed", "ses-1"))
    drained: list[list[Any]] = []
    mark = host.inbox.mark

    def mark_then_accept(session_id: str, delivery_id: str, *args: Any, **kwargs: Any) -> None:
        mark(session_id, delivery_id, *args, **kwargs)
        if delivery_id == "ses-1":  # the holder's turn ended: its view is next
            host._waker = lambda sid: drained.append(_in_another_thread(lambda: host.drain(sid)))  # noqa: SLF001
            host.accept(email("It is order 42", "ses-2"))

    monkeypatch.setattr(host.inbox, "mark", mark_then_accept)
    holder = host.drain(SID)

    assert [getattr(r, "kind", r) for r in drained[0]] == ["parked"]  # ses-2, by its own drainer
    assert [getattr(r, "kind", r) for r in holder] == ["parked"]  # ses-1 only: its last view found nothing
    assert host.inbox.sessions_with_pending() == []
    assert user_texts(host) == ["About the thing we discussed", "It is order 42"]
