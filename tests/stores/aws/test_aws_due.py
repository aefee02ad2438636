"""The sparse due-parks index and the sweep's query.

Rule source: DESIGN.md §3 ("Due parks: a sparse GSI on (due_shard, resume_at) that only parked
sessions with a resume_at carry ... its cost grows with the number of due parks, never with the
number of sessions. No table scans on any hot path"), BEHAVIOUR.md §11 ``sweep`` (order).
"""

from __future__ import annotations

from typing import Any

from archmax.session.records import SessionStatus
from archmax.stores.aws.layout import DUE_SHARDS

from .moto_env import CallLog
from .records import record

DAY1 = "2025-01-02T00:00:00.000Z"
DAY2 = "2025-01-03T00:00:00.000Z"


def _indexed(aws_env: Any) -> set[str]:
    """Every session id the due-parks index holds (read straight from the index)."""
    page = aws_env.dynamodb.scan(TableName=aws_env.table_name, IndexName="due-parks")
    return {item["pk"]["S"] for item in page["Items"]}


def test_only_input_parks_with_resume_at_are_in_the_due_index(aws_store: Any, aws_env: Any) -> None:
    aws_store.commit("timed", record("timed", 1, status=SessionStatus.AWAITING_INPUT, resume_at=DAY1), 0)
    aws_store.commit("untimed", record("untimed", 1, status=SessionStatus.AWAITING_INPUT), 0)
    aws_store.commit("decision", record("decision", 1, status=SessionStatus.AWAITING_DECISION), 0)
    aws_store.commit("running", record("running", 1), 0)
    for status in (SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.REJECTED):
        aws_store.commit(f"{status}", record(f"{status}", 1, status=status), 0)

    assert _indexed(aws_env) == {"timed"}


def test_resumed_and_finished_sessions_leave_the_due_index(aws_store: Any, aws_env: Any) -> None:
    aws_store.commit("a", record("a", 1, status=SessionStatus.AWAITING_INPUT, resume_at=DAY1), 0)
    aws_store.commit("b", record("b", 1, status=SessionStatus.AWAITING_INPUT, resume_at=DAY1), 0)
    assert _indexed(aws_env) == {"a", "b"}

    aws_store.commit("a", record("a", 2, messages=2), 1)  # delivered: running again
    aws_store.commit("b", record("b", 2, messages=2, status=SessionStatus.COMPLETED), 1)

    assert _indexed(aws_env) == set()
    assert aws_store.due(DAY2) == []


def test_due_queries_each_shard_of_the_index_and_never_scans(aws_store: Any, aws_env: Any) -> None:
    for i in range(12):
        sid = f"park-{i:02d}"
        aws_store.commit(sid, record(sid, 1, status=SessionStatus.AWAITING_INPUT, resume_at=DAY1 if i < 6 else DAY2), 0)

    with CallLog(aws_env.dynamodb, aws_env.s3) as log:
        due = aws_store.due(DAY1)

    assert [sid for sid, _ in due] == [f"park-{i:02d}" for i in range(6)]
    assert log.calls == ["dynamodb.Query"] * len(DUE_SHARDS)


def test_due_orders_by_resume_at_then_id_across_shards(aws_store: Any) -> None:
    parks = {
        "z": "2025-01-01T06:00:00.000Z",
        "y": "2025-01-01T06:00:00.000Z",
        "x": "2025-01-01T09:00:00.000Z",
    }
    for sid, at in parks.items():
        aws_store.commit(sid, record(sid, 1, status=SessionStatus.AWAITING_INPUT, resume_at=at), 0)

    assert aws_store.due("2025-01-01T09:00:00.000Z") == [
        ("y", "2025-01-01T06:00:00.000Z"),
        ("z", "2025-01-01T06:00:00.000Z"),
        ("x", "2025-01-01T09:00:00.000Z"),
    ]
    assert aws_store.due("2025-01-01T08:59:59.999Z") == [
        ("y", "2025-01-01T06:00:00.000Z"),
        ("z", "2025-01-01T06:00:00.000Z"),
    ]


def test_due_reads_only_due_items_however_many_parks_wait(aws_store: Any, aws_env: Any) -> None:
    for i in range(40):
        sid = f"s{i}"
        at = DAY1 if i < 3 else DAY2
        aws_store.commit(sid, record(sid, 1, status=SessionStatus.AWAITING_INPUT, resume_at=at), 0)
    scanned: list[int] = []

    def count(parsed: Any, **_: Any) -> None:
        scanned.append(parsed.get("ScannedCount", 0))

    aws_env.dynamodb.meta.events.register("after-call.dynamodb.Query", count, unique_id="scanned")
    try:
        assert len(aws_store.due(DAY1)) == 3
    finally:
        aws_env.dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="scanned")
    assert sum(scanned) == 3


def test_due_filters_by_workflow(aws_store: Any) -> None:
    aws_store.commit("bank", record("bank", 1, status=SessionStatus.AWAITING_INPUT, resume_at=DAY1), 0)
    aws_store.commit(
        "mail",
        record("mail", 1, status=SessionStatus.AWAITING_INPUT, resume_at=DAY1, workflow="support-inbox"),
        0,
    )
    assert aws_store.due(DAY1, workflow="support-inbox") == [("mail", DAY1)]
    assert [sid for sid, _ in aws_store.due(DAY1)] == ["bank", "mail"]
