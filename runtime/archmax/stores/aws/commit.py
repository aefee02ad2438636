"""The AWS store's commit: what does not ride the item first (a segment item, an S3 chunk), then one conditional write.

Rule source: BEHAVIOUR.md §9.2 ("a commit writes the checkpoint body to S3, then advances the item
under a condition on version and the lease owner; a body whose item never advanced is never
read"), §9.3 (chunked checkpoints), §3.12 (lease owner); issue 24 goal 2 (segment items, not S3 segments) and
nothing rides a commit (a transaction would bill the session item twice: the inbox drain writes its
own marks, hosting/host.py). Round trips: one UpdateItem; plus one PutItem when inline
chunks move to a segment item (about one commit in ``INLINE_BUDGET / delta``) or one PutObject
for a chunk too large for a segment item (:mod:`archmax.stores.aws.plan`), its body gzip-compressed
(:mod:`archmax.stores.aws.bodies`); plus one GetItem when this
instance has not seen the version it is committing on; plus one BatchWriteItem after a snapshot
that unlists segment items.
"""

from __future__ import annotations

from typing import Any

from archmax.errors import CommitConflictError, StoreError
from archmax.session.ids import validate_session_id
from archmax.session.records import Checkpoint, is_finished
from archmax.stores import common as _common
from archmax.stores.aws.bodies import CONTENT_ENCODING, encode_body
from archmax.stores.aws.errors import aws_call, conflict_item, found_in_item
from archmax.stores.aws.guards import note_commit
from archmax.stores.aws.item import commit_request, committed_attributes, head_of_item
from archmax.stores.aws.layout import new_chunk_token
from archmax.stores.aws.plan import (
    Placement,
    Plan,
    entry_item_segment,
    entry_token,
    inline_size,
    locate,
    pack,
    place_delta,
    place_full,
)
from archmax.stores.aws.reads import AwsReads
from archmax.stores.aws.segments import delete_segments, put_segment, read_segment
from archmax.stores.codec import chunk_bytes, encode_chunk


