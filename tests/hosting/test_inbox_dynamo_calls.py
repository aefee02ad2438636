"""DynamoInbox's round trips on the Lambda path (issue 10): a warm put is one transaction, and the drain
reads the arrivals counter and the pending items in one query, counter first.

Rule source: DESIGN.md §3 "Inbox" (a put is create-only + counter bump; release only if no item
arrived since the counter was read), issue 10 ("drain = lease, pending items and arrivals counter
in one Query of the session's partition").
"""

from __future__ import annotations

from typing import Any

from archmax.hosting.inbox import DynamoInbox, InboxItem
from archmax.session.firing import Firing
from stores.aws.moto_env import CallLog

from .conftest import INBOX_TABLE

T0 = "2025-01-01T00:00:00.000Z"


def _item(delivery_id: str, sid: str = "conv-1") -> InboxItem:
    return InboxItem(
        session_id=sid, delivery_id=delivery_id, arrived_at=T0, firing=Firing(trigger="email_received", message="hi")
    )


def test_a_put_on_a_new_session_or_a_session_this_instance_saw_is_one_transaction(aws: Any, clock: Any) -> None:
    inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    with CallLog(aws.dynamodb) as log:
        assert inbox.put(_item("a"), new_session=True) and inbox.put(_item("b"))
    assert log.calls == ["dynamodb.TransactWriteItems"] * 2
    assert [i.seq for i in inbox.pending("conv-1")] == [1, 2]


def test_a_put_on_a_session_this_instance_never_saw_reads_the_counter_first_and_cancels_nothing(
    aws: Any, clock: Any
) -> None:
    first = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    second = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)  # another container
    first.put(_item("a"))
    with CallLog(aws.dynamodb) as log:
        assert second.put(_item("b"))
    assert log.calls == ["dynamodb.GetItem", "dynamodb.TransactWriteItems"]  # issue 24: no cancelled transaction
    assert [(i.delivery_id, i.seq) for i in second.pending("conv-1")] == [("a", 1), ("b", 2)]


def test_a_put_by_an_instance_whose_counter_is_stale_reads_it_and_keeps_the_sequence(aws: Any, clock: Any) -> None:
    first = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    second = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    first.put(_item("a"))
    second.put(_item("b"))  # never saw the counter: read it, 1
    first.put(_item("c"))  # guessed 1, lost, read 2
    assert [(i.delivery_id, i.seq) for i in first.pending("conv-1")] == [("a", 1), ("b", 2), ("c", 3)]
    assert not second.put(_item("a"))  # a duplicate is still a duplicate, whatever the guess
    assert first.arrivals("conv-1") == 3


def test_arrivals_and_pending_come_from_one_query_and_match_the_separate_reads(aws: Any, clock: Any) -> None:
    inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    for d in ("a", "b", "c"):
        inbox.put(_item(d))
    inbox.mark("conv-1", "b", "done")
    with CallLog(aws.dynamodb) as log:
        seen, items = inbox.arrivals_and_pending("conv-1")
    assert log.calls == ["dynamodb.Query"]
    assert (seen, [i.delivery_id for i in items]) == (inbox.arrivals("conv-1"), ["a", "c"])
    assert inbox.arrivals_and_pending("nobody") == (0, [])
