"""The sparse stale-leases index and the sweep's query for turns whose process died.

Rule source: DESIGN.md §3 ("A lease whose holder died expires; the sweep re-drives sessions with
expired leases"; "No table scans on any hot path"). Only ``running`` items carry ``lease_shard``,
keyed by ``lease_expires_at`` (a running item with no lease: its ``updated_at``), so the query's
cost grows with the number of stale turns, never with the number of sessions.
"""

from __future__ import annotations

from typing import Any

from archmax.session.records import Lease, SessionStatus
from archmax.stores.aws.layout import LEASE_SHARDS

from .moto_env import CallLog
from .records import record

EXPIRES = "2025-01-01T00:15:00.000Z"
LATER = "2025-01-01T01:00:00.000Z"


def _indexed(aws_env: Any) -> dict[str, str]:
    """``{session id: lease_expires_at}`` of every item the stale-leases index holds (read straight from it)."""
    page = aws_env.dynamodb.scan(TableName=aws_env.table_name, IndexName="stale-leases")
    return {item["pk"]["S"]: item["lease_expires_at"]["S"] for item in page["Items"]}


def _running(sid: str, version: int = 1, *, owner: str | None = "turn-1", expires_at: str = EXPIRES) -> Any:
    rec = record(sid, version)
    return rec.model_copy(update={"lease": Lease(owner=owner, expires_at=expires_at) if owner else None})


def test_only_running_sessions_are_in_the_stale_index_keyed_by_lease_expiry_or_last_write(
    aws_store: Any, aws_env: Any
) -> None:
    aws_store.commit("leased", _running("leased"), 0)
    aws_store.commit("let-go", _running("let-go", owner=None), 0)
    aws_store.commit("timed", record("timed", 1, status=SessionStatus.AWAITING_INPUT, resume_at=LATER), 0)
    aws_store.commit("decision", record("decision", 1, status=SessionStatus.AWAITING_DECISION), 0)
    for status in (SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.REJECTED):
        aws_store.commit(f"{status}", record(f"{status}", 1, status=status), 0)

    assert _indexed(aws_env) == {"leased": EXPIRES, "let-go": "2025-01-01T00:00:00.000Z"}
    # the index key on a lease-less item is not read back as a lease
    assert aws_store.head("let-go").lease is None


def test_a_session_leaves_the_stale_index_in_the_commit_that_parks_or_finishes_it(aws_store: Any, aws_env: Any) -> None:
    aws_store.commit("a", _running("a"), 0)
    aws_store.commit("b", _running("b"), 0)
    assert set(_indexed(aws_env)) == {"a", "b"}

    aws_store.commit("a", record("a", 2, messages=2, status=SessionStatus.AWAITING_INPUT), 1)
    aws_store.commit("b", record("b", 2, messages=2, status=SessionStatus.COMPLETED), 1)

    assert _indexed(aws_env) == {}
    assert aws_store.stale(LATER) == []


def test_stale_queries_each_shard_of_the_index_and_never_scans(aws_store: Any, aws_env: Any) -> None:
    for i in range(12):
        sid = f"turn-{i:02d}"
        aws_store.commit(sid, _running(sid, expires_at=EXPIRES if i < 6 else "2025-01-01T02:00:00.000Z"), 0)

    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        stale = aws_store.stale(LATER)

    assert stale == [f"turn-{i:02d}" for i in range(6)]
    assert log.calls == ["dynamodb.Query"] * len(LEASE_SHARDS)


def test_stale_reads_only_stale_items_however_many_sessions_run_or_wait(aws_store: Any, aws_env: Any) -> None:
    for i in range(30):
        sid = f"s{i}"
        if i < 3:
            aws_store.commit(sid, _running(sid), 0)  # stale at LATER
        elif i < 15:
            aws_store.commit(sid, _running(sid, expires_at="2025-01-01T02:00:00.000Z"), 0)  # live
        else:
            aws_store.commit(sid, record(sid, 1, status=SessionStatus.AWAITING_INPUT), 0)
    scanned: list[int] = []

    def count(parsed: Any, **_: Any) -> None:
        scanned.append(parsed.get("ScannedCount", 0))

    aws_env.dynamodb.meta.events.register("after-call.dynamodb.Query", count, unique_id="stale-scanned")
    try:
        assert aws_store.stale(LATER) == ["s0", "s1", "s2"]
    finally:
        aws_env.dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="stale-scanned")
    assert sum(scanned) == 3
