"""``AwsStore``: sessions in DynamoDB (one item per session, the commit point) and S3 (everything else).

Rule source: BEHAVIOUR.md §9.1 (protocol), §9.2 (layout; "a commit writes the checkpoint body to S3,
then advances the item under a condition on version and the lease owner; a body whose item never
advanced is never read"), §9.3 (chunked checkpoints), §9.4 (spec snapshots create-only);
DESIGN.md §3 (AWS store, sparse due-parks and stale-leases indexes, no scans on hot paths).

Round trips (counted by ``bench/roundtrips.py``): ``head`` is one GetItem; ``load`` is one GetItem
plus one GetObject per chunk not already cached (chunk objects are immutable, so this instance
caches their bytes); ``commit`` is one PutObject plus one UpdateItem (plus one GetItem when this
instance has not seen the version it is committing on); ``due`` and ``stale`` are one Query per shard page.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from archmax.errors import CommitConflictError, PathExistsError, StoreError
from archmax.session.ids import validate_session_id
from archmax.session.records import Checkpoint, SessionStatus
from archmax.stores import common as _common
from archmax.stores import riders as _riders
from archmax.stores.aws.clients import LazyClient
from archmax.stores.aws.errors import aws_call, found_in_item
from archmax.stores.aws.item import (
    DUE_INDEX,
    QUARANTINE_HINT,
    STALE_INDEX,
    chunk_plan,
    commit_request,
    committed_attributes,
    head_of_item,
    quarantine_hint_of_item,
)
from archmax.stores.aws.layout import DUE_SHARDS, LEASE_SHARDS, Keys, new_chunk_token
from archmax.stores.aws.plan import (
    INLINE_MAX_BYTES,
    Plan,
    entry_inline,
    entry_segment,
    entry_token,
    inline_entry,
    s3_entry,
    segment_bytes,
    segment_chunks,
    segment_entry,
)
from archmax.stores.base import DuePark, SessionHead, StoreCapabilities
from archmax.stores.codec import chunk_bytes, chunk_from_bytes, decode_chunks, encode_chunk

_CHUNK_CACHE_BYTES = 32 * 1024 * 1024
_PLANS_CACHE_SIZE = 1024
_DELETE_BATCH = 1000


class GuardedReads:
    """Session reads a warm store answered from memory, each to be checked by the write that acts on them.

    Inside :meth:`AwsStore.guarded_reads`, ``load``/``head``/``load_if`` make no call: they answer
    from the version this store instance last read or committed (a session it never saw reads as
    absent) and note that version here. The caller's one write then carries
    :meth:`condition_checks` in its transaction (``DynamoInbox.put``), so it lands only if every
    session is still at the version read: as if it had been read in the same call (issue 10).
    """

    def __init__(self, store: AwsStore, *, only: str | None = None, once: bool = False) -> None:
        self.store = store
        self.only = only
        self.once = once
        self._asked: set[str] = set()
        self.versions: dict[str, int] = {}
        """Session id -> the version read (0: read as absent)."""

    def serves(self, session_id: str) -> bool:
        """Whether this read of ``session_id`` is answered from memory.

        With ``only``, reads of other sessions are real; with ``once``, only the first read of the
        session is (what the operation acts on: its claim is conditional on that version, and every
        later read, e.g. after a lost claim, must see the table). Without ``once`` every session is
        served, a session this store never saw as absent; with ``once``, only a session this store
        holds a version of, or saw absent through a checked read (:meth:`AwsStore.confirm`).
        """
        if self.only is not None and session_id != self.only:
            return False
        if not self.once:
            return True
        if session_id in self._asked:
            return False
        self._asked.add(session_id)
        with self.store._lock:
            return session_id in self.store._plans or session_id in self.store._absent

    def item(self, session_id: str) -> dict[str, Any] | None:
        """The session item as this store instance last saw it, or ``None`` (noted as absent)."""
        with self.store._lock:
            plan = self.store._plans.get(session_id)
        self.versions[session_id] = plan.version if plan is not None else 0
        if plan is None:
            return None
        return {
            **plan.attrs,
            "pk": {"S": session_id},
            "base": {"N": str(plan.base)},
            "chunks": {"L": list(plan.entries)},
        }

    def condition_checks(self) -> list[dict[str, Any]]:
        """``TransactWriteItems`` ``ConditionCheck`` entries: each session read is still at its version.

        A failed check returns the item as stored (``ALL_OLD``): give it to :meth:`AwsStore.prime`.
        """
        checks = []
        for session_id, version in self.versions.items():
            check: dict[str, Any] = {
                "TableName": self.store.table_name,
                "Key": {"pk": {"S": session_id}},
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": "pk"},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
            if version:
                check["ConditionExpression"] = "#v = :v"
                check["ExpressionAttributeNames"] = {"#v": "version"}
                check["ExpressionAttributeValues"] = {":v": {"N": str(version)}}
            checks.append({"ConditionCheck": check})
        return checks


_GUARDED: ContextVar[GuardedReads | None] = ContextVar("archmax_guarded_reads", default=None)


class AwsStore:
    """A :class:`~archmax.stores.base.SessionStore` on DynamoDB + S3, with every capability (§9.1).

    Nothing here creates a table or a bucket: ``template.yaml`` owns them (``SessionsTable``,
    ``SessionsBucket``).

    Args:
        table_name: The sessions table (key ``pk``, sparse GSIs ``due-parks`` and ``stale-leases``).
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

    capabilities = StoreCapabilities(list=True, delete=True, upload_files=True)
    rides_commits = True
    """A commit writes the active :mod:`~archmax.stores.riders` in its transaction (the inbox drain, issue 10)."""
    writes_artifacts = False
    """Artifacts are views materialized on read (``sessions.artifact``), never written per operation (§9.5)."""
    sends_from_stream = True
    """Outbox entries are sent by the outbound function from the table's stream (DESIGN.md §3), off the
    operation's path: ``create_agent`` builds no in-process dispatcher for this store unless given one."""

    def __init__(
        self,
        table_name: str,
        bucket: str,
        prefix: str = "",
        *,
        dynamodb_client: Any = None,
        s3_client: Any = None,
        finished_ttl_days: int | None = None,
    ) -> None:
        # Clients the host did not inject are built on first use (a cold start builds none it does not need).
        dynamodb_client = dynamodb_client if dynamodb_client is not None else LazyClient("dynamodb")
        s3_client = s3_client if s3_client is not None else LazyClient("s3")
        self.table_name = table_name
        self.bucket = bucket
        self.keys = Keys(prefix)
        self.finished_ttl_days = finished_ttl_days
        self._ddb = dynamodb_client
        self._s3 = s3_client
        self._lock = threading.Lock()
        # Chunk objects are immutable (unique keys), so their bytes can be kept without invalidation.
        self._chunks: OrderedDict[str, bytes] = OrderedDict()
        self._chunk_bytes = 0
        # The plan of the version last seen per session: lets a commit skip a GetItem and send only changes.
        self._plans: OrderedDict[str, Plan] = OrderedDict()
        # Sessions a checked read found absent (GuardedReads, issue 10) and no commit of this instance created since.
        self._absent: OrderedDict[str, None] = OrderedDict()
        # Per thread: (session id, version, quarantine hint) of the item this thread last read (held_mail_hint).
        self._read = threading.local()

    # ------------------------------------------------------------------ checkpoints

    def load(self, session_id: str) -> Checkpoint | None:
        """The latest committed checkpoint, or ``None`` (§9.1).

        Reads the item (strongly consistent), then exactly the chunks it lists, ``base .. version``.
        An object no item lists (a losing or crashed commit) is never read.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure, or chunks that do not rebuild the record.
        """
        validate_session_id(session_id)
        item = self._item(session_id)
        return None if item is None else self._record_of(session_id, item)

    def load_if(
        self, session_id: str, wanted: Callable[[SessionHead], bool]
    ) -> tuple[SessionHead | None, Checkpoint | None]:
        """The head, and the whole record only when ``wanted(head)``: one GetItem either way (issue 10).

        What a refusal needs (a double-fired timer into a finished session) is in the item; the
        chunks are read only for a session the caller will act on.

        Raises:
            InvalidSessionIdError / StoreError: as :meth:`load`.
        """
        validate_session_id(session_id)
        item = self._item(session_id)
        if item is None:
            return None, None
        head = _common.same_session(session_id, head_of_item(item))
        return head, (self._record_of(session_id, item) if wanted(head) else None)

    def _record_of(self, session_id: str, item: dict[str, Any]) -> Checkpoint:
        plan = Plan.of_item(item)
        if plan.base + len(plan.entries) - 1 != plan.version:
            raise StoreError(
                f"session item lists chunks {plan.base}+{len(plan.entries)} for version {plan.version}",
                session_id=session_id,
            )
        keys: list[str] = []  # the S3 objects this load needs: chunks and segments, each once
        for i, entry in enumerate(plan.entries):
            segment = entry_segment(entry)
            if segment is not None:
                key = self.keys.segment(session_id, segment)
            elif entry_inline(entry) is None:
                key = self.keys.chunk(session_id, plan.base + i, entry_token(entry))
            else:
                continue
            if key not in keys:
                keys.append(key)
        objects = dict(zip(keys, self._read_chunks(session_id, keys), strict=True))
        segments: dict[str, dict[str, bytes]] = {}
        datas: list[bytes] = []
        for i, entry in enumerate(plan.entries):
            inline, segment = entry_inline(entry), entry_segment(entry)
            if inline is not None:
                datas.append(inline)
            elif segment is not None:
                if segment not in segments:
                    segments[segment] = segment_chunks(objects[self.keys.segment(session_id, segment)])
                datas.append(segments[segment][entry_token(entry)])
            else:
                datas.append(objects[self.keys.chunk(session_id, plan.base + i, entry_token(entry))])
        record = decode_chunks([chunk_from_bytes(b) for b in datas])
        _common.same_session(session_id, record)
        self._remember(session_id, plan)
        return record

    def head(self, session_id: str) -> SessionHead | None:
        """The latest version's head from the item alone (one GetItem), or ``None``.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        item = self._item(session_id)
        return _common.same_session(session_id, None if item is None else head_of_item(item))

    def commit(
        self, session_id: str, record: Checkpoint, expected_version: int, *, lease_owner: str | None = None
    ) -> None:
        """Create version ``expected_version + 1``: put the chunk body, then one conditional UpdateItem.

        Args:
            session_id: The session.
            record: The whole new record; ``record.session_id`` must be ``session_id`` and
                ``record.version`` must be ``expected_version + 1``.
            expected_version: The version the writer read (0 for a new session).
            lease_owner: When given, the stored item must hold a lease with this owner (§3.12).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: if the record does not fit, or on an AWS failure.
            CommitConflictError: the stored version is not ``expected_version``, or the lease owner
                differs; ``found`` carries what the item held (``ALL_OLD``). A condition failure
                against this call's own landed write (a retried UpdateItem whose first response was
                lost) is not a conflict: the item is read back and, when it lists this attempt's
                chunk as ``record.version``, the commit succeeded. A chunk is deleted only when no
                item lists it.
        """
        validate_session_id(session_id)
        _common.check_record_fits(session_id, record, expected_version)
        plan = self._plan_for(session_id, expected_version, lease_owner)
        version = record.version
        chunk = encode_chunk(record, plan.counts if plan else None, scheduled=False)
        data = chunk_bytes(chunk)
        if plan is not None and not chunk["full"] and plan.snapshot_due(len(data)):
            chunk = encode_chunk(record, None, scheduled=False)  # deltas since the snapshot outweigh it
            data = chunk_bytes(chunk)
        token = new_chunk_token()
        put: dict[str, bytes] = {}  # S3 objects this attempt writes before the UpdateItem
        base: int | None = None
        if plan is None or chunk["full"]:
            if len(data) <= INLINE_MAX_BYTES:  # a small snapshot (a new session's first) rides the item too
                entries = [inline_entry(token, data)]
            else:
                put[self.keys.chunk(session_id, version, token)] = data
                entries = [s3_entry(token)]
            how, base = "set", version
            sizes = {"delta_bytes": 0, "full_bytes": len(data)}
        else:
            sizes = {"delta_bytes": plan.delta_bytes + len(data), "full_bytes": plan.full_bytes}
            if plan.fits_inline(len(data)):  # the common case: the delta travels inside the item
                entries, how = [*plan.entries, inline_entry(token, data)], "append"
            elif len(data) <= INLINE_MAX_BYTES:  # the inline budget ran out: move them to one segment
                segment = new_chunk_token()
                moved = {entry_token(e): b for e in plan.entries if (b := entry_inline(e)) is not None}
                moved[token] = data
                put[self.keys.segment(session_id, segment)] = segment_bytes(moved)
                entries = [segment_entry(entry_token(e), segment) if entry_inline(e) is not None else e for e in plan.entries]
                entries, how = [*entries, segment_entry(token, segment)], "set"
            else:  # too large for the item
                put[self.keys.chunk(session_id, version, token)] = data
                entries, how = [*plan.entries, s3_entry(token)], "append"
        for key, body in put.items():
            aws_call(
                self._s3.put_object,
                operation="commit",
                session_id=session_id,
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType="application/json",
            )
        previous = plan.attrs if plan is not None else None
        request = commit_request(
            self.table_name,
            record,
            expected_version,
            lease_owner=lease_owner,
            chunks=(how, entries if how == "set" else entries[-1:]),
            base=base,
            sizes=sizes,
            ttl_days=self.finished_ttl_days,
            previous=previous,
        )
        try:
            self._update_item(session_id, expected_version, record, request)
        except CommitConflictError as conflict:
            # botocore retries an UpdateItem whose response was lost; when the first attempt had
            # applied, the retry fails its condition against our own write. Only the item can tell.
            if not self._landed(conflict, session_id, version, token):
                for key in put:
                    self._discard(key)  # no item lists this attempt's token: garbage, never state
                raise
            riding = _riders.current(record)
            if riding is not None:  # our transaction applied: its riders with it
                riding[0].landed(riding[1])
        for key, body in put.items():
            self._cache_chunk(key, body)
        self._remember(
            session_id,
            Plan(
                version=version,
                counts=(len(record.messages), len(record.trail)),
                base=version if base is not None else plan.base,  # type: ignore[union-attr]
                entries=entries,
                inline_bytes=sum(len(b) for e in entries if (b := entry_inline(e)) is not None),
                delta_bytes=sizes["delta_bytes"],
                full_bytes=sizes["full_bytes"],
                attrs=committed_attributes(record, sizes, self.finished_ttl_days, previous),
            ),
        )

    def _update_item(self, session_id: str, expected_version: int, record: Checkpoint, request: dict[str, Any]) -> None:
        """The commit's conditional UpdateItem, or one TransactWriteItems with the drain's riders (issue 10).

        Riders (:mod:`archmax.stores.riders`) ride in the same transaction. The session's own
        condition failing is a :class:`CommitConflictError` as ever; a required rider failing (the
        claim's drain lease) is one too, with nothing written; an optional rider failing (the done
        mark and release) makes the commit again without it.

        Raises:
            CommitConflictError / StoreError: as :meth:`commit`.
        """
        riding = _riders.current(record)
        if riding is None:
            self._update_alone(session_id, expected_version, request)
            return
        riders, kind, extra = riding
        try:
            aws_call(
                self._ddb.transact_write_items,
                operation="commit",
                session_id=session_id,
                TransactItems=[{"Update": request}, *extra],
            )
        except StoreError as exc:
            reasons = _cancellation_reasons(exc.__cause__)
            if reasons is None:
                raise
            mine = reasons[0] if reasons else {}
            if mine.get("Code") == "ConditionalCheckFailed":
                raise CommitConflictError(
                    session_id, expected_version, found_in_item(mine.get("Item"))
                ) from exc.__cause__
            failed = [r.get("Code") for r in reasons[1:] if r.get("Code") not in (None, "None")]
            if kind == "claim" or any(code != "ConditionalCheckFailed" for code in failed):
                if all(code == "ConditionalCheckFailed" for code in failed):
                    raise CommitConflictError(
                        session_id, expected_version, {"drain_lease": "held by another drainer"}
                    ) from exc.__cause__
                raise StoreError(f"AWS commit transaction cancelled: {reasons}", session_id=session_id) from exc
            # an item arrived (or the mark could not apply): commit alone; the drain does the rest itself
            self._update_alone(session_id, expected_version, request)
            return
        riders.landed(kind)

    def _update_alone(self, session_id: str, expected_version: int, request: dict[str, Any]) -> None:
        """The commit's conditional UpdateItem with nothing riding along."""
        aws_call(self._ddb.update_item, operation="commit", session_id=session_id, expected_version=expected_version, **request)

    def list(self) -> list[str]:
        """Ids of every session with a committed item, sorted (§9.1). Scans keys: not a hot path.

        Raises:
            StoreError: on an AWS failure.
        """
        ids: list[str] = []
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

    def due(self, now: str, workflow: str | None = None) -> list[tuple[str, str]]:
        """``(session_id, resume_at)`` of :meth:`due_parks` (DESIGN §3 due parks).

        Raises:
            StoreError: on an AWS failure.
        """
        return _common.due_pairs(self.due_parks(now, workflow))

    def due_parks(self, now: str, workflow: str | None = None) -> list[DuePark]:
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
        found: list[DuePark] = []
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

    def stale(self, now: str, workflow: str | None = None) -> list[str]:
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
        names = {"#shard": "lease_shard", "#expires": "lease_expires_at", "#pk": "pk"}
        values: dict[str, Any] = {":now": {"S": now}}
        extra: dict[str, Any] = {}
        if workflow is not None:
            names["#wf"] = "workflow"
            values[":wf"] = {"S": workflow}
            extra["FilterExpression"] = "#wf = :wf"
        found: list[str] = []
        for shard in LEASE_SHARDS:
            params: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": STALE_INDEX,
                "KeyConditionExpression": "#shard = :shard AND #expires <= :now",
                "ProjectionExpression": "#pk",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": {**values, ":shard": {"S": shard}},
                **extra,
            }
            while True:
                page = aws_call(self._ddb.query, operation="stale", **params)
                found.extend(i["pk"]["S"] for i in page.get("Items", []))
                if "LastEvaluatedKey" not in page:
                    break
                params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return sorted(found)

    # ------------------------------------------------------------------ files

    def get(self, session_id: str, path: str) -> bytes | None:
        """A session file's bytes, or ``None`` (§9.1).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path or one inside ``checkpoints/``.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        path = _common.check_file_path(path, session_id)
        return self._get_object(self.keys.file(session_id, path), session_id=session_id)

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        """Write text files as UTF-8; every path is checked before any is written (§9.1).

        With ``create_only`` each object is put with ``If-None-Match: *``, after a check that no
        path exists (as a file, or as a folder holding files) so a refusal normally writes none.
        S3 has no multi-object transaction: a path created between that check and the puts is
        still refused, but files put before it stay.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path (nothing is written).
            PathExistsError: with ``create_only``, for a path that exists.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        self._write(session_id, _common.encode_texts(session_id, files), create_only)

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        """Write raw bytes; every path is checked before any is written (§9.1, as :meth:`seed`).

        Raises:
            InvalidSessionIdError / InvalidFilePathError / PathExistsError / StoreError: as :meth:`seed`.
        """
        validate_session_id(session_id)
        self._write(session_id, _common.check_bytes(session_id, files), create_only)

    def list_files(self, session_id: str, prefix: str = "") -> list[str]:
        """Paths of the session's files under the folder ``prefix`` (all for ``""``), sorted; never checkpoints.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe prefix.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        folder = _common.check_prefix(prefix, session_id)
        root = self.keys.folder(session_id)
        paths = [
            key[len(root) :] for key in self._keys_under(root + (folder + "/" if folder else ""), session_id)
        ]
        return sorted(p for p in paths if p.split("/", 1)[0] != _common.CHECKPOINTS)

    def remove_files(self, session_id: str, paths: list[str]) -> None:
        """Remove session files (not checkpoints); a path that is absent is skipped.

        Not part of the store protocol: the engine uses it, where a store has it, to take back the
        files a firing placed before its claim failed (BEHAVIOUR.md §9.5; issue 9 item 7).

        Raises:
            InvalidSessionIdError / InvalidFilePathError: for a bad id or an unsafe path (nothing removed).
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        keys = [self.keys.file(session_id, _common.check_file_path(path, session_id)) for path in paths]
        for key in keys:  # a firing's few files: one DeleteObject each (absent keys succeed)
            aws_call(self._s3.delete_object, operation="delete", session_id=session_id, Bucket=self.bucket, Key=key)

    # ------------------------------------------------------------------ delete, specs

    def delete(self, session_id: str) -> bool:
        """Remove the item, then every object under the session folder; True when anything existed.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        old = aws_call(
            self._ddb.delete_item,
            operation="delete",
            session_id=session_id,
            TableName=self.table_name,
            Key={"pk": {"S": session_id}},
            ReturnValues="ALL_OLD",
        )
        existed = bool(old.get("Attributes"))
        keys = self._keys_under(self.keys.folder(session_id), session_id)
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            answer = aws_call(
                self._s3.delete_objects,
                operation="delete",
                session_id=session_id,
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
            )
            if answer.get("Errors"):
                raise StoreError(
                    f"S3 refused to delete {len(answer['Errors'])} objects", session_id=session_id
                )
        with self._lock:
            self._plans.pop(session_id, None)
        return existed or bool(keys)

    def get_spec(self, spec_hash: str) -> dict[str, Any] | None:
        """A spec snapshot, or ``None`` (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
            StoreError: on an AWS failure or a snapshot that is not JSON.
        """
        data = self._get_object(self.keys.spec(_common.check_spec_hash(spec_hash)))
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError as exc:
            raise StoreError(f"spec snapshot {spec_hash} is not JSON: {exc}") from exc

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        """Write ``_specs/<hash>.json`` create-only (``If-None-Match: *``); False when it existed (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
            StoreError: on an AWS failure.
        """
        key = self.keys.spec(_common.check_spec_hash(spec_hash))
        try:
            aws_call(
                self._s3.put_object,
                operation="put_spec",
                path=key,
                Bucket=self.bucket,
                Key=key,
                Body=_common.spec_bytes(doc),
                ContentType="application/json",
                IfNoneMatch="*",
            )
        except PathExistsError:
            return False
        return True

    # ------------------------------------------------------------------ quarantine hint (issue 10, issue 13 item 1)

    def note_held_mail(self, session_id: str, delivery_id: str, *, held: bool) -> None:
        """Add ``delivery_id`` to the item's ``quarantine_hint`` string set (``held``), or take it out: one UpdateItem.

        :mod:`archmax.inbound.quarantine` adds an id before it writes the held mail's record and takes
        it out after the release stamp, so the hint is a superset of the held mail and a summary
        whose item has no hint needs no S3 listing (:meth:`held_mail_hint`). The update touches only
        the hint (never ``version``): a racing commit is not disturbed, and commits never drop it.
        A session with no item is left alone: only sessions with a checkpoint hold mail (the send
        handler's admission), and ``sessions.get`` of a session with no item is ``None`` anyway.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        try:
            aws_call(
                self._ddb.update_item,
                operation="quarantine_hint",
                session_id=session_id,
                TableName=self.table_name,
                Key={"pk": {"S": session_id}},
                UpdateExpression=f"{'ADD' if held else 'DELETE'} #hint :ids",
                ConditionExpression="attribute_exists(#version)",
                ExpressionAttributeNames={"#hint": QUARANTINE_HINT, "#version": "version"},
                ExpressionAttributeValues={":ids": {"SS": [delivery_id]}},
            )
        except CommitConflictError:
            pass  # no session item (deleted meanwhile): nothing to hint

    def held_mail_hint(self, session_id: str, version: int) -> frozenset[str] | None:
        """The mail ids that may be held for ``session_id``, from the item this thread last read, or ``None``.

        ``None`` (unknown: list the quarantine) unless this thread's last item read was of
        ``session_id`` at ``version`` (what a ``load`` just returned); an empty set means nothing is
        held, so ``sessions.get`` costs the one GetItem (issue 10 "summary: 1 call").
        """
        seen = getattr(self._read, "item", None)
        if seen is None or seen[0] != session_id or seen[1] != version:
            return None
        return seen[2]

    # ------------------------------------------------------------------ reads checked by a later write

    @contextmanager
    def guarded_reads(self, *, only: str | None = None, once: bool = False) -> Iterator[GuardedReads]:
        """Serve this store's session reads from memory inside the block; see :class:`GuardedReads`."""
        reads = GuardedReads(self, only=only, once=once)
        token = _GUARDED.set(reads)
        try:
            yield reads
        finally:
            _GUARDED.reset(token)

    def confirm(self, reads: GuardedReads) -> None:
        """``reads``' condition checks held (the write carrying them landed): remember the sessions read absent."""
        with self._lock:
            for session_id, version in reads.versions.items():
                if version == 0:
                    self._absent[session_id] = None
                    self._absent.move_to_end(session_id)
            while len(self._absent) > _PLANS_CACHE_SIZE:
                self._absent.popitem(last=False)

    def prime(self, session_id: str, item: dict[str, Any] | None) -> None:
        """Remember ``item`` (a session item as stored; ``None``: there is none) as the session's latest version.

        What a failed :meth:`GuardedReads.condition_checks` entry returned: the next guarded read
        answers from it.
        """
        validate_session_id(session_id)
        with self._lock:
            if item is None or "version" not in item:
                self._plans.pop(session_id, None)
                self._absent[session_id] = None
                return
        self._remember(session_id, Plan.of_item(item))

    # ------------------------------------------------------------------ internals

    def _item(self, session_id: str) -> dict[str, Any] | None:
        reads = _GUARDED.get()
        if reads is not None and reads.store is self and reads.serves(session_id):
            self._read.item = None  # a remembered view: its hint may be stale (held_mail_hint answers "unknown")
            return reads.item(session_id)
        answer = aws_call(
            self._ddb.get_item,
            operation="read",
            session_id=session_id,
            TableName=self.table_name,
            Key={"pk": {"S": session_id}},
            ConsistentRead=True,
        )
        item = answer.get("Item")
        if not item or "version" not in item:
            self._read.item = None
            return None
        self._read.item = (session_id, int(item["version"]["N"]), quarantine_hint_of_item(item))
        return item

    def _plan_for(self, session_id: str, expected_version: int, lease_owner: str | None) -> Plan | None:
        """The stored plan of ``expected_version``; from this instance's memory, else one GetItem that also refuses early."""
        if expected_version == 0:
            return None
        with self._lock:
            cached = self._plans.get(session_id)
        if cached is not None and cached.version == expected_version:
            return cached
        item = self._item(session_id)
        if item is None:
            raise CommitConflictError(session_id, expected_version, None)
        head = head_of_item(item)
        if head.version != expected_version:
            raise CommitConflictError(session_id, expected_version, found_in_item(item))
        if lease_owner is not None:
            _common.check_lease_owner(session_id, expected_version, head, lease_owner)
        return Plan.of_item(item)

    def _remember(self, session_id: str, plan: Plan) -> None:
        with self._lock:
            self._absent.pop(session_id, None)
            self._plans[session_id] = plan
            self._plans.move_to_end(session_id)
            while len(self._plans) > _PLANS_CACHE_SIZE:
                self._plans.popitem(last=False)

    def _read_chunks(self, session_id: str, keys: list[str]) -> list[bytes]:
        with self._lock:
            have = {k: self._chunks[k] for k in keys if k in self._chunks}
        missing = [k for k in keys if k not in have]

        def fetch(key: str) -> bytes:
            data = self._get_object(key, session_id=session_id)
            if data is None:
                raise StoreError(
                    f"checkpoint chunk {key} listed by the session item is missing", session_id=session_id
                )
            return data

        if len(missing) > 1:
            with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
                fetched = dict(zip(missing, pool.map(fetch, missing), strict=True))
        else:
            fetched = {k: fetch(k) for k in missing}
        for key, data in fetched.items():
            self._cache_chunk(key, data)
        return [have.get(k) or fetched[k] for k in keys]

    def _cache_chunk(self, key: str, data: bytes) -> None:
        with self._lock:
            if key in self._chunks:
                self._chunks.move_to_end(key)
                return
            self._chunks[key] = data
            self._chunk_bytes += len(data)
            while self._chunk_bytes > _CHUNK_CACHE_BYTES and self._chunks:
                _, dropped = self._chunks.popitem(last=False)
                self._chunk_bytes -= len(dropped)

    def _landed(self, conflict: CommitConflictError, session_id: str, version: int, token: str) -> bool:
        """Whether this store's commit of ``version`` with chunk ``token`` is the one the item holds.

        Chunk tokens are unique per commit attempt (``layout.new_chunk_token``), so the item listing
        ``token`` as the chunk of ``version`` means this attempt's UpdateItem applied, whatever its
        retry answered. The item is the one the failed condition saw (``ALL_OLD``, no extra call),
        else one GetItem. A read that fails raises ``StoreError``: the chunk is then kept, never
        deleted while a committed item might point at it.
        """
        cause = conflict.__cause__
        response = getattr(cause, "response", None) or {}
        reasons = response.get("CancellationReasons") or [{}]  # a transaction's: the commit is its first item
        item = response.get("Item") or reasons[0].get("Item") or self._item(session_id)
        if not item or "version" not in item or int(item["version"]["N"]) < version:
            return False
        base, tokens = chunk_plan(item)
        return 0 <= version - base < len(tokens) and tokens[version - base] == token

    def _discard(self, key: str) -> None:
        try:
            aws_call(self._s3.delete_object, operation="discard", Bucket=self.bucket, Key=key)
        except StoreError:
            pass  # an unreferenced chunk is garbage, never state: failing to tidy it is harmless

    def _get_object(self, key: str, *, session_id: str | None = None) -> bytes | None:
        answer = aws_call(
            self._s3.get_object,
            operation="get",
            missing_ok=True,
            session_id=session_id,
            Bucket=self.bucket,
            Key=key,
        )
        return None if answer is None else answer["Body"].read()

    def _exists(self, key: str, session_id: str) -> bool:
        answer = aws_call(
            self._s3.head_object,
            operation="exists",
            missing_ok=True,
            session_id=session_id,
            Bucket=self.bucket,
            Key=key,
        )
        return answer is not None

    def _keys_under(self, key_prefix: str, session_id: str, *, limit: int | None = None) -> list[str]:
        keys: list[str] = []
        params: dict[str, Any] = {"Bucket": self.bucket, "Prefix": key_prefix}
        if limit is not None:
            params["MaxKeys"] = limit
        while True:
            page = aws_call(self._s3.list_objects_v2, operation="list_files", session_id=session_id, **params)
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
            if limit is not None and len(keys) >= limit:
                return keys[:limit]
            if not page.get("IsTruncated"):
                return keys
            params["ContinuationToken"] = page["NextContinuationToken"]

    def _write(self, session_id: str, files: dict[str, bytes], create_only: bool) -> None:
        keys = {path: self.keys.file(session_id, path) for path in files}
        if create_only:
            for path, key in keys.items():
                # A single file's own existence is settled by If-None-Match below; several are checked
                # first so a refusal normally writes none. A folder of that name is always checked.
                if (len(keys) > 1 and self._exists(key, session_id)) or self._keys_under(
                    key + "/", session_id, limit=1
                ):
                    raise PathExistsError(path, session_id=session_id)
        for path, data in files.items():
            extra = {"IfNoneMatch": "*"} if create_only else {}
            aws_call(
                self._s3.put_object,
                operation="write",
                session_id=session_id,
                path=path,
                Bucket=self.bucket,
                Key=keys[path],
                Body=data,
                **extra,
            )


def _cancellation_reasons(exc: BaseException | None) -> list[dict[str, Any]] | None:
    """A cancelled transaction's ``CancellationReasons`` (one per item, in order), else ``None``."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict) or response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return None
    return list(response.get("CancellationReasons") or [])
