"""The AWS store's commit: the chunk body to S3 (when it does not ride the item), then one conditional write.

Rule source: BEHAVIOUR.md §9.2 ("a commit writes the checkpoint body to S3, then advances the item
under a condition on version and the lease owner; a body whose item never advanced is never
read"), §9.3 (chunked checkpoints), §3.12 (lease owner); issue 10 (inbox riders in the commit's
transaction: ``Capability.COMMIT_RIDERS``). Round trips: one UpdateItem (or one
TransactWriteItems with riders), plus one PutObject when the chunk does not fit inline, plus one
GetItem when this instance has not seen the version it is committing on.
"""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

from archmax.errors import CommitConflictError, StoreError
from archmax.session.ids import validate_session_id
from archmax.session.records import Checkpoint
from archmax.stores import common as _common
from archmax.stores.aws.errors import aws_call, found_in_item
from archmax.stores.aws.item import chunk_plan, commit_request, committed_attributes, head_of_item
from archmax.stores.aws.layout import new_chunk_token
from archmax.stores.aws.plan import (
    INLINE_MAX_BYTES,
    Plan,
    entry_inline,
    entry_token,
    inline_entry,
    s3_entry,
    segment_bytes,
    segment_entry,
)
from archmax.stores.aws.reads import AwsReads
from archmax.stores.codec import chunk_bytes, encode_chunk
from archmax.stores.riders import RiderKind, Riders


class _Body(NamedTuple):
    """Where one commit's chunk goes: S3 objects to put first, the item's new chunk list and sizes."""

    put: dict[str, bytes]
    entries: builtins.list[dict[str, Any]]
    how: str
    """``set`` (the list is replaced) or ``append`` (only the last entry is new)."""
    base: int | None
    """The new chunk base when the list restarts at a snapshot, else ``None``."""
    sizes: dict[str, int]


