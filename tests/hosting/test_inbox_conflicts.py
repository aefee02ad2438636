"""Inbox transaction conflicts are retried inside the accept, never a 5xx (issue 21 item 7).

DynamoDB cancels a transaction with ``TransactionConflict`` when another write on the same items is
in flight: two items for one session accepted at once. The put retries on a freshly read counter;
DynamoDB itself is moto, and the conflict is what DynamoDB answers, injected through botocore's own
``before-call`` event on the real client.
"""

from __future__ import annotations

from typing import Any

from archmax.hosting.inbox import DynamoInbox, InboxItem
from archmax.session.firing import Firing

from .conftest import INBOX_TABLE

T0 = "2025-01-01T00:00:00.000Z"


class _Http:
    status_code = 400
    headers: dict[str, str] = {}


def _conflicts(client: Any, times: int) -> list[str]:
    """Make the next ``times`` TransactWriteItems calls answer TransactionCanceledException (TransactionConflict)."""
    answered: list[str] = []

    def before_call(**_: Any) -> Any:
        if len(answered) >= times:
            return None
        answered.append("conflict")
        return _Http(), {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
        }

    client.meta.events.register("before-call.dynamodb.TransactWriteItems", before_call)
    return answered


def _item(delivery_id: str) -> InboxItem:
    return InboxItem(
        session_id="conv-1",
        delivery_id=delivery_id,
        arrived_at=T0,
        firing=Firing(trigger="email_received", message="hi"),
    )


def test_a_put_whose_transaction_conflicts_is_retried_and_lands_once(aws: Any, clock: Any) -> None:
    inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    assert inbox.put(_item("a"))
    answered = _conflicts(aws.dynamodb, 2)
    assert inbox.put(_item("b")) is True  # the accept retried; nothing surfaced
    assert answered == ["conflict", "conflict"]
    assert [(i.delivery_id, i.seq) for i in inbox.pending("conv-1")] == [("a", 1), ("b", 2)]
    assert inbox.put(_item("b")) is False  # and it is still one item: a duplicate stays a duplicate


def test_the_host_accepts_through_a_conflict_with_a_202_not_a_5xx(make_aws_host: Any, aws: Any) -> None:
    host = make_aws_host([{"say": "Hello."}], waker=lambda sid: None)
    _conflicts(aws.dynamodb, 1)
    accepted = host.accept(Firing(trigger="email_received", message="hi", variables={"conversation_id": "c-1"}))
    assert accepted.duplicate is False and host.inbox.pending(accepted.session_id)
