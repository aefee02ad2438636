"""Where a commit's chunk goes on AWS: inside the item while small, segment items, S3 snapshots (issues 10, 24).

Rule source: BEHAVIOUR.md §9.3 (deltas; load returns the whole record; commit bytes do not grow with
the transcript), DESIGN.md §3 "The commit protocol" (small deltas inside the item's update, an
update sends only what changed; an object nobody points at is garbage, never state), issue 24
goal 2 (a session item of ≲ 4 KB whatever the transcript, without an S3 PUT per cycle).
"""

from __future__ import annotations

from typing import Any

from archmax.errors import CommitConflictError
from archmax.session.records import Message, SessionStatus
from archmax.stores.aws.plan import (
    INLINE_BUDGET_BYTES,
    MAX_SEGMENTS,
    SEGMENT_MAX_BYTES,
    SNAPSHOT_MIN_BYTES,
    Segment,
    entry_inline,
    entry_item_segment,
    pack,
)
from archmax.stores.aws.segments import SEPARATOR, segment_item, segment_key
from archmax.stores.codec import chunk_bytes, chunk_from_bytes, encode_chunk

from .moto_env import CallLog, table_definition
from .records import filler, record


def _item(aws_env: Any, sid: str) -> dict[str, Any]:
    return aws_env.dynamodb.get_item(TableName=aws_env.table_name, Key={"pk": {"S": sid}}, ConsistentRead=True)["Item"]


def _value_size(value: dict[str, Any]) -> int:
    """A DynamoDB attribute value's billed size (documented rules; numbers rounded up to their 21-byte cap)."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return 21
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in inner.items())
    if kind == "SS":
        return sum(len(v.encode()) for v in inner)
    return 1  # BOOL, NULL


def _size(item: dict[str, Any]) -> int:
    """The item's size as DynamoDB bills it: each attribute's name plus its value."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _segment_items(aws_env: Any, sid: str) -> list[dict[str, Any]]:
    prefix = f"{sid}{SEPARATOR}segment{SEPARATOR}"
    items = aws_env.dynamodb.scan(TableName=aws_env.table_name, ConsistentRead=True)["Items"]
    return [i for i in items if i["pk"]["S"].startswith(prefix)]


def _listed(aws_env: Any, sid: str) -> list[str]:
    return [found[0] for e in _item(aws_env, sid)["chunks"]["L"] if (found := entry_item_segment(e)) is not None]


def _rec(sid: str, v: int, pad: int) -> Any:
    rec = record(sid, v, messages=v, writer=f"v{v}")
    rec.messages = [Message(role="user", content=f"message {i} " + filler(pad, f"{sid}{i}")) for i in range(v)]
    return rec


def _packed_delta(pad: int) -> int:
    return len(pack(chunk_bytes(encode_chunk(_rec("probe", 5, pad), (4, 0), scheduled=False))))


PAD = next(p for p in range(0, 8000, 25) if _packed_delta(p) >= 0.4 * INLINE_BUDGET_BYTES)
"""Each message's filler: a delta then packs to ~0.4 of the inline budget (two fit it, three do not)."""


def _grow(store: Any, sid: str, versions: int, pad: int = 0, start: int = 1) -> Any:
    """Commit versions start..versions, each appending one message of about ``pad`` characters (append-only)."""
    rec = None
    for v in range(start, versions + 1):
        rec = _rec(sid, v, pad)
        store.commit(sid, rec, v - 1)
    return rec


