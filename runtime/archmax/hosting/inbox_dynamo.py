"""``DynamoInbox``: the inbox in its own DynamoDB table (``InboxTable`` in template.yaml).

Rule source: DESIGN.md §3 "Inbox" and §3 Storage ("no table scans on any hot path"); issue 4 item 2.

Table: ``pk`` = session id (HASH), ``sk`` = ``d#<delivery id>`` (RANGE). Per session:

* one item per firing: ``item`` (the :class:`InboxItem` as JSON), ``status``, ``seq``, ``arrived_at``,
  and — only while pending — ``pending_shard`` (the key of the sparse ``pending-items`` GSI, so the
  sweep's re-drive queries waiting items and never scans); done and failed items get a ``ttl``;
* the item ``sk = "~drain"``: ``arrivals`` (the counter every put bumps), ``lease_owner`` and
  ``lease_expires_at`` (the drain lease).

A put is one transaction: the create-only item AND the counter bump conditional on the value read,
so ``seq`` equals the counter and a drainer that saw the old counter cannot let go without seeing
the new item. boto3/botocore are imported only when no client is injected or when an error is mapped.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from archmax.clock import Clock, SystemClock
from archmax.errors import InvalidEventError, StoreError
from archmax.hosting.inbox_base import DRAIN_KEY, InboxItem, ItemStatus, lease_expiry
from archmax.session.ids import validate_delivery_id, validate_session_id

PENDING_INDEX = "pending-items"
PENDING_SHARD = "p"
MAX_ITEM_BYTES = 400 * 1024
"""DynamoDB's item size limit (attribute names and values, UTF-8): a firing must fit in one item."""
_NAMES = {"#o": "lease_owner", "#e": "lease_expires_at", "#a": "arrivals"}


