"""``DynamoInbox``: the inbox in its own DynamoDB table (``InboxTable`` in template.yaml).

Rule source: DESIGN.md §3 "Inbox" and §3 Storage ("no table scans on any hot path"); issue 4 item 2.

Table: ``pk`` = session id (HASH), ``sk`` = ``d#<delivery id>`` (RANGE). Per session:

* one item per firing: ``item`` (the :class:`InboxItem` as JSON), ``status``, ``seq``, ``arrived_at``,
  and — only while pending — ``pending_shard`` (the key of the sparse ``pending-items`` GSI, so the
  sweep's re-drive queries waiting items and never scans); done and failed items get a ``ttl``;
* the item ``sk = "~drain"``: ``arrivals`` (the counter every put bumps), ``lease_owner`` and
  ``lease_expires_at`` (the drain lease of a plain drain; the host's drain of this inbox takes
  none, ``InboxCapability.SESSION_LEASE_DRAIN``: the session's own lease keeps a second drainer out).

A put is one transaction: the create-only item AND the counter bump conditional on the value read,
so ``seq`` equals the counter and a drainer that saw the old counter cannot let go without seeing
the new item. boto3/botocore are imported only when no client is injected or when an error is mapped.

Large firings (the claim check): an item whose serialised firing would take more than
:data:`INLINE_MAX_BYTES` (an email with a 1 MB attachment: DynamoDB holds at most 400 KB per item)
is written in two steps when the inbox has a bucket: first the firing to S3, create-only
(:mod:`archmax.hosting.inbox_bodies`), then the same transaction as above with ``item`` holding
the InboxItem *without* its firing plus ``body_key`` and ``body_sha256``. A failed S3 write raises
before any DynamoDB write; :meth:`DynamoInbox.pending` and :meth:`DynamoInbox.get` read the body
back, so ``InboxItem.firing`` is always whole, and a missing body is a :class:`StoreError` (the
item stays pending, and the drain is retried). Without a bucket a firing over the item limit is
refused with a 413, as before.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import OrderedDict
from datetime import timedelta
from typing import Any, cast

from archmax.clock import Clock, SystemClock
from archmax.errors import StoreError
from archmax.hosting.inbox_base import (
    DRAIN_KEY,
    DrainView,
    InboxCapability,
    InboxItem,
    ItemStatus,
    lease_expiry,
)
from archmax.hosting.inbox_bodies import BodyStore
from archmax.hosting.inbox_dynamo_items import (
    INLINE_MAX_BYTES,
    MAX_ITEM_BYTES,
    PENDING_INDEX,
    PENDING_SHARD,
    item_bytes,
    item_key,
    item_sk,
    put_writes,
    refuse_oversize,
)
from archmax.session.ids import validate_delivery_id, validate_session_id

_NAMES = {"#o": "lease_owner", "#e": "lease_expires_at", "#a": "arrivals"}


class _Conflict(Exception):  # noqa: N818 - a signal inside this module, never raised to callers
    """A transaction cancelled by ``TransactionConflict``: another write on the same items was in flight."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = reasons


_CONFLICT_PAUSE_S = 0.05
"""Longest pause before retrying a put whose transaction conflicted (seconds, jittered from 0)."""


class _ConditionFailed(Exception):
    """A DynamoDB condition (or one of a transaction's conditions) did not hold."""

    def __init__(self, reasons: list[str], items: list[dict[str, Any] | None] | None = None) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = reasons
        self.items = items or [None] * len(reasons)  # per item: what it found (ALL_OLD), when asked


