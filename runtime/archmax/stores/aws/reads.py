"""The AWS store's reads: the session item, the chunks it lists, guarded reads and the held-mail hint.

Rule source: BEHAVIOUR.md §9.1, §9.3 (a load reads the item, then exactly the chunks it lists);
issue 10 (``load_if`` in one GetItem; guarded reads; the summary's one call via the hint).
Round trips: ``head`` and ``load_if``'s refusal are one GetItem; ``load`` is one GetItem, plus one
BatchGetItem of the segment items it lists and one GetObject per S3 chunk, each only when not
already cached (both are immutable, so their bytes are kept); an S3 chunk body is gzip or, written
before issue 24, plain JSON (:mod:`archmax.stores.aws.bodies`). A listed segment item that is gone
(a concurrent snapshot unlisted and deleted it) makes the load read the item again (issue 24).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from archmax.errors import StoreError
from archmax.session.ids import validate_session_id
from archmax.session.records import Checkpoint
from archmax.stores import common as _common
from archmax.stores.aws.bodies import decode_body
from archmax.stores.aws.errors import aws_call
from archmax.stores.aws.guards import _GUARDED, GuardedReads
from archmax.stores.aws.item import head_of_item, quarantine_hint_of_item
from archmax.stores.aws.plan import (
    Plan,
    Segment,
    entry_inline,
    entry_item_segment,
    entry_segment,
    entry_token,
    entry_versions,
    is_inline,
    segment_chunks,
    unpack,
)
from archmax.stores.aws.segments import read_segments
from archmax.stores.aws.state import CHUNK_CACHE_BYTES, PLANS_CACHE_SIZE, AwsState
from archmax.stores.base import ReadGuards, SessionHead
from archmax.stores.codec import chunk_from_bytes, decode_chunks

RELOADS = 3
"""Item reads at most for one load whose listed segment items a concurrent snapshot deleted."""


class AwsReads(AwsState):
    """Session reads of :class:`~archmax.stores.aws.store.AwsStore` (see the module docstring)."""

    def load(self, session_id: str, *, reads: ReadGuards | None = None) -> Checkpoint | None:
        """The latest committed checkpoint, or ``None`` (§9.1).

        Reads the item (strongly consistent), then exactly the chunks it lists, ``base .. version``.
        An object no item lists (a losing or crashed commit) is never read.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure, or chunks that do not rebuild the record.
        """
        validate_session_id(session_id)
        return self.load_if(session_id, lambda _: True, reads=reads)[1]

    def load_if(
        self, session_id: str, wanted: Callable[[SessionHead], bool], *, reads: ReadGuards | None = None
    ) -> tuple[SessionHead | None, Checkpoint | None]:
        """The head, and the whole record only when ``wanted(head)``: one GetItem either way (issue 10).

        What a refusal needs (a double-fired timer into a finished session) is in the item; the
        chunks are read only for a session the caller will act on.

        Raises:
            InvalidSessionIdError / StoreError: as :meth:`load`.
        """
        validate_session_id(session_id)
        item = self._item(session_id, reads)
        for _ in range(RELOADS):
            if item is None:
                return None, None
            head = head_of_item(item)
            _common.same_session(session_id, head)
            if not wanted(head):
                return head, None
            record = self._record_of(session_id, item)
            if record is not None:
                return head, record
            # A segment item it lists is gone: a later snapshot unlisted and deleted it. Read again.
            fresh = self._item(session_id, fresh=True)
            if fresh is not None and int(fresh["version"]["N"]) == head.version:
                break
            item = fresh
        raise StoreError("a segment item listed by the session item is missing", session_id=session_id)

    def _record_of(self, session_id: str, item: dict[str, Any]) -> Checkpoint | None:
        """The record ``item`` lists, or ``None`` when a segment item it lists does not exist (any more)."""
        plan = Plan.of_item(item)
        if plan.base + plan.covered() - 1 != plan.version:
            raise StoreError(
                f"session item lists chunks {plan.base}+{plan.covered()} for version {plan.version}",
                session_id=session_id,
            )
        segments = self._segments(session_id, plan.segment_tokens())
        if segments is None:
            return None
        objects = self._objects_of(session_id, plan)
        datas: builtins.list[bytes] = []
        version = plan.base
        for entry in plan.entries:
            datas.extend(self._entry_datas(session_id, version, entry, segments, objects))
            version += entry_versions(entry)
        record = decode_chunks([chunk_from_bytes(b) for b in datas])
        _common.same_session(session_id, record)
        self._remember(session_id, plan)
        return record

    def _objects_of(self, session_id: str, plan: Plan) -> dict[str, bytes]:
        """The S3 objects ``plan`` lists (chunks, and S3 segments written before issue 24), each read once."""
        keys: builtins.list[str] = []
        version = plan.base
        for entry in plan.entries:
            key = self._object_key(session_id, version, entry)
            if key is not None and key not in keys:
                keys.append(key)
            version += entry_versions(entry)
        return dict(zip(keys, self._read_chunks(session_id, keys), strict=True))

    def _object_key(self, session_id: str, version: int, entry: dict[str, Any]) -> str | None:
        """The S3 key holding ``entry``'s chunk (at ``version``), or ``None`` when it is not in S3."""
        old_segment = entry_segment(entry)
        if old_segment is not None:
            return self.keys.segment(session_id, old_segment)
        if not is_inline(entry) and entry_item_segment(entry) is None:  # no decompressing to tell
            return self.keys.chunk(session_id, version, entry_token(entry))
        return None

    def _entry_datas(
        self,
        session_id: str,
        version: int,
        entry: dict[str, Any],
        segments: dict[str, Segment],
        objects: dict[str, bytes],
    ) -> builtins.list[bytes]:
        """The chunk bytes of the versions ``entry`` covers, from the item, segment items or S3 objects read."""
        inline = entry_inline(entry)
        if inline is not None:
            return [inline]
        moved = entry_item_segment(entry)
        if moved is not None:
            segment = segments[moved[0]]
            if segment.first != version or len(segment.chunks) != moved[1]:
                raise StoreError(
                    f"segment item {moved[0]} holds {segment.first}+{len(segment.chunks)}, "
                    f"listed as {version}+{moved[1]}",
                    session_id=session_id,
                )
            return [unpack({"B": packed}) for _, packed in segment.chunks]
        data = objects[self._object_key(session_id, version, entry) or ""]
        old_segment = entry_segment(entry)
        return [segment_chunks(data)[entry_token(entry)] if old_segment is not None else data]

    def _segments(self, session_id: str, tokens: builtins.list[str]) -> dict[str, Segment] | None:
        """The segment items ``tokens`` name: from this instance's cache, else one BatchGetItem; ``None`` if one is gone."""
        with self._lock:
            have = {t: self._segment_cache[(session_id, t)] for t in tokens if (session_id, t) in self._segment_cache}
        missing = [t for t in tokens if t not in have]
        if not missing:
            return have
        fetched = read_segments(self._ddb, self.table_name, session_id, missing)
        if len(fetched) < len(missing):
            return None
        for segment in fetched.values():
            self._cache_segment(session_id, segment)
        return {**have, **fetched}

    def _cache_segment(self, session_id: str, segment: Segment) -> None:
        """Keep a segment item (immutable, its token unique) for later loads of this instance."""
        size = sum(len(data) for _, data in segment.chunks)
        with self._lock:
            key = (session_id, segment.token)
            if key in self._segment_cache:
                self._segment_cache.move_to_end(key)
                return
            self._segment_cache[key] = segment
            self._chunk_bytes += size
            self._evict()

    def head(self, session_id: str, *, reads: ReadGuards | None = None) -> SessionHead | None:
        """The latest version's head from the item alone (one GetItem), or ``None``.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        item = self._item(session_id, reads)
        return _common.same_session(session_id, None if item is None else head_of_item(item))

    # ------------------------------------------------------------------ held mail hint (issue 10, issue 13 item 1)

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

    def prime(self, session_id: str, item: dict[str, Any] | None) -> None:
        """Remember ``item`` (a session item as stored; ``None``: there is none) as the session's latest version.

        What a refused commit's condition found (``ALL_OLD``; :meth:`commit` calls it on a
        ``CommitConflictError``): the next guarded read answers from it, so the firing is decided
        again without another read.
        """
        validate_session_id(session_id)
        with self._lock:
            if item is None or "version" not in item:
                self._plans.pop(session_id, None)
                self._absent[session_id] = None
                return
        self._remember(session_id, Plan.of_item(item))

    # ------------------------------------------------------------------ internals

    def _item(self, session_id: str, reads: ReadGuards | None = None, *, fresh: bool = False) -> dict[str, Any] | None:
        """The session item: from ``reads`` (else the enclosing ``guarded_reads()`` block) when it serves it, else one GetItem.

        ``fresh`` always reads the table.
        """
        guards = reads if reads is not None else _GUARDED.get()  # the explicit hint wins over the ambient block
        if not fresh and isinstance(guards, GuardedReads) and guards.store is self and guards.serves(session_id):
            self._read.item = None  # a remembered view: its hint may be stale (held_mail_hint answers "unknown")
            return guards.item(session_id)
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

    def _remember(self, session_id: str, plan: Plan) -> None:
        with self._lock:
            self._absent.pop(session_id, None)
            self._plans[session_id] = plan
            self._plans.move_to_end(session_id)
            while len(self._plans) > PLANS_CACHE_SIZE:
                self._plans.popitem(last=False)

    def _read_chunks(self, session_id: str, keys: builtins.list[str]) -> builtins.list[bytes]:
        with self._lock:
            have = {k: self._chunks[k] for k in keys if k in self._chunks}
        missing = [k for k in keys if k not in have]

        def fetch(key: str) -> bytes:
            body = self._get_object(key, session_id=session_id)
            if body is None:
                raise StoreError(f"checkpoint chunk {key} listed by the session item is missing", session_id=session_id)
            return decode_body(body, key=key, session_id=session_id)  # gzip since issue 24, plain JSON before

        if len(missing) > 1:
            with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
                fetched = dict(zip(missing, pool.map(fetch, missing), strict=True))
        else:
            fetched = {k: fetch(k) for k in missing}
        for key, data in fetched.items():
            self._cache_chunk(key, data)
        return [have[k] if k in have else fetched[k] for k in keys]  # an empty body is bytes too (attack32)

    def _cache_chunk(self, key: str, data: bytes) -> None:
        with self._lock:
            if key in self._chunks:
                self._chunks.move_to_end(key)
                return
            self._chunks[key] = data
            self._chunk_bytes += len(data)
            self._evict()

    def _evict(self) -> None:
        """Drop the least recently kept chunks and segment items past ``CHUNK_CACHE_BYTES`` (lock held)."""
        while self._chunk_bytes > CHUNK_CACHE_BYTES and self._chunks:
            _, dropped = self._chunks.popitem(last=False)
            self._chunk_bytes -= len(dropped)
        while self._chunk_bytes > CHUNK_CACHE_BYTES and self._segment_cache:
            _, segment = self._segment_cache.popitem(last=False)
            self._chunk_bytes -= sum(len(data) for _, data in segment.chunks)

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
