"""The sparse open-parks index and the sweep's query for a workflow's oldest park.

Rule source: BEHAVIOUR.md §5.11 (the oldest park's age per workflow, reported at every sweep),
DESIGN.md §3 ("No table scans on any hot path"). Only parked items carry ``park_key``
(``<workflow>#<shard>``), ranged on ``parked_at``, so ``oldest_park`` reads one item per shard of
the workflow however many sessions there are.
"""

from __future__ import annotations

from typing import Any

from archmax.session.records import SessionStatus
from archmax.stores.aws.layout import PARK_SHARDS

from .moto_env import CallLog
from .records import record


def _indexed(aws_env: Any) -> dict[str, str]:
    """``{session id: park_key}`` of every item the open-parks index holds (read straight from it)."""
    page = aws_env.dynamodb.scan(TableName=aws_env.table_name, IndexName="open-parks")
    return {item["pk"]["S"]: item["park_key"]["S"] for item in page["Items"]}


def test_only_parked_sessions_are_in_the_index_keyed_by_their_workflow(aws_store: Any, aws_env: Any) -> None:
    aws_store.commit("waiting", record("waiting", 1, status=SessionStatus.AWAITING_INPUT), 0)
    aws_store.commit("deciding", record("deciding", 1, status=SessionStatus.AWAITING_DECISION, workflow="other"), 0)
    aws_store.commit("running", record("running", 1), 0)
    aws_store.commit("done", record("done", 1, status=SessionStatus.COMPLETED), 0)

    indexed = _indexed(aws_env)
    assert set(indexed) == {"waiting", "deciding"}
    assert indexed["waiting"].startswith("bank-check#") and indexed["deciding"].startswith("other#")

    aws_store.commit("waiting", record("waiting", 2, messages=2), 1)  # answered: out in the same commit
    assert set(_indexed(aws_env)) == {"deciding"}


def test_oldest_park_queries_each_shard_for_one_item_and_never_scans(aws_store: Any, aws_env: Any) -> None:
    for i in range(16):
        sid = f"park-{i:02d}"
        rec = record(sid, 1, status=SessionStatus.AWAITING_INPUT)
        rec.pending_input = rec.pending_input.model_copy(update={"parked_at": f"2025-01-01T{23 - i:02d}:00:00.000Z"})
        aws_store.commit(sid, rec, 0)
    scanned: list[int] = []

    def count(parsed: Any, **_: Any) -> None:
        scanned.append(parsed.get("ScannedCount", 0))

    aws_env.dynamodb.meta.events.register("after-call.dynamodb.Query", count, unique_id="parks-scanned")
    try:
        with CallLog(aws_env.dynamodb, aws_env.s3) as log:
            found = aws_store.oldest_park("bank-check")
    finally:
        aws_env.dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="parks-scanned")

    assert found == ("park-15", "2025-01-01T08:00:00.000Z")
    assert log.calls == ["dynamodb.Query"] * len(PARK_SHARDS)
    assert sum(scanned) <= len(PARK_SHARDS)  # one item read per shard, not one per park