def test_the_session_item_stays_under_4_kb_over_300_turns_of_1_kb_deltas_and_loads_exactly(aws_env: Any) -> None:
    sid = "long"
    store = aws_env.store()
    largest = 0
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        for v in range(1, 301):
            rec = _rec(sid, v, pad=PAD)  # each delta ~1 KB packed (the record's other fields ride every delta)
            store.commit(sid, rec, v - 1)
            largest = max(largest, _size(_item(aws_env, sid)))
    assert largest < 4096  # issue 24 goal 2, whatever the transcript's length
    puts, snapshots = log.count("dynamodb.PutItem"), log.count("s3.PutObject")
    assert log.count("dynamodb.UpdateItem") == 300
    assert 300 // 5 <= puts <= 300 // 2  # a segment item per two commits (or a small snapshot), never one per commit
    assert snapshots <= 300 // 20  # full snapshots only, each after many deltas
    # every segment item still in the table is one the item lists: those a snapshot unlisted are gone
    assert sorted(i["pk"]["S"].rsplit(SEPARATOR, 1)[1] for i in _segment_items(aws_env, sid)) == sorted(
        _listed(aws_env, sid)
    )
    assert aws_env.store().load(sid) == rec  # a cold reader rebuilds the very record
    assert store.load(sid) == rec


def test_a_cold_load_reads_the_item_and_every_segment_item_in_one_batch(aws_env: Any) -> None:
    sid = "cold"
    last = _grow(aws_env.store(), sid, 12, pad=PAD)
    assert len(_listed(aws_env, sid)) >= 3  # moved out in several segment items
    reader = aws_env.store()
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        assert reader.load(sid) == last
    assert log.calls == ["dynamodb.GetItem", "dynamodb.BatchGetItem"]  # no S3 call: nothing lives there
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        assert reader.load(sid) == last
    assert log.calls == ["dynamodb.GetItem"]  # segment items are immutable: a warm reader keeps them


def test_inline_chunks_move_out_with_the_newest_kept_inline_for_the_stream_image(aws_env: Any) -> None:
    sid = "moves"
    store = aws_env.store()
    calls: list[str] = []
    v = 0
    while "dynamodb.PutItem" not in calls and v < 10:  # until the inline budget runs out
        v += 1
        with CallLog(aws_env.dynamodb, aws_env.s3) as log:
            store.commit(sid, _rec(sid, v, pad=PAD), v - 1)
        calls = log.calls
    assert 3 <= v < 10 and calls == ["dynamodb.PutItem", "dynamodb.UpdateItem"]  # the segment item, then the CAS
    entries = _item(aws_env, sid)["chunks"]["L"]
    assert "z" in entries[-1]["M"]  # the newest chunk still rides the item
    inline = sum(len(e["M"]["z"]["B"]) for e in entries if "z" in e.get("M", {}))
    assert inline <= INLINE_BUDGET_BYTES
    assert aws_env.store().load(sid) == _rec(sid, v, pad=PAD)


def test_only_the_newest_inline_chunk_keeps_the_record_the_older_ones_only_what_they_appended(aws_env: Any) -> None:
    sid = "trim"
    store = aws_env.store()
    _grow(store, sid, 2, pad=PAD)
    first, last = _item(aws_env, sid)["chunks"]["L"]
    assert "record" not in chunk_from_bytes(entry_inline(first) or b"")  # read only for its messages
    assert chunk_from_bytes(entry_inline(last) or b"")["record"]["version"] == 2  # the stream image's record
    assert aws_env.store().load(sid) == _rec(sid, 2, pad=PAD)


def test_a_full_snapshot_is_written_once_the_deltas_since_the_last_outweigh_it(aws_env: Any) -> None:
    sid = "snapshot"
    store = aws_env.store()
    versions = SNAPSHOT_MIN_BYTES // 3000 + 10  # ~3 KB deltas: each its own segment item, past the threshold
    last = _grow(store, sid, versions, pad=1900)
    item = _item(aws_env, sid)
    assert int(item["base"]["N"]) > 1  # a later full snapshot restarted the chunk list
    assert int(item["delta_bytes"]["N"]) < SNAPSHOT_MIN_BYTES
    assert aws_env.store().load(sid) == last


def test_a_snapshot_is_due_once_the_item_lists_max_segments(aws_env: Any) -> None:
    sid = "many"
    store = aws_env.store()
    for v in range(1, 4 * MAX_SEGMENTS):
        store.commit(sid, _rec(sid, v, pad=PAD), v - 1)
        assert len(_listed(aws_env, sid)) <= MAX_SEGMENTS
    assert int(_item(aws_env, sid)["base"]["N"]) > 1


