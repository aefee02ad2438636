"""Where a commit's chunk goes on AWS: inside the item while small, S3 segments and snapshots by bytes (issue 10).

Rule source: BEHAVIOUR.md §9.3 (deltas; load returns the whole record; commit bytes do not grow with
the transcript), DESIGN.md §3 "The commit protocol" (small deltas inside the item's update, S3 full
snapshots and deltas too large for the item, an update sends only what changed).
"""

from __future__ import annotations

from typing import Any

from archmax.session.records import Message
from archmax.stores.aws.plan import INLINE_BUDGET_BYTES, INLINE_MAX_BYTES, SNAPSHOT_MIN_BYTES

from .moto_env import CallLog
from .records import record


def _item(aws_env: Any, sid: str) -> dict[str, Any]:
    return aws_env.dynamodb.get_item(TableName=aws_env.table_name, Key={"pk": {"S": sid}})["Item"]


def _grow(store: Any, sid: str, versions: int, pad: int = 0) -> Any:
    """Commit versions 1..n, each appending one message of about ``pad`` characters (append-only)."""
    rec = None
    for v in range(1, versions + 1):
        rec = record(sid, v, messages=v, writer=f"v{v}")
        rec.messages = [Message(role="user", content=f"message {i} " + "x" * pad) for i in range(v)]
        store.commit(sid, rec, v - 1)
    return rec


def test_inline_deltas_move_to_one_segment_when_the_item_budget_runs_out_and_load_stays_exact(aws_env: Any) -> None:
    sid = "segments"
    store = aws_env.store()
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        last = _grow(store, sid, 60, pad=900)  # ~1 KB deltas: the 24 KB budget holds about 20
    puts = log.count("s3.PutObject")
    assert log.count("dynamodb.UpdateItem") == 60
    assert 2 <= puts <= 6  # the first full chunk and a few segments, not one object per commit
    entries = _item(aws_env, sid)["chunks"]["L"]
    assert any("g" in e.get("M", {}) for e in entries)  # moved into segments (the newest may be inline)
    assert sum(len(e["M"]["b"]["S"].encode()) for e in entries if "b" in e.get("M", {})) <= INLINE_BUDGET_BYTES
    assert aws_env.store().load(sid) == last  # a cold reader rebuilds the very record
    assert store.load(sid) == last


def test_a_full_snapshot_is_written_once_the_deltas_since_the_last_outweigh_it(aws_env: Any) -> None:
    sid = "snapshot"
    store = aws_env.store()
    versions = SNAPSHOT_MIN_BYTES // 2000 + 10  # ~2 KB deltas: past the threshold
    last = _grow(store, sid, versions, pad=1900)
    item = _item(aws_env, sid)
    assert int(item["base"]["N"]) > 1  # a later full snapshot restarted the chunk list
    assert int(item["delta_bytes"]["N"]) < SNAPSHOT_MIN_BYTES
    assert aws_env.store().load(sid) == last


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
    names = set(sent[0]["ExpressionAttributeNames"].values())
    assert {"version", "message_count", "chunks"} <= names
    assert not names & {"workflow", "created_at", "status", "position"}  # unchanged since version 1
    cold = aws_env.store().load(sid)
    assert cold.workflow == "bank-check" and cold.version == 2 and len(cold.messages) == 2


def test_a_small_first_version_rides_in_the_item_and_a_large_one_goes_to_s3(aws_env: Any) -> None:
    store = aws_env.store()
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        small = record("small-start", 1, writer="first")
        store.commit("small-start", small, 0)
    assert (log.count("dynamodb.UpdateItem"), log.count("s3.PutObject")) == (1, 0)  # one write starts a session
    (entry,) = _item(aws_env, "small-start")["chunks"]["L"]
    assert "b" in entry["M"]  # the full chunk is inline
    assert aws_env.store().load("small-start") == small  # a cold reader rebuilds it from the item alone

    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        large = record("large-start", 1, writer="first", pad=SEGMENT_MAX_BYTES)
        store.commit("large-start", large, 0)
    assert (log.count("dynamodb.UpdateItem"), log.count("s3.PutObject")) == (1, 1)
    assert aws_env.store().load("large-start") == large