class DynamoInbox:
    """An :class:`~archmax.hosting.inbox_base.Inbox` on a DynamoDB table with the template's key schema.

    Args:
        table_name: The ``InboxTable``'s name.
        client: A boto3 DynamoDB client (built with ``boto3.client("dynamodb")`` when ``None``).
        clock: For the ``ttl`` of done items (default: the wall clock).
        done_ttl_days: Days a done or failed item is kept before TTL removes it; ``None`` keeps it.
        max_put_retries: Attempts of a put that lost the counter race to another put.
        s3_client: A boto3 S3 client for large firings' bodies (built with ``boto3.client("s3")``
            when ``None`` and a bucket is given).
        bucket: Where firings over ``inline_max_bytes`` are kept (``SESSIONS_BUCKET``); ``None``
            keeps every firing inline and refuses one over DynamoDB's item limit (413).
        prefix: The key root of those bodies (``SESSIONS_PREFIX``); they go under ``<prefix>/.inbox/``.
        inline_max_bytes: The largest item (bytes, as DynamoDB counts them) kept inline when a bucket is set.

    Raises:
        StoreError: any AWS failure other than a condition (every method).
    """

    capabilities = frozenset({InboxCapability.SESSION_LEASE_DRAIN})
    """:meth:`drain_view` is one strongly consistent query: the host drains without a drain lease (issue 24)."""

    def __init__(
        self,
        table_name: str,
        *,
        client: Any = None,
        clock: Clock | None = None,
        done_ttl_days: int | None = 7,
        max_put_retries: int = 50,
        s3_client: Any = None,
        bucket: str | None = None,
        prefix: str = "sessions",
        inline_max_bytes: int = INLINE_MAX_BYTES,
    ) -> None:
        if client is None:
            from archmax.stores.aws.clients import LazyClient  # built on first use

            client = LazyClient("dynamodb")
        self.table_name = table_name
        self._ddb = client
        self._seen: OrderedDict[str, int] = OrderedDict()  # arrivals counter last seen per session
        self._seen_lock = threading.Lock()
        self._clock = clock or SystemClock()
        self.done_ttl_days = done_ttl_days
        self._max_put_retries = max_put_retries
        self.inline_max_bytes = min(inline_max_bytes, MAX_ITEM_BYTES)
        self._bodies: BodyStore | None = None
        if bucket:
            if s3_client is None:
                from archmax.stores.aws.clients import LazyClient

                s3_client = LazyClient("s3")
            self._bodies = BodyStore(s3_client, bucket, prefix)

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
                    cancelled = exc.response.get("CancellationReasons", [])
                    reasons = [str(r.get("Code", "None")) for r in cancelled]
                    if "ConditionalCheckFailed" in reasons:
                        raise _ConditionFailed(
                            reasons, [cast("dict[str, Any] | None", r.get("Item")) for r in cancelled]
                        ) from exc
                    if "TransactionConflict" in reasons:  # another transaction on the same items, at once
                        raise _Conflict(reasons) from exc
                raise StoreError(f"inbox {method} failed: {code or 'unknown error'}: {exc}") from exc
            if isinstance(exc, BotoCoreError):
                raise StoreError(f"inbox {method} failed: {exc}") from exc
            raise

    def _drain_item(self, session_id: str) -> dict[str, Any]:
        answer = self._call(
            "get_item",
            Key=item_key(session_id, DRAIN_KEY),
            ConsistentRead=True,
            ProjectionExpression="#a",
            ExpressionAttributeNames={"#a": "arrivals"},
        )
        return answer.get("Item") or {}

    # ------------------------------------------------------------------ protocol

    def put(self, item: InboxItem, *, new_session: bool = False) -> bool:
        """See :meth:`Inbox.put`: one transaction of two small items (create-only item + conditional counter bump).

        Nothing of the sessions table rides it: a condition check on the session item there would be
        billed as a write of the whole item, twice (issue 24), and the host classifies the firing on a
        read of its own.

        Raises:
            InvalidSessionIdError, InvalidDeliveryIdError, StoreError (also when 50 attempts lost the counter race).
            InvalidEventError: 413 when the inbox has no bucket and the firing cannot fit in one DynamoDB
                item (checked before any write: retrying the same firing could never succeed, so it is a
                caller's error, not a 503).

        With a bucket, a firing whose item would exceed ``inline_max_bytes`` is first written to S3
        (create-only; a StoreError there means no item is written) and the item points at it. A
        duplicate put of such a firing finds the same bytes under the same key, writes nothing
        new, and returns ``False`` like any duplicate.
        """
        validate_session_id(item.session_id)
        validate_delivery_id(item.delivery_id, session_id=item.session_id)
        size = item_bytes(item)
        body: dict[str, Any] = {}
        if self._bodies is not None and size > self.inline_max_bytes:
            firing = item.model_dump(mode="json", include={"firing"})["firing"]
            data = json.dumps(firing, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            key, digest = self._bodies.put(item.session_id, item.delivery_id, data)
            body = {"body_key": {"S": key}, "body_sha256": {"S": digest}}
        elif size > MAX_ITEM_BYTES:
            refuse_oversize(item, size)
        # First try with the counter this instance last saw: one transaction when right; a counter
        # that moved fails the condition and comes back with it (issue 10). A counter it never saw is
        # read first (one small read rather than a cancelled transaction, issue 24), unless the
        # session is new (its id was just minted): then it is 0.
        with self._seen_lock:
            guess: int | None = self._seen.get(item.session_id, 0 if new_session else None)
        for _ in range(self._max_put_retries):
            if guess is None:
                seen = int(self._drain_item(item.session_id).get("arrivals", {"N": "0"})["N"])
            else:
                seen, guess = guess, None
            create, bump = put_writes(self.table_name, item, seen, body)
            try:
                self._transact([{"Put": create}, {"Update": bump}])
            except _Conflict:
                # Two items for one session accepted at once (issue 21 item 7): retried here, on a
                # counter read afresh after a short jittered pause, never surfaced as a 5xx.
                guess = None
                time.sleep(random.uniform(0, _CONFLICT_PAUSE_S))  # noqa: S311 - jitter, not a secret
                continue
            except _ConditionFailed as failed:
                if len(failed.reasons) > 1 and failed.reasons[1] == "ConditionalCheckFailed":
                    found = failed.items[1]  # the counter another put moved: the next try's guess
                    guess = int((found or {}).get("arrivals", {"N": "0"})["N"]) if found is not None else None
                    if guess is not None:
                        self._remember_arrivals(item.session_id, guess)
                if failed.reasons and failed.reasons[0] == "ConditionalCheckFailed":
                    return False  # the delivery id is there already: a duplicate
                continue  # another put bumped the counter first: try again on the counter it found
            self._remember_arrivals(item.session_id, seen + 1)
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
            items.extend(self._item_of(raw) for raw in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                break
            params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return sorted(items, key=InboxItem.order_key)

    def get(self, session_id: str, delivery_id: str) -> InboxItem | None:
        """See :meth:`Inbox.get`."""
        validate_session_id(session_id)
        answer = self._call("get_item", Key=item_key(session_id, item_sk(delivery_id)), ConsistentRead=True)
        raw = answer.get("Item")
        return self._item_of(raw) if raw and "item" in raw else None

    def _item_of(self, raw: dict[str, Any]) -> InboxItem:
        """An :class:`InboxItem` from a raw item, its firing read back from S3 when the item points there.

        Raises:
            StoreError: the item points at a body this inbox cannot read (missing, unreadable, altered,
                or no bucket configured).
        """
        data = json.loads(raw["item"]["S"])
        if "body_key" in raw:
            session_id = raw["pk"]["S"]
            if self._bodies is None:
                raise StoreError(
                    f"inbox item {raw['sk']['S']!r} keeps its firing in S3 but this inbox has no bucket",
                    session_id=session_id,
                )
            blob = self._bodies.get(raw["body_key"]["S"], raw["body_sha256"]["S"], session_id=session_id)
            data["firing"] = json.loads(blob)
        item = InboxItem.model_validate(data)
        error = raw.get("error", {}).get("S")
        return item.model_copy(update={"status": raw.get("status", {}).get("S", item.status), "error": error})

    def mark(self, session_id: str, delivery_id: str, status: ItemStatus, error: str | None = None) -> None:
        """See :meth:`Inbox.mark`; a done/failed item leaves the GSI and gets a ``ttl``.

        Raises:
            KeyError: no such item (a host bug). StoreError.
        """
        validate_session_id(session_id)
        try:
            self._call("update_item", _table=False, **self._mark_request(session_id, delivery_id, status, error))
        except _ConditionFailed:
            raise KeyError(f"no inbox item '{delivery_id}' for session '{session_id}'") from None

    def _mark_request(
        self, session_id: str, delivery_id: str, status: ItemStatus, error: str | None = None
    ) -> dict[str, Any]:
        """The conditional update that sets an item's status (an UpdateItem, or a transaction's ``Update``)."""
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
        return {
            "TableName": self.table_name,
            "Key": item_key(session_id, item_sk(delivery_id)),
            "UpdateExpression": f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
            "ConditionExpression": "attribute_exists(sk)",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

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
            self._call("update_item", _table=False, **self._acquire_request(session_id, owner, now, ttl_s))
        except _ConditionFailed:
            return False
        return True

    def _acquire_request(self, session_id: str, owner: str, now: str, ttl_s: float) -> dict[str, Any]:
        """The conditional update that takes (or extends) the drain lease when free, ours or expired."""
        return {
            "TableName": self.table_name,
            "Key": item_key(session_id, DRAIN_KEY),
            "UpdateExpression": "SET #o = :o, #e = :exp",
            "ConditionExpression": "attribute_not_exists(#o) OR #o = :o OR #e <= :now",
            "ExpressionAttributeNames": {"#o": "lease_owner", "#e": "lease_expires_at"},
            "ExpressionAttributeValues": {
                ":o": {"S": owner},
                ":exp": {"S": lease_expiry(now, ttl_s)},
                ":now": {"S": now},
            },
        }

    def drain_view(self, session_id: str) -> DrainView:
        """The counter, the drain lease and the pending items in ONE strongly consistent query (issue 10).

        The partition is read in descending key order, so the ``~drain`` item (counter and lease) is
        read before the firings: a firing put after the counter was read can only make the drainer's
        release fail and go round again, never be missed (DESIGN.md §3 "Inbox").

        Raises:
            InvalidSessionIdError, StoreError.
        """
        validate_session_id(session_id)
        seen, owner, expires = 0, None, None
        items: list[InboxItem] = []
        params: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk",
            "FilterExpression": "attribute_exists(pending_shard) OR sk = :drain",
            "ExpressionAttributeValues": {":pk": {"S": session_id}, ":drain": {"S": DRAIN_KEY}},
            "ConsistentRead": True,
            "ScanIndexForward": False,
        }
        while True:
            answer = self._call("query", **params)
            for raw in answer.get("Items", []):
                if raw["sk"]["S"] == DRAIN_KEY:
                    seen = int(raw.get("arrivals", {"N": "0"})["N"])
                    owner = raw.get("lease_owner", {}).get("S")
                    expires = raw.get("lease_expires_at", {}).get("S")
                else:
                    items.append(self._item_of(raw))
            if "LastEvaluatedKey" not in answer:
                break
            params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        self._remember_arrivals(session_id, seen)
        return DrainView(seen, owner, expires, sorted(items, key=InboxItem.order_key))

    def arrivals_and_pending(self, session_id: str) -> tuple[int, list[InboxItem]]:
        """:meth:`arrivals` and :meth:`pending` in ONE strongly consistent query (see :meth:`drain_view`)."""
        view = self.drain_view(session_id)
        return view.seen, view.items

    def _remember_arrivals(self, session_id: str, seen: int) -> None:
        with self._seen_lock:
            self._seen[session_id] = seen
            self._seen.move_to_end(session_id)
            while len(self._seen) > 4096:
                self._seen.popitem(last=False)

    def arrivals(self, session_id: str) -> int:
        """See :meth:`Inbox.arrivals`: one strongly consistent read."""
        validate_session_id(session_id)
        return int(self._drain_item(session_id).get("arrivals", {"N": "0"})["N"])

    def release(self, session_id: str, owner: str, seen_arrivals: int) -> bool:
        """See :meth:`Inbox.release`: ONE conditional write (owner matches AND arrivals unchanged)."""
        validate_session_id(session_id)
        try:
            self._call("update_item", _table=False, **self._release_request(session_id, owner, seen_arrivals))
        except _ConditionFailed:
            return False
        return True

    def _release_request(self, session_id: str, owner: str, seen_arrivals: int) -> dict[str, Any]:
        """The conditional update that lets the drain lease go: ``owner`` holds it AND the counter is unchanged."""
        counter = "#a = :seen" if seen_arrivals else "attribute_not_exists(#a)"
        values: dict[str, Any] = {":o": {"S": owner}}
        if seen_arrivals:
            values[":seen"] = {"N": str(seen_arrivals)}
        return {
            "TableName": self.table_name,
            "Key": item_key(session_id, DRAIN_KEY),
            "UpdateExpression": "REMOVE #o, #e",
            "ConditionExpression": f"#o = :o AND {counter}",
            "ExpressionAttributeNames": _NAMES,
            "ExpressionAttributeValues": values,
        }