class AwsCommits(AwsReads):
    """The commit of :class:`~archmax.stores.aws.store.AwsStore` (see the module docstring)."""

    def commit(
        self,
        session_id: str,
        record: Checkpoint,
        expected_version: int,
        *,
        lease_owner: str | None = None,
        riders: Riders | None = None,
    ) -> None:
        """Create version ``expected_version + 1``: put the chunk body, then one conditional UpdateItem.

        Args:
            session_id: The session.
            record: The whole new record; ``record.session_id`` must be ``session_id`` and
                ``record.version`` must be ``expected_version + 1``.
            expected_version: The version the writer read (0 for a new session).
            lease_owner: When given, the stored item must hold a lease with this owner (§3.12).
            riders: The inbox writes that may ride (``Capability.COMMIT_RIDERS``): those
                :meth:`Riders.for_commit` picks for ``record`` go in the same TransactWriteItems,
                and are marked landed on ``riders`` when it applied.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: if the record does not fit, or on an AWS failure.
            CommitConflictError: the stored version is not ``expected_version``, or the lease owner
                differs, or a required rider (the claim's drain lease) failed; ``found`` carries
                what the item held (``ALL_OLD``). A condition failure against this call's own landed
                write (a retried UpdateItem whose first response was lost) is not a conflict: the
                item is read back and, when it lists this attempt's chunk as ``record.version``, the
                commit succeeded. A chunk is deleted only when no item lists it.
        """
        validate_session_id(session_id)
        _common.check_record_fits(session_id, record, expected_version)
        plan = self._plan_for(session_id, expected_version, lease_owner)
        version = record.version
        token = new_chunk_token()
        body = self._body(session_id, record, plan, token)
        self._put_objects(session_id, body.put)
        previous = plan.attrs if plan is not None else None
        request = commit_request(
            self.table_name,
            record,
            expected_version,
            lease_owner=lease_owner,
            chunks=(body.how, body.entries if body.how == "set" else body.entries[-1:]),
            base=body.base,
            sizes=body.sizes,
            ttl_days=self.finished_ttl_days,
            previous=previous,
        )
        riding = riders.for_commit(record) if riders is not None else None
        try:
            self._update_item(session_id, expected_version, request, riders, riding)
        except CommitConflictError as conflict:
            # botocore retries an UpdateItem whose response was lost; when the first attempt had
            # applied, the retry fails its condition against our own write. Only the item can tell.
            if not self._landed(conflict, session_id, version, token):
                for key in body.put:
                    self._discard(key)  # no item lists this attempt's token: garbage, never state
                raise
            if riders is not None and riding is not None:  # our transaction applied: its riders with it
                riders.landed(riding[0])
        for key, data in body.put.items():
            self._cache_chunk(key, data)
        self._remember(session_id, self._plan_after(record, plan, body))

    def _put_objects(self, session_id: str, put: dict[str, bytes]) -> None:
        """The S3 objects this attempt writes before its conditional write (chunks, a segment)."""
        for key, data in put.items():
            aws_call(
                self._s3.put_object,
                operation="commit",
                session_id=session_id,
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ContentType="application/json",
            )

    def _plan_after(self, record: Checkpoint, plan: Plan | None, body: _Body) -> Plan:
        """The plan of the version just committed: what the next commit builds on without a read."""
        previous = plan.attrs if plan is not None else None
        return Plan(
            version=record.version,
            counts=(len(record.messages), len(record.trail)),
            base=record.version if body.base is not None else plan.base,  # type: ignore[union-attr]
            entries=body.entries,
            inline_bytes=sum(len(b) for e in body.entries if (b := entry_inline(e)) is not None),
            delta_bytes=body.sizes["delta_bytes"],
            full_bytes=body.sizes["full_bytes"],
            attrs=committed_attributes(record, body.sizes, self.finished_ttl_days, previous),
        )

    def _body(self, session_id: str, record: Checkpoint, plan: Plan | None, token: str) -> _Body:
        """Encode ``record`` as a delta on ``plan`` (a snapshot when due) and place it: inline, a segment, or S3."""
        version = record.version
        chunk = encode_chunk(record, plan.counts if plan else None, scheduled=False)
        data = chunk_bytes(chunk)
        if plan is not None and not chunk["full"] and plan.snapshot_due(len(data)):
            chunk = encode_chunk(record, None, scheduled=False)  # deltas since the snapshot outweigh it
            data = chunk_bytes(chunk)
        put: dict[str, bytes] = {}  # S3 objects this attempt writes before the UpdateItem
        if plan is None or chunk["full"]:
            if len(data) <= INLINE_MAX_BYTES:  # a small snapshot (a new session's first) rides the item too
                entries = [inline_entry(token, data)]
            else:
                put[self.keys.chunk(session_id, version, token)] = data
                entries = [s3_entry(token)]
            return _Body(put, entries, "set", version, {"delta_bytes": 0, "full_bytes": len(data)})
        sizes = {"delta_bytes": plan.delta_bytes + len(data), "full_bytes": plan.full_bytes}
        if plan.fits_inline(len(data)):  # the common case: the delta travels inside the item
            return _Body(put, [*plan.entries, inline_entry(token, data)], "append", None, sizes)
        if len(data) <= INLINE_MAX_BYTES:  # the inline budget ran out: move them to one segment
            segment = new_chunk_token()
            moved = {entry_token(e): b for e in plan.entries if (b := entry_inline(e)) is not None}
            moved[token] = data
            put[self.keys.segment(session_id, segment)] = segment_bytes(moved)
            entries = [
                segment_entry(entry_token(e), segment) if entry_inline(e) is not None else e for e in plan.entries
            ]
            return _Body(put, [*entries, segment_entry(token, segment)], "set", None, sizes)
        put[self.keys.chunk(session_id, version, token)] = data  # too large for the item
        return _Body(put, [*plan.entries, s3_entry(token)], "append", None, sizes)

    def _update_item(
        self,
        session_id: str,
        expected_version: int,
        request: dict[str, Any],
        riders: Riders | None,
        riding: tuple[RiderKind, builtins.list[dict[str, Any]]] | None,
    ) -> None:
        """The commit's conditional UpdateItem, or one TransactWriteItems with the drain's riders (issue 10).

        ``riding`` is what of ``riders`` rides this commit (``Riders.for_commit``). The session's own
        condition failing is a :class:`CommitConflictError` as ever; a required rider failing (the
        claim's drain lease) is one too, with nothing written; an optional rider failing (the done
        mark and release) makes the commit again without it.

        Raises:
            CommitConflictError / StoreError: as :meth:`commit`.
        """
        if riders is None or riding is None:
            self._update_alone(session_id, expected_version, request)
            return
        kind, extra = riding
        if not extra:  # nothing rides (the AWS drain's claim, issue 24): one plain conditional write
            self._update_alone(session_id, expected_version, request)
            riders.landed(kind)
            return
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
        aws_call(
            self._ddb.update_item,
            operation="commit",
            session_id=session_id,
            expected_version=expected_version,
            **request,
        )

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


def _cancellation_reasons(exc: BaseException | None) -> builtins.list[dict[str, Any]] | None:
    """A cancelled transaction's ``CancellationReasons`` (one per item, in order), else ``None``."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict) or response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return None
    return list(response.get("CancellationReasons") or [])
