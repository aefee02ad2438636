"""``AwsStore``: sessions in DynamoDB (one item per session, the commit point) and S3 (everything else).

Rule source: BEHAVIOUR.md §9.1 (protocol), §9.2 (layout; "a commit writes the checkpoint body to S3,
then advances the item under a condition on version and the lease owner; a body whose item never
advanced is never read"), §9.3 (chunked checkpoints), §9.4 (spec snapshots create-only);
DESIGN.md §3 (AWS store, sparse due-parks and stale-leases indexes, no scans on hot paths).

Round trips (counted by ``bench/roundtrips.py``): ``head`` is one GetItem; ``load`` is one GetItem
plus one GetObject per chunk not already cached (chunk objects are immutable, so this instance
caches their bytes); ``commit`` is one PutObject plus one UpdateItem (plus one GetItem when this
instance has not seen the version it is committing on); ``due`` and ``stale`` are one Query per shard page;
``oldest_park`` is one Query of one item per shard. An operation through the engine's door on a warm
instance makes no read of its own: its first read is answered from what this instance last committed
or read, and its claim (a conditional commit) checks it (``guarded_reads``; engine/remembered.py,
issue 24): a warm turn is the claim and the commit.

The store is assembled from parts by job (each its own module): :mod:`~archmax.stores.aws.state`
(clients, caches), :mod:`~archmax.stores.aws.reads`, :mod:`~archmax.stores.aws.commit`,
:mod:`~archmax.stores.aws.files`, :mod:`~archmax.stores.aws.outbox_state` (the outbox entries'
claims and outcomes, one item each); the listings (``list``, ``due``, ``stale``) are here.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

from archmax.errors import CommitConflictError
from archmax.session.ids import validate_session_id
from archmax.session.records import SessionStatus
from archmax.stores import common as _common
from archmax.stores.aws.errors import aws_call
from archmax.stores.aws.files import AwsFiles
from archmax.stores.aws.guards import GuardedReads
from archmax.stores.aws.item import DUE_INDEX, OUTBOX_INDEX, PARKS_INDEX, STALE_INDEX, outbox_settled_request
from archmax.stores.aws.layout import DUE_SHARDS, LEASE_SHARDS, OUTBOX_SHARDS, PARK_SHARDS
from archmax.stores.aws.outbox_state import AwsOutboxState
from archmax.stores.base import Capabilities, Capability, DuePark, OldestPark, StoreLocation
from archmax.stores.fallbacks import StoreFallbacks

__all__ = ["AwsStore", "GuardedReads"]


class AwsStore(AwsOutboxState, AwsFiles, StoreFallbacks):
    """A :class:`~archmax.stores.base.SessionStore` on DynamoDB + S3, with every capability but ``APPEND_TEXT`` (§9.1).

    Nothing here creates a table or a bucket: ``template.yaml`` owns them (``SessionsTable``,
    ``SessionsBucket``).

    Args:
        table_name: The sessions table (key ``pk``, sparse GSIs ``due-parks``, ``stale-leases``,
            ``outbox-pending`` and ``open-parks``).
        bucket: The sessions bucket.
        prefix: Key root inside the bucket (``""`` for the bucket root).
        dynamodb_client: A boto3 DynamoDB client; built with ``boto3.client("dynamodb")`` on first use when omitted.
        s3_client: A boto3 S3 client; built with ``boto3.client("s3")`` on first use when omitted.
        finished_ttl_days: Days after a finished session's ``updated_at`` its item may expire
            (DynamoDB TTL on ``ttl``); ``None`` (the default) never expires items, as §9.2 says
            finishing deletes nothing.

    Example:
        >>> store = AwsStore("sessions", "my-bucket", "sessions", dynamodb_client=ddb, s3_client=s3)  # doctest: +SKIP
        >>> store.load("chat-42") is None  # doctest: +SKIP
        True
    """

    capabilities = Capabilities(
        set(Capability) - {Capability.APPEND_TEXT},
        reasons={Capability.APPEND_TEXT: "S3 objects are immutable: an append rewrites the object"},
    )
    """Every fast path (guarded reads, the held-mail hint, artifacts on read, the outbox
    stream); not ``APPEND_TEXT`` (the default read-then-write serves it)."""

    @property
    def location(self) -> StoreLocation:
        """The sessions' bucket and key root (where ``.aliases/`` sits beside the session folders)."""
        return StoreLocation(bucket=self.bucket, key_root=self.keys.root)

    # ------------------------------------------------------------------ listings (Capability.LIST)

    def list(self) -> builtins.list[str]:
        """Ids of every session with a committed item, sorted (§9.1). Scans keys: not a hot path.

        Raises:
            StoreError: on an AWS failure.
        """
        ids: builtins.list[str] = []
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "ProjectionExpression": "#pk",
            "FilterExpression": "attribute_exists(#version)",
            "ExpressionAttributeNames": {"#pk": "pk", "#version": "version"},
            "ConsistentRead": True,
        }
        while True:
            page = aws_call(self._ddb.scan, operation="list", **params)
            ids.extend(item["pk"]["S"] for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return sorted(ids)
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def due(self, now: str, workflow: str | None = None) -> builtins.list[tuple[str, str]]:
        """``(session_id, resume_at)`` of :meth:`due_parks` (DESIGN §3 due parks).

        Raises:
            StoreError: on an AWS failure.
        """
        return _common.due_pairs(self.due_parks(now, workflow))

    def due_parks(self, now: str, workflow: str | None = None) -> builtins.list[DuePark]:
        """Input parks with ``resume_at <= now``, each with its version (DESIGN §3 due parks).

        Queries the sparse ``due-parks`` index, each shard once (plus pages): only due parks are
        read, never the rest of the table. The index projects ``version``, so naming the park a
        timer wakes costs no extra read.

        Args:
            now: An instant string; string order is time order.
            workflow: Only sessions of this workflow, when given.

        Returns:
            :class:`DuePark` entries ordered by ``resume_at``, then id (BEHAVIOUR.md §11 ``sweep``).

        Raises:
            StoreError: on an AWS failure.
        """
        names = {
            "#shard": "due_shard",
            "#resume_at": "resume_at",
            "#status": "status",
            "#pk": "pk",
            "#version": "version",
        }
        filters = ["#status IN (:waiting, :deciding)"]  # a decision park is due at its deadline (§5.11)
        values: dict[str, Any] = {
            ":now": {"S": now},
            ":waiting": {"S": str(SessionStatus.AWAITING_INPUT)},
            ":deciding": {"S": str(SessionStatus.AWAITING_DECISION)},
        }
        if workflow is not None:
            names["#wf"] = "workflow"
            filters.append("#wf = :wf")
            values[":wf"] = {"S": workflow}
        found: builtins.list[DuePark] = []
        for shard in DUE_SHARDS:
            params: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": DUE_INDEX,
                "KeyConditionExpression": "#shard = :shard AND #resume_at <= :now",
                "FilterExpression": " AND ".join(filters),
                "ProjectionExpression": "#pk, #resume_at, #version",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {**values, ":shard": {"S": shard}},
            }
            while True:
                page = aws_call(self._ddb.query, operation="due", **params)
                found.extend(
                    DuePark(i["pk"]["S"], i["resume_at"]["S"], int(i["version"]["N"])) for i in page.get("Items", [])
                )
                if "LastEvaluatedKey" not in page:
                    break
                params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return sorted(found, key=lambda park: (park.resume_at, park.session_id))

    def stale(self, now: str, workflow: str | None = None) -> builtins.list[str]:
        """Ids of ``running`` sessions whose lease expired or is missing, sorted (DESIGN.md §3 "Inbox").

        Queries the sparse ``stale-leases`` index (only ``running`` items carry ``lease_shard``),
        each shard once (plus pages), with ``lease_expires_at <= now``: only stale turns are read,
        never the rest of the table. A ``running`` item with no lease is keyed at its
        ``updated_at`` (see ``item.item_attributes``). The index is eventually consistent: a turn
        that just ended may still be listed, which ``recover`` answers with ``None``.

        Args:
            now: An instant string; string order is time order.
            workflow: Only sessions of this workflow, when given.

        Raises:
            StoreError: on an AWS failure.
        """
        return self._ids_in_index(
            STALE_INDEX,
            LEASE_SHARDS,
            "#shard = :shard AND #expires <= :now",
            {"#shard": "lease_shard", "#expires": "lease_expires_at"},
            {":now": {"S": now}},
            workflow,
            operation="stale",
        )

    def oldest_park(self, workflow: str) -> OldestPark | None:
        """The workflow's park made longest ago (BEHAVIOUR.md §5.11, issue 21 item 7).

        Queries the sparse ``open-parks`` index (only parked items carry ``park_key``,
        ``<workflow>#<shard>``, ranged on ``parked_at``): each of the workflow's shards once, oldest
        first, one item each; the oldest of those is the answer. Never a scan, and no session read.
        The index is eventually consistent: a park answered a moment ago may still be the answer.
        Ties on ``parked_at`` across shards go to the lowest id; within one shard, to either.

        Raises:
            StoreError: on an AWS failure.
        """
        found: builtins.list[OldestPark] = []
        for shard in PARK_SHARDS:
            page = aws_call(
                self._ddb.query,
                operation="oldest_park",
                TableName=self.table_name,
                IndexName=PARKS_INDEX,
                KeyConditionExpression="#key = :key",
                ProjectionExpression="#pk, #parked_at",
                ExpressionAttributeNames={"#key": "park_key", "#pk": "pk", "#parked_at": "parked_at"},
                ExpressionAttributeValues={":key": {"S": f"{workflow}#{shard}"}},
                ScanIndexForward=True,
                Limit=1,
            )
            found.extend(OldestPark(i["pk"]["S"], i["parked_at"]["S"]) for i in page.get("Items", []))
        return min(found, key=lambda park: (park.parked_at, park.session_id), default=None)

    # ------------------------------------------------------------------ the outbox marks (issue 20 item 2)

    def outbox_pending(self, workflow: str | None = None) -> builtins.list[str]:
        """Ids of sessions whose outbox may hold an entry not yet sent, sorted (issue 20 item 2).

        Queries the sparse ``outbox-pending`` index (only items a commit marked carry
        ``outbox_shard``), each shard once (plus pages): sessions with nothing to send are never
        read. The index is eventually consistent: a mark just removed may still be listed (the
        sweep then finds every entry sent), and one just made may not be yet (the next sweep has it).

        Raises:
            StoreError: on an AWS failure.
        """
        return self._ids_in_index(
            OUTBOX_INDEX, OUTBOX_SHARDS, "#shard = :shard", {"#shard": "outbox_shard"}, {}, workflow,
            operation="outbox_pending",
        )  # fmt: skip

    def _ids_in_index(
        self,
        index: str,
        shards: Iterable[str],
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
        workflow: str | None,
        *,
        operation: str,
    ) -> builtins.list[str]:
        """Session ids in a sharded sparse index: each shard queried once (plus pages), sorted.

        ``condition`` names the shard ``:shard``; ``workflow`` adds a filter on the item's workflow.
        """
        names = {**names, "#pk": "pk"}
        extra: dict[str, Any] = {}
        if workflow is not None:
            names["#wf"] = "workflow"
            values = {**values, ":wf": {"S": workflow}}
            extra["FilterExpression"] = "#wf = :wf"
        found: builtins.list[str] = []
        for shard in shards:
            params: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": index,
                "KeyConditionExpression": condition,
                "ProjectionExpression": "#pk",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {**values, ":shard": {"S": shard}},
                **extra,
            }
            while True:
                page = aws_call(self._ddb.query, operation=operation, **params)
                found.extend(i["pk"]["S"] for i in page.get("Items", []))
                if "LastEvaluatedKey" not in page:
                    break
                params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return sorted(found)

    def outbox_settled(self, session_id: str, version: int, *, created_at: str | None = None) -> None:
        """Remove the session's outbox mark unless a commit after ``version`` (or of another life) set it.

        One conditional UpdateItem; ``created_at``: the settled record's life (see the port).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        try:
            aws_call(
                self._ddb.update_item,
                operation="outbox_settled",
                session_id=session_id,
                **outbox_settled_request(self.table_name, session_id, version, created_at),
            )
        except CommitConflictError:
            pass  # a later commit recorded entries (or the mark is gone): it stays for them
