"""AwsStore commits: one winner among racing threads, bodies of failed commits never read, TTL.

Rule source: BEHAVIOUR.md §9.1 (commit atomically creates the next version), §9.2 ("a body whose
item never advanced is never read"), DESIGN.md §3 (TTL for finished sessions).
Real threads against the moto server (DESIGN.md §6), no timing assertions.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from archmax.errors import CommitConflictError, StoreError
from archmax.session.records import SessionStatus
from archmax.stores.aws.plan import SEGMENT_MAX_BYTES, entry_inline
from archmax.stores.codec import chunk_bytes, chunk_from_bytes, encode_chunk

from .moto_env import CallLog
from .records import filler, record

THREADS = 20


def _race(store_for: Any, work: Any) -> list[BaseException | None]:
    """Run ``work(i, store)`` on THREADS real threads released together; each thread its own store."""
    stores = [store_for() for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    results: list[BaseException | None] = [None] * THREADS

    def run(i: int) -> None:
        barrier.wait()
        try:
            work(i, stores[i])
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_twenty_threads_committing_the_same_expected_version_have_exactly_one_winner(aws_env: Any) -> None:
    sid = "race-1"
    aws_env.store().commit(sid, record(sid, 1, writer="first"), 0)

    results = _race(aws_env.store, lambda i, s: s.commit(sid, record(sid, 2, messages=2, writer=f"w{i}"), 1))

    winners = [i for i, r in enumerate(results) if r is None]
    losers = [r for r in results if r is not None]
    assert len(winners) == 1
    assert all(isinstance(r, CommitConflictError) for r in losers), losers
    assert all(r.found and r.found["version"] == 2 for r in losers)  # type: ignore[union-attr]
    loaded = aws_env.store().load(sid)
    assert loaded is not None and loaded.version == 2
    # The body read back is the winner's: no loser overwrote it.
    assert loaded.variables["writer"].value == f"w{winners[0]}"


def test_twenty_threads_creating_the_same_new_session_have_exactly_one_winner(aws_env: Any) -> None:
    sid = "race-new"
    results = _race(aws_env.store, lambda i, s: s.commit(sid, record(sid, 1, writer=f"w{i}"), 0))

    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1
    assert all(isinstance(r, CommitConflictError) for r in results if r is not None)
    assert aws_env.store().load(sid).variables["writer"].value == f"w{winners[0]}"


def test_stale_commit_conflict_carries_what_the_item_held(aws_env: Any) -> None:
    sid = "stale"
    writer, late = aws_env.store(), aws_env.store()
    writer.commit(sid, record(sid, 1, lease_owner="turn-a"), 0)
    late.load(sid)  # the late writer read version 1 ...
    writer.commit(sid, record(sid, 2, lease_owner="turn-a"), 1, lease_owner="turn-a")

    with CallLog(aws_env.dynamodb) as log, pytest.raises(CommitConflictError) as caught:
        late.commit(sid, record(sid, 2, writer="late"), 1)  # ... and commits on it
    assert log.calls == ["dynamodb.UpdateItem"]  # refused by the item's condition itself
    assert caught.value.expected_version == 1
    assert caught.value.found == {"version": 2, "status": "running", "lease_owner": "turn-a"}


def test_conflict_seen_before_writing_carries_the_same_report(aws_env: Any) -> None:
    sid = "stale-early"
    writer = aws_env.store()
    writer.commit(sid, record(sid, 1, lease_owner="turn-a"), 0)
    writer.commit(sid, record(sid, 2, lease_owner="turn-a"), 1, lease_owner="turn-a")

    with CallLog(aws_env.s3) as log, pytest.raises(CommitConflictError) as caught:
        aws_env.store().commit(sid, record(sid, 2, writer="late"), 1)
    assert log.calls == []  # nothing was put
    assert caught.value.found == {"version": 2, "status": "running", "lease_owner": "turn-a"}


def test_commit_under_another_lease_owner_is_refused_by_the_item_condition(aws_env: Any) -> None:
    sid = "lease"
    writer = aws_env.store()
    writer.commit(sid, record(sid, 1, lease_owner="turn-a"), 0)
    # A different instance has no cached view, so the refusal must come from DynamoDB's condition
    # or the early item read; either way nothing advances.
    with pytest.raises(CommitConflictError):
        aws_env.store().commit(sid, record(sid, 2, lease_owner="turn-b"), 1, lease_owner="turn-b")
    with pytest.raises(CommitConflictError) as caught:
        writer.commit(sid, record(sid, 2, lease_owner="turn-b"), 1, lease_owner="turn-b")
    assert caught.value.found["lease_owner"] == "turn-a"
    assert aws_env.store().head(sid).version == 1


class _ProcessDied(Exception):
    """Stands for a process that stopped between the S3 put and the item commit."""


def test_chunk_put_whose_item_commit_never_happened_is_never_read(aws_env: Any) -> None:
    sid = "orphan"
    store = aws_env.store()
    store.commit(sid, record(sid, 1, writer="committed", pad=2 * SEGMENT_MAX_BYTES), 0)  # too big for the item: S3

    def die(**_: Any) -> None:
        raise _ProcessDied

    aws_env.dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", die, unique_id="die")
    try:
        with pytest.raises(_ProcessDied):
            # a delta too large for the item: its chunk is put to S3 before the item commit
            store.commit(sid, record(sid, 2, messages=3, writer="never committed", pad=2 * SEGMENT_MAX_BYTES), 1)
    finally:
        aws_env.dynamodb.meta.events.unregister("before-call.dynamodb.UpdateItem", unique_id="die")

    objects = aws_env.s3.list_objects_v2(Bucket=aws_env.bucket, Prefix=f"{sid}/checkpoints/")["Contents"]
    assert len(objects) == 2  # the orphan body is in S3 ...
    for reader in (store, aws_env.store()):
        loaded = reader.load(sid)
        assert loaded.version == 1 and loaded.variables["writer"].value == "committed"  # ... and never read

    # The next writer of version 2 is not blocked by the orphan, and its body is the one read.
    store.commit(sid, record(sid, 2, messages=2, writer="second"), 1)
    assert aws_env.store().load(sid).variables["writer"].value == "second"


def test_losing_commit_removes_its_own_body(aws_env: Any) -> None:
    sid = "tidy"
    aws_env.store().commit(sid, record(sid, 1, pad=2 * SEGMENT_MAX_BYTES), 0)  # bodies too big for the item: S3
    with pytest.raises(CommitConflictError):
        aws_env.store().commit(sid, record(sid, 1, writer="loser", pad=2 * SEGMENT_MAX_BYTES), 0)
    objects = aws_env.s3.list_objects_v2(Bucket=aws_env.bucket, Prefix=f"{sid}/checkpoints/")["Contents"]
    assert len(objects) == 1


def _item(aws_env: Any, sid: str) -> dict[str, Any]:
    return aws_env.dynamodb.get_item(TableName=aws_env.table_name, Key={"pk": {"S": sid}}, ConsistentRead=True)["Item"]


@pytest.mark.parametrize("status", [SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.REJECTED])
def test_finished_session_item_gets_ttl_days_after_its_last_update(aws_env: Any, status: SessionStatus) -> None:
    sid = f"ttl-{status}"
    store = aws_env.store(finished_ttl_days=30)
    store.commit(sid, record(sid, 1), 0)
    assert "ttl" not in _item(aws_env, sid)

    store.commit(sid, record(sid, 2, status=status, updated_at="2025-03-01T12:00:00.000Z"), 1)

    expected = datetime(2025, 3, 1, 12, tzinfo=UTC) + timedelta(days=30)
    assert int(_item(aws_env, sid)["ttl"]["N"]) == int(expected.timestamp())


@pytest.mark.parametrize(
    "status", [SessionStatus.RUNNING, SessionStatus.AWAITING_INPUT, SessionStatus.AWAITING_DECISION]
)
def test_open_session_item_has_no_ttl(aws_store: Any, aws_env: Any, status: SessionStatus) -> None:
    sid = f"open-{status}"
    aws_store.commit(sid, record(sid, 1, status=status, resume_at="2025-01-02T00:00:00.000Z"), 0)
    assert "ttl" not in _item(aws_env, sid)


def test_new_turn_on_a_finished_session_removes_its_ttl(aws_env: Any) -> None:
    sid = "again"
    aws_store = aws_env.store(finished_ttl_days=30)
    aws_store.commit(sid, record(sid, 1, status=SessionStatus.COMPLETED), 0)
    assert "ttl" in _item(aws_env, sid)
    aws_store.commit(sid, record(sid, 2, messages=2), 1)
    assert "ttl" not in _item(aws_env, sid)


def test_finished_sessions_are_kept_by_default_as_finishing_deletes_nothing(aws_env: Any) -> None:
    sid = "keep"
    aws_env.store().commit(sid, record(sid, 1, status=SessionStatus.COMPLETED), 0)
    assert "ttl" not in _item(aws_env, sid)


def test_load_reads_the_item_then_only_the_listed_chunks_and_never_lists_s3(aws_env: Any) -> None:
    sid = "hot-path"
    writer = aws_env.store()
    for v in range(1, 3):  # version 1 too big for a segment item (an S3 object), version 2 small (~1.1 KB)
        writer.commit(sid, record(sid, v, messages=v, pad=2 * SEGMENT_MAX_BYTES if v == 1 else 0), v - 1)

    reader = aws_env.store()
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        loaded = reader.load(sid)
    assert loaded.version == 2 and len(loaded.messages) == 2
    assert log.count("dynamodb.GetItem") == 1
    assert log.count("s3.GetObject") == 1  # the full chunk of version 1; the delta came inside the item
    assert log.count() == 2  # no ListObjects, no Scan

    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        reader.commit(sid, record(sid, 3, messages=3), 2)
    assert log.calls == ["dynamodb.UpdateItem"]  # a small delta travels inside the item's update

    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        reader.commit(sid, record(sid, 4, messages=4, pad=2 * SEGMENT_MAX_BYTES), 3)
    assert sorted(log.calls) == ["dynamodb.UpdateItem", "s3.PutObject"]  # too large for a segment item
    assert aws_env.store().load(sid).messages[-1].content.endswith(filler(2 * SEGMENT_MAX_BYTES, f"{sid}3"))


def test_delta_commit_writes_only_what_was_appended(aws_env: Any) -> None:
    sid = "delta"
    store = aws_env.store()
    store.commit(sid, record(sid, 1, messages=200), 0)
    store.commit(sid, record(sid, 2, messages=201), 1)
    full = chunk_bytes(encode_chunk(record(sid, 1, messages=200), None, scheduled=False))
    item = aws_env.dynamodb.get_item(TableName=aws_env.table_name, Key={"pk": {"S": sid}})["Item"]
    delta = entry_inline(item["chunks"]["L"][-1])  # version 2's delta, inside the item
    assert delta is not None and len(delta) * 4 < len(full)
    assert len(chunk_from_bytes(delta)["messages"]) == 1  # only the message appended
    assert aws_env.store().load(sid).messages[-1].content == "message 200"


def test_head_is_one_item_read(aws_env: Any) -> None:
    sid = "head"
    aws_env.store().commit(
        sid, record(sid, 1, status=SessionStatus.AWAITING_INPUT, resume_at="2025-01-02T00:00:00.000Z"), 0
    )
    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        head = aws_env.store().head(sid)
    assert log.calls == ["dynamodb.GetItem"]
    assert head.version == 1 and head.resume_at == "2025-01-02T00:00:00.000Z"


def test_item_listing_chunks_that_are_gone_fails_as_a_store_error(aws_env: Any) -> None:
    sid = "lost"
    aws_env.store().commit(sid, record(sid, 1, pad=2 * SEGMENT_MAX_BYTES), 0)  # an S3 object
    for obj in aws_env.s3.list_objects_v2(Bucket=aws_env.bucket, Prefix=f"{sid}/")["Contents"]:
        aws_env.s3.delete_object(Bucket=aws_env.bucket, Key=obj["Key"])
    with pytest.raises(StoreError, match="missing"):
        aws_env.store().load(sid)
