"""The ``DynamoInbox``'s item shapes: keys, sizes, and the two writes of one put.

Rule source: DESIGN.md §3 "Inbox" (a put is one transaction: the create-only item AND the counter
bump conditional on the value read); see :mod:`archmax.hosting.inbox_dynamo` for the table layout.
"""

from __future__ import annotations

from typing import Any

from archmax.errors import InvalidEventError
from archmax.hosting.inbox_base import DRAIN_KEY, InboxItem

PENDING_INDEX = "pending-items"
PENDING_SHARD = "p"
MAX_ITEM_BYTES = 400 * 1024
"""DynamoDB's item size limit (attribute names and values, UTF-8): an inline firing must fit in one item."""
INLINE_MAX_BYTES = 256 * 1024
"""With a bucket, an item larger than this keeps its firing in S3 (well under :data:`MAX_ITEM_BYTES`,
so an inline item never meets the limit and stays cheap to read: a query reads 1 MB per page)."""


def put_writes(
    table_name: str, item: InboxItem, seen: int, body: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``Put`` (create-only item, ``seq = seen + 1``) and ``Update`` (counter ``seen`` -> ``seen + 1``) of one put.

    Args:
        table_name: The inbox table.
        item: The item as accepted.
        seen: The counter the put expects (0: no counter yet).
        body: ``body_key``/``body_sha256`` attributes when the firing was spilled to S3, else ``{}``.
    """
    stored = item.model_copy(update={"seq": seen + 1, "status": "pending", "error": None})
    bump: dict[str, Any] = {
        "TableName": table_name,
        "Key": item_key(item.session_id, DRAIN_KEY),
        "UpdateExpression": "SET #a = :next",
        "ExpressionAttributeNames": {"#a": "arrivals"},
        "ExpressionAttributeValues": {":next": {"N": str(seen + 1)}},
        "ConditionExpression": "attribute_not_exists(#a)",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",  # a moved counter comes back: no read
    }
    if seen:
        bump["ConditionExpression"] = "#a = :seen"
        bump["ExpressionAttributeValues"][":seen"] = {"N": str(seen)}
    create = {
        "TableName": table_name,
        "Item": {
            **item_key(item.session_id, item_sk(item.delivery_id)),
            "item": {"S": stored.model_dump_json(exclude={"firing"} if body else None)},
            **body,
            "status": {"S": "pending"},
            "seq": {"N": str(stored.seq)},
            "arrived_at": {"S": stored.arrived_at},
            "pending_shard": {"S": PENDING_SHARD},
        },
        "ConditionExpression": "attribute_not_exists(sk)",
    }
    return create, bump


def item_bytes(item: InboxItem) -> int:
    """The size DynamoDB would count for ``item`` stored inline (with room for the counters)."""
    body = item.model_copy(update={"seq": 10**12}).model_dump_json()
    size = sum(
        len(text.encode("utf-8"))
        for text in (item.session_id, item_sk(item.delivery_id), body, item.arrived_at, PENDING_SHARD)
    )
    return size + 128  # attribute names, status, seq


def refuse_oversize(item: InboxItem, size: int) -> None:
    """Refuse a firing whose stored item would exceed :data:`MAX_ITEM_BYTES` (an inbox without a bucket).

    Raises:
        InvalidEventError: always (413).
    """
    raise InvalidEventError(
        f"the firing takes {size} bytes as an inbox item, over the {MAX_ITEM_BYTES} one item holds: "
        "send a smaller message, fewer variables or smaller files",
        status=413,
        session_id=item.session_id,
    )


def item_sk(delivery_id: str) -> str:
    """An item's sort key: prefixed, so no delivery id (an email's may start with '~') meets :data:`DRAIN_KEY`."""
    return "d#" + delivery_id


def item_key(session_id: str, sk: str) -> dict[str, Any]:
    """The table key of ``(session_id, sk)``."""
    return {"pk": {"S": session_id}, "sk": {"S": sk}}