class _ConditionFailed(Exception):
    """A DynamoDB condition (or one of a transaction's conditions) did not hold."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = reasons


class DynamoInbox:
    """An :class:`~archmax.hosting.inbox_base.Inbox` on a DynamoDB table with the template's key schema.

    Args:
        table_name: The ``InboxTable``'s name.
        client: A boto3 DynamoDB client (built with ``boto3.client("dynamodb")`` when ``None``).
        clock: For the ``ttl`` of done items (default: the wall clock).
        done_ttl_days: Days a done or failed item is kept before TTL removes it; ``None`` keeps it.
        max_put_retries: Attempts of a put that lost the counter race to another put.

    Raises:
        StoreError: any AWS failure other than a condition (every method).
    """

    def __init__(
        self,
        table_name: str,
        *,
        client: Any = None,
        clock: Clock | None = None,
        done_ttl_days: int | None = 7,
        max_put_retries: int = 50,
    ) -> None:
        if client is None:
            import boto3  # only when the host injected nothing

            client = boto3.client("dynamodb")
        self.table_name = table_name
        self._ddb = client
        self._clock = clock or SystemClock()
        self.done_ttl_days = done_ttl_days
        self._max_put_retries = max_put_retries

    # ------------------------------------------------------------------ plumbing

    def _call(self, method: str, _table: bool = True, **params: Any) -> Any:
        if _table:
            params["TableName"] = self.table_name
        try:
            return getattr(self._ddb, method)(**params)
        except Exception as exc:
            from botocore.exceptions import BotoCoreError, ClientError

            if isinstance(exc, ClientError):
                code = str(exc.response.get("Error", {}).get("Code", ""))
                if code == "ConditionalCheckFailedException":
                    raise _ConditionFailed(["ConditionalCheckFailed"]) from exc
                if code == "TransactionCanceledException":
                    reasons = [
                        str(r.get("Code", "None")) for r in exc.response.get("CancellationReasons", [])
                    ]
                    if "ConditionalCheckFailed" in reasons:
                        raise _ConditionFailed(reasons) from exc
                raise StoreError(f"inbox {method} failed: {code or 'unknown error'}: {exc}") from exc
            if isinstance(exc, BotoCoreError):
                raise StoreError(f"inbox {method} failed: {exc}") from exc
            raise

    def _drain_item(self, session_id: str) -> dict[str, Any]:
        answer = self._call(
            "get_item",
            Key=_key(session_id, DRAIN_KEY),
            ConsistentRead=True,
            ProjectionExpression="#a",
            ExpressionAttributeNames={"#a": "arrivals"},
        )
        return answer.get("Item") or {}

    # ------------------------------------------------------------------ protocol

    def put(self, item: InboxItem) -> bool:
        """See :meth:`Inbox.put`: one transaction (create-only item + conditional counter bump).

        Raises:
            InvalidSessionIdError, InvalidDeliveryIdError, StoreError (also when 50 attempts lost the counter race).
            InvalidEventError: 413 when the firing cannot fit in one DynamoDB item (checked before any
                write: retrying the same firing could never succeed, so it is a caller's error, not a 503).
        """
        validate_session_id(item.session_id)
        validate_delivery_id(item.delivery_id, session_id=item.session_id)
        _check_fits(item)
        for _ in range(self._max_put_retries):
            seen = int(self._drain_item(item.session_id).get("arrivals", {"N": "0"})["N"])
            stored = item.model_copy(update={"seq": seen + 1, "status": "pending", "error": None})
            bump: dict[str, Any] = {
                "TableName": self.table_name,
                "Key": _key(item.session_id, DRAIN_KEY),
                "UpdateExpression": "SET #a = :next",
                "ExpressionAttributeNames": {"#a": "arrivals"},
                "ExpressionAttributeValues": {":next": {"N": str(seen + 1)}},
                "ConditionExpression": "attribute_not_exists(#a)",
            }
            if seen:
                bump["ConditionExpression"] = "#a = :seen"
                bump["ExpressionAttributeValues"][":seen"] = {"N": str(seen)}
            create = {
                "TableName": self.table_name,
                "Item": {
                    **_key(item.session_id, _item_sk(item.delivery_id)),
                    "item": {"S": stored.model_dump_json()},
                    "status": {"S": "pending"},
                    "seq": {"N": str(stored.seq)},
                    "arrived_at": {"S": stored.arrived_at},
                    "pending_shard": {"S": PENDING_SHARD},
                },
                "ConditionExpression": "attribute_not_exists(sk)",
            }
            try:
                self._transact([{"Put": create}, {"Update": bump}])
            except _ConditionFailed as failed:
                if failed.reasons and failed.reasons[0] == "ConditionalCheckFailed":
                    return False  # the delivery id is there already: a duplicate
                continue  # another put bumped the counter first: read it again
            return True
        raise StoreError(
            f"inbox put for session '{item.session_id}' lost the counter race {self._max_put_retries} times"
        )

    def _transact(self, items: list[dict[str, Any]]) -> None:
        self._call("transact_write_items", _table=False, TransactItems=items)

    def pending(self, session_id: str) -> list[InboxItem]:
        """See :meth:`Inbox.pending`: one strongly consistent query of the session's partition."""
        validate_session_id(session_id)
        items: list[InboxItem] = []
        params: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk",
            "FilterExpression": "attribute_exists(pending_shard)",
            "ExpressionAttributeValues": {":pk": {"S": session_id}},
            "ConsistentRead": True,
        }
        while True:
            answer = self._call("query", **params)
            items.extend(_item_of(raw) for raw in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                break
            params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return sorted(items, key=InboxItem.order_key)

    def get(self, session_id: str, delivery_id: str) -> InboxItem | None:
        """See :meth:`Inbox.get`."""
        validate_session_id(session_id)
        answer = self._call("get_item", Key=_key(session_id, _item_sk(delivery_id)), ConsistentRead=True)
        raw = answer.get("Item")
        return _item_of(raw) if raw and "item" in raw else None

    def mark(self, session_id: str, delivery_id: str, status: ItemStatus, error: str | None = None) -> None:
        """See :meth:`Inbox.mark`; a done/failed item leaves the GSI and gets a ``ttl``.

        Raises:
            KeyError: no such item (a host bug). StoreError.
        """
        validate_session_id(session_id)
        values: dict[str, Any] = {
            ":s": {"S": status},
            ":e": {"S": error} if error is not None else {"NULL": True},
        }
        sets = ["#st = :s", "#er = :e"]
        names = {"#st": "status", "#er": "error"}
        removes: list[str] = []
        if status == "pending":
            sets.append("pending_shard = :p")
            values[":p"] = {"S": PENDING_SHARD}
            removes.append("#tt")
            names["#tt"] = "ttl"
        else:
            removes.append("pending_shard")
            if self.done_ttl_days is not None:
                expires = self._clock.now() + timedelta(days=self.done_ttl_days)
                sets.append("#tt = :t")
                names["#tt"] = "ttl"
                values[":t"] = {"N": str(int(expires.timestamp()))}
        try:
            self._call(
                "update_item",
                Key=_key(session_id, _item_sk(delivery_id)),
                UpdateExpression=f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
                ConditionExpression="attribute_exists(sk)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except _ConditionFailed:
            raise KeyError(f"no inbox item '{delivery_id}' for session '{session_id}'") from None

    def sessions_with_pending(self) -> list[str]:
        """See :meth:`Inbox.sessions_with_pending`: a query of the sparse GSI, never a scan."""
        ids: set[str] = set()
        params: dict[str, Any] = {
            "IndexName": PENDING_INDEX,
            "KeyConditionExpression": "pending_shard = :p",
            "ExpressionAttributeValues": {":p": {"S": PENDING_SHARD}},
            "ProjectionExpression": "pk",
        }
        while True:
            answer = self._call("query", **params)
            ids.update(raw["pk"]["S"] for raw in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                break
            params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return sorted(ids)

    def try_acquire(self, session_id: str, owner: str, now: str, ttl_s: float) -> bool:
        """See :meth:`Inbox.try_acquire`: one conditional update of the ``~drain`` item."""
        validate_session_id(session_id)
        try:
            self._call(
                "update_item",
                Key=_key(session_id, DRAIN_KEY),
                UpdateExpression="SET #o = :o, #e = :exp",
                ConditionExpression="attribute_not_exists(#o) OR #o = :o OR #e <= :now",
                ExpressionAttributeNames={"#o": "lease_owner", "#e": "lease_expires_at"},
                ExpressionAttributeValues={
                    ":o": {"S": owner},
                    ":exp": {"S": lease_expiry(now, ttl_s)},
                    ":now": {"S": now},
                },
            )
        except _ConditionFailed:
            return False
        return True

    def arrivals(self, session_id: str) -> int:
        """See :meth:`Inbox.arrivals`: one strongly consistent read."""
        validate_session_id(session_id)
        return int(self._drain_item(session_id).get("arrivals", {"N": "0"})["N"])

    def release(self, session_id: str, owner: str, seen_arrivals: int) -> bool:
        """See :meth:`Inbox.release`: ONE conditional write (owner matches AND arrivals unchanged)."""
        validate_session_id(session_id)
        counter = "#a = :seen" if seen_arrivals else "attribute_not_exists(#a)"
        values: dict[str, Any] = {":o": {"S": owner}}
        if seen_arrivals:
            values[":seen"] = {"N": str(seen_arrivals)}
        try:
            self._call(
                "update_item",
                Key=_key(session_id, DRAIN_KEY),
                UpdateExpression="REMOVE #o, #e",
                ConditionExpression=f"#o = :o AND {counter}",
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues=values,
            )
        except _ConditionFailed:
            return False
        return True


def _check_fits(item: InboxItem) -> None:
    """Refuse a firing whose stored item would exceed :data:`MAX_ITEM_BYTES` (with room for the counters)."""
    body = item.model_copy(update={"seq": 10**12}).model_dump_json()
    size = sum(
        len(text.encode("utf-8"))
        for text in (item.session_id, _item_sk(item.delivery_id), body, item.arrived_at, PENDING_SHARD)
    )
    size += 128  # attribute names, status, seq
    if size > MAX_ITEM_BYTES:
        raise InvalidEventError(
            f"the firing takes {size} bytes as an inbox item, over the {MAX_ITEM_BYTES} one item holds: "
            "send a smaller message, fewer variables or smaller files",
            status=413,
            session_id=item.session_id,
        )


def _item_sk(delivery_id: str) -> str:
    """An item's sort key: prefixed, so no delivery id (an email's may start with '~') meets :data:`DRAIN_KEY`."""
    return "d#" + delivery_id


def _key(session_id: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": session_id}, "sk": {"S": sk}}


def _item_of(raw: dict[str, Any]) -> InboxItem:
    item = InboxItem.model_validate(json.loads(raw["item"]["S"]))
    error = raw.get("error", {}).get("S")
    return item.model_copy(update={"status": raw.get("status", {}).get("S", item.status), "error": error})