class AwsCommits(AwsReads):
    """The commit of :class:`~archmax.stores.aws.store.AwsStore` (see the module docstring)."""

    def commit(
        self,
        session_id: str,
        record: Checkpoint,
        expected_version: int,
        *,
        lease_owner: str | None = None,
    ) -> None:
        """Create version ``expected_version + 1``: put what does not ride the item, then one conditional UpdateItem.

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
                differs; ``found`` carries
                what the item held (``ALL_OLD``). A condition failure against this call's own landed
                write (a retried UpdateItem whose first response was lost) is not a conflict: the
                item is read back and, when it lists this attempt's chunk as ``record.version``, the
                commit succeeded. A chunk or segment item is deleted only when no item lists it.

        Inside :meth:`guarded_reads`, a commit that landed, or failed without saying whether it did
        (anything but a conflict), is noted in ``ReadGuards.committed``: what tells the engine's door
        that its operation wrote (engine/remembered.py, issue 24). A conflict remembers the item its
        condition saw (``prime``), so the firing is decided again on it without another read.
        """
        try:
            self._commit(session_id, record, expected_version, lease_owner)
        except CommitConflictError as conflict:
            found = conflict_item(conflict)
            if found is not None and "version" in found:
                self.prime(session_id, found)  # what the failed condition saw: the next read may start there
            raise  # refused: nothing written
        except BaseException:
            note_commit(self, session_id)  # it may have applied
            raise
        note_commit(self, session_id)

    def _commit(
        self,
        session_id: str,
        record: Checkpoint,
        expected_version: int,
        lease_owner: str | None,
    ) -> None:
        """:meth:`commit`'s writes (the module docstring's protocol)."""
        validate_session_id(session_id)
        _common.check_record_fits(session_id, record, expected_version)
        plan = self._plan_for(session_id, expected_version, lease_owner)
        version = record.version
        token = new_chunk_token()
        placement = self._placement(record, plan, token)
        self._put_first(session_id, version, token, placement)
        previous = plan.attrs if plan is not None else None
        request = commit_request(
            self.table_name,
            record,
            expected_version,
            lease_owner=lease_owner,
            chunks=(placement.how, placement.entries if placement.how == "set" else placement.entries[-1:]),
            base=placement.base,
            sizes=placement.sizes,
            ttl_days=self.finished_ttl_days,
            previous=previous,
        )
        try:
            self._update_item(session_id, expected_version, request)
        except CommitConflictError as conflict:
            # botocore retries an UpdateItem whose response was lost; when the first attempt had
            # applied, the retry fails its condition against our own write. Only the item can tell.
            if not self._landed(conflict, session_id, version, token):
                self._discard_own(session_id, version, token, placement)  # garbage, never state
                raise
        self._cache_placed(session_id, version, token, placement)
        after = self._plan_after(record, plan, placement)
        self._remember(session_id, after)
        if plan is not None and placement.base is not None:  # a snapshot: the segments before it are unlisted
            gone = set(plan.segment_tokens()) - set(after.segment_tokens())
            delete_segments(self._ddb, self.table_name, session_id, sorted(gone))

    def _placement(self, record: Checkpoint, plan: Plan | None, token: str) -> Placement:
        """Encode ``record`` as a delta on ``plan`` (a snapshot when due) and place it (see ``plan``).

        A finished session whose item will expire (``finished_ttl_days``) gets no segment item: none
        may outlive its session item.
        """
        segments_ok = self.finished_ttl_days is None or not is_finished(record.status)
        chunk = encode_chunk(record, plan.counts if plan else None, scheduled=False)
        data = chunk_bytes(chunk)
        packed = pack(data)  # compressed once: the snapshot test and the placement both use it
        due = plan is not None and plan.snapshot_due(len(data), len(packed), segments_ok=segments_ok)
        if plan is not None and not chunk["full"] and due:
            chunk = encode_chunk(record, None, scheduled=False)  # deltas since the snapshot outweigh it
            data = chunk_bytes(chunk)
            packed = pack(data)
        if plan is None or chunk["full"]:
            return place_full(record.version, token, data, segments_ok=segments_ok, packed=packed)
        return place_delta(plan, record.version, token, data, segments_ok=segments_ok, packed=packed)

    def _put_first(self, session_id: str, version: int, token: str, placement: Placement) -> None:
        """What this attempt writes before its conditional write: an S3 chunk object, a segment item."""
        if placement.s3_chunk is not None:
            aws_call(
                self._s3.put_object,
                operation="commit",
                session_id=session_id,
                Bucket=self.bucket,
                Key=self.keys.chunk(session_id, version, token),
                Body=encode_body(placement.s3_chunk),
                ContentType="application/json",
                ContentEncoding=CONTENT_ENCODING,
            )
        if placement.segment is not None:
            put_segment(self._ddb, self.table_name, session_id, placement.segment)

    def _discard_own(self, session_id: str, version: int, token: str, placement: Placement) -> None:
        """Remove what this losing attempt put first (no item lists it); failing to is harmless."""
        if placement.s3_chunk is not None:
            self._discard(self.keys.chunk(session_id, version, token))
        if placement.segment is not None:
            delete_segments(self._ddb, self.table_name, session_id, [placement.segment.token])

    def _cache_placed(self, session_id: str, version: int, token: str, placement: Placement) -> None:
        """Keep the bytes this commit put (immutable): a warm load reads none of them back."""
        if placement.s3_chunk is not None:
            self._cache_chunk(self.keys.chunk(session_id, version, token), placement.s3_chunk)
        if placement.segment is not None:
            self._cache_segment(session_id, placement.segment)

    def _plan_after(self, record: Checkpoint, plan: Plan | None, placement: Placement) -> Plan:
        """The plan of the version just committed: what the next commit builds on without a read."""
        previous = plan.attrs if plan is not None else None
        return Plan(
            version=record.version,
            counts=(len(record.messages), len(record.trail)),
            base=record.version if placement.base is not None else plan.base,  # type: ignore[union-attr]
            entries=placement.entries,
            inline_bytes=inline_size(placement.entries),
            delta_bytes=placement.sizes["delta_bytes"],
            full_bytes=placement.sizes["full_bytes"],
            attrs=committed_attributes(record, placement.sizes, self.finished_ttl_days, previous),
        )

    def _update_item(self, session_id: str, expected_version: int, request: dict[str, Any]) -> None:
        """The commit's conditional UpdateItem (nothing rides it: issue 24)."""
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

        Chunk tokens are unique per commit attempt (``layout.new_chunk_token``), so an item at
        ``version`` or later listing ``token`` (an entry's, or a segment item's this attempt put)
        means this attempt's UpdateItem applied, whatever its retry answered. The item is the one
        the failed condition saw (``ALL_OLD``, no extra call), else one GetItem; when a later
        commit moved this version's chunk into a segment item, one GetItem of that segment item.
        A read that fails raises ``StoreError``: the chunk is then kept, never deleted while a
        committed item might point at it.
        """
        item = conflict_item(conflict) or self._item(session_id)
        if not item or "version" not in item or int(item["version"]["N"]) < version or "chunks" not in item:
            return False
        entries = item["chunks"]["L"]
        if any(entry_token(e) == token for e in entries):
            return True
        found = locate(int(item["base"]["N"]), entries, version)
        moved = entry_item_segment(found[0]) if found is not None else None
        if found is None or moved is None:
            return False
        segment = read_segment(self._ddb, self.table_name, session_id, moved[0])
        return segment is not None and found[1] < len(segment.chunks) and segment.chunks[found[1]][0] == token

    def _discard(self, key: str) -> None:
        try:
            aws_call(self._s3.delete_object, operation="discard", Bucket=self.bucket, Key=key)
        except StoreError:
            pass  # an unreferenced chunk is garbage, never state: failing to tidy it is harmless