def test_a_segment_item_no_session_item_lists_is_never_read(aws_env: Any) -> None:
    sid = "garbage"
    store = aws_env.store()
    last = _grow(store, sid, 6, pad=PAD)
    forged = encode_chunk(record(sid, 6, messages=6, writer="garbage"), None, scheduled=False)
    junk = segment_item(sid, Segment("feedfacefeedface", 1, (("feedfacefeedface", chunk_bytes(forged)),)))
    aws_env.dynamodb.put_item(TableName=aws_env.table_name, Item=junk)  # as a crashed writer left it
    asked: list[Any] = []

    def keep(params: dict[str, Any], **_: Any) -> None:
        asked.extend(k["pk"]["S"] for k in params["RequestItems"][aws_env.table_name]["Keys"])

    aws_env.dynamodb.meta.events.register("provide-client-params.dynamodb.BatchGetItem", keep, unique_id="asked")
    try:
        assert aws_env.store().load(sid) == last
    finally:
        aws_env.dynamodb.meta.events.unregister("provide-client-params.dynamodb.BatchGetItem", unique_id="asked")
    assert asked and junk["pk"]["S"] not in asked  # only the listed ones were asked for
    assert sid not in [i for i in aws_env.store().list() if i != sid] and aws_env.store().list() == [sid]


def test_a_losing_commit_deletes_the_segment_item_it_put(aws_env: Any) -> None:
    sid = "loser"
    winner, loser = aws_env.store(), aws_env.store()
    _grow(winner, sid, 3, pad=PAD)
    loser.load(sid)
    winner.commit(sid, _rec(sid, 4, pad=PAD), 3)
    before = _segment_items(aws_env, sid)
    try:
        loser.commit(sid, _rec(sid, 4, pad=150), 3)  # its plan says the budget ran out too: it puts one
    except CommitConflictError:
        pass
    else:
        raise AssertionError("a stale writer committed")
    assert _segment_items(aws_env, sid) == before


def test_segment_items_carry_no_key_of_an_index_nor_what_the_stream_filter_or_a_listing_wants(aws_env: Any) -> None:
    sid = "shape"
    store = aws_env.store()
    _grow(store, sid, 4, pad=PAD)
    store.commit(sid, _rec(sid, 5, pad=PAD).model_copy(update={"status": SessionStatus.AWAITING_INPUT}), 4)
    (segment, *_) = _segment_items(aws_env, sid)
    index_keys = {  # every index is sparse on its hash key
        k["AttributeName"]
        for i in table_definition()["GlobalSecondaryIndexes"]
        for k in i["KeySchema"]
        if k["KeyType"] == "HASH"
    }
    assert not set(segment) & (index_keys | {"status", "version"})  # FilterCriteria wants status; list() version
    assert segment["pk"] == segment_key(sid, segment["pk"]["S"].rsplit(SEPARATOR, 1)[1])["pk"]


def test_deleting_a_session_deletes_its_segment_items(aws_env: Any) -> None:
    sid = "gone"
    store = aws_env.store()
    _grow(store, sid, 8, pad=PAD)
    assert _segment_items(aws_env, sid)
    assert store.delete(sid)
    assert _segment_items(aws_env, sid) == []


def test_a_finished_session_that_will_expire_keeps_no_segment_item(aws_env: Any) -> None:
    sid = "expires"
    store = aws_env.store(finished_ttl_days=30)
    _grow(store, sid, 8, pad=PAD)
    assert _segment_items(aws_env, sid)
    done = _rec(sid, 9, pad=PAD).model_copy(update={"status": SessionStatus.COMPLETED})
    store.commit(sid, done, 8)
    assert "ttl" in _item(aws_env, sid) and _segment_items(aws_env, sid) == []  # a snapshot unlisted them
    assert aws_env.store().load(sid) == done


def test_a_warm_commit_sends_only_the_attributes_that_changed(aws_env: Any) -> None:
    sid = "diff"
    store = aws_env.store()
    store.commit(sid, record(sid, 1, messages=1), 0)
    sent: list[dict[str, Any]] = []

    def keep(params: dict[str, Any], **_: Any) -> None:
        sent.append(params)

    aws_env.dynamodb.meta.events.register("provide-client-params.dynamodb.UpdateItem", keep, unique_id="diff")
    try:
        store.commit(sid, record(sid, 2, messages=2), 1)
    finally:
        aws_env.dynamodb.meta.events.unregister("provide-client-params.dynamodb.UpdateItem", unique_id="diff")
    update = sent[0]["UpdateExpression"]
    names = {name for key, name in sent[0]["ExpressionAttributeNames"].items() if key in update}
    assert {"version", "message_count", "chunks"} <= names
    assert not names & {"workflow", "created_at", "status", "position"}  # unchanged since version 1
    assert "created_at" in sent[0]["ExpressionAttributeNames"].values()  # the condition names the session's start
    cold = aws_env.store().load(sid)
    assert cold.workflow == "bank-check" and cold.version == 2 and len(cold.messages) == 2


def test_a_small_first_version_rides_in_the_item_a_larger_one_a_segment_item_a_large_one_s3(aws_env: Any) -> None:
    store = aws_env.store()
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        small = record("small-start", 1, writer="first")
        store.commit("small-start", small, 0)
    assert log.calls == ["dynamodb.UpdateItem"]  # one write starts a session
    (entry,) = _item(aws_env, "small-start")["chunks"]["L"]
    assert "z" in entry["M"]  # the full chunk is inline (packed)
    assert aws_env.store().load("small-start") == small  # a cold reader rebuilds it from the item alone

    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        middle = record("middle-start", 1, writer="first", pad=SEGMENT_MAX_BYTES // 2)
        store.commit("middle-start", middle, 0)
    assert log.calls == ["dynamodb.PutItem", "dynamodb.UpdateItem"]  # cheaper than an S3 PUT
    assert aws_env.store().load("middle-start") == middle

    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        large = record("large-start", 1, writer="first", pad=2 * SEGMENT_MAX_BYTES)
        store.commit("large-start", large, 0)
    assert sorted(log.calls) == ["dynamodb.UpdateItem", "s3.PutObject"]
    assert aws_env.store().load("large-start") == large


def test_a_load_whose_segment_items_a_concurrent_snapshot_deleted_reads_the_item_again(aws_env: Any) -> None:
    sid = "race"
    writer, reader = aws_env.store(), aws_env.store()
    _grow(writer, sid, 8, pad=PAD)
    assert _listed(aws_env, sid)
    snapshot = _rec(sid, 9, pad=PAD)
    snapshot.messages[-1] = Message(role="user", content=filler(SNAPSHOT_MIN_BYTES))  # past the threshold: a snapshot
    fired: list[int] = []

    def snap(**_: Any) -> None:  # between the reader's GetItem and its BatchGetItem
        if not fired:
            fired.append(1)
            writer.commit(sid, snapshot, 8)

    aws_env.dynamodb.meta.events.register("before-call.dynamodb.BatchGetItem", snap, unique_id="snap")
    try:
        with CallLog(aws_env.dynamodb, aws_env.s3) as log:
            loaded = reader.load(sid)
    finally:
        aws_env.dynamodb.meta.events.unregister("before-call.dynamodb.BatchGetItem", unique_id="snap")
    assert _segment_items(aws_env, sid) == []  # the snapshot deleted the ones it unlisted
    assert loaded == snapshot
    reads = [c for c in log.calls if c in ("dynamodb.GetItem", "dynamodb.BatchGetItem", "s3.GetObject")]
    assert reads == ["dynamodb.GetItem", "dynamodb.BatchGetItem", "dynamodb.GetItem", "s3.GetObject"]
