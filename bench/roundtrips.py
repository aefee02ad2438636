"""AWS round trips per store operation, and what the timer sweep reads as parked sessions pile up.

Run: ``make bench`` (or ``.venv/bin/python bench/roundtrips.py [--sizes 1000,10000]``).
Starts its own moto server on 127.0.0.1 and builds the table and bucket from template.yaml (the
same helpers the AWS tests use). Calls are counted with botocore's ``before-call`` event hooks;
items read come from DynamoDB's own ``ScannedCount``. Prints tables; asserts nothing about time.

Rule source: DESIGN.md §7 (benchmarks), §3 ("its cost grows with the number of due parks, never
with the number of sessions").
Store part only; engine operations (send, deliver, sweep end to end) get added beside it later.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the moto helpers live with the AWS tests

from archmax.session.records import Checkpoint, Message, PendingInput, SessionStatus
from archmax.stores.aws.item import item_attributes
from stores.aws.moto_env import AwsEnv, CallLog, fresh_env, stop_server

T0 = "2025-01-01T00:00:00.000Z"
NOW = "2025-01-02T00:00:00.000Z"
LATER = "2025-02-01T00:00:00.000Z"


def _record(
    sid: str, version: int, *, status: SessionStatus = SessionStatus.RUNNING, resume_at: str | None = None
) -> Checkpoint:
    pending = None
    if status == SessionStatus.AWAITING_INPUT:
        pending = PendingInput(
            state="check-bank", reason="the transaction posts overnight", parked_at=T0, resume_at=resume_at
        )
    return Checkpoint(
        session_id=sid,
        version=version,
        workflow="bank-check",
        status=status,
        position="check-bank",
        messages=[
            Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i} " + "x" * 200)
            for i in range(version * 3)
        ],
        pending_input=pending,
        created_at=T0,
        updated_at=T0,
    )


def _measure(env: AwsEnv, action: Callable[[], Any]) -> tuple[Counter[str], float]:
    with CallLog(env.dynamodb, env.s3) as log:
        started = time.perf_counter()
        action()
        elapsed = time.perf_counter() - started
    return Counter(log.calls), elapsed


def roundtrip_table(env: AwsEnv) -> list[tuple[str, Counter[str], float]]:
    """Calls per store operation, warm (this instance has seen the session) and cold (a fresh instance)."""
    rows: list[tuple[str, Counter[str], float]] = []
    sid = "bench-session"
    writer = env.store()

    rows.append(("commit v1 (new session)", *_measure(env, lambda: writer.commit(sid, _record(sid, 1), 0))))
    for v in range(2, 10):
        writer.commit(sid, _record(sid, v), v - 1)
    rows.append(
        (
            "commit v10 (warm: this instance wrote v9)",
            *_measure(env, lambda: writer.commit(sid, _record(sid, 10), 9)),
        )
    )
    cold = env.store()
    rows.append(
        ("commit v11 (cold: fresh instance)", *_measure(env, lambda: cold.commit(sid, _record(sid, 11), 10)))
    )
    reader = env.store()
    rows.append(("load v11 (cold: 11 chunks since the full one)", *_measure(env, lambda: reader.load(sid))))
    rows.append(
        ("load v11 again (warm: chunks are immutable, cached)", *_measure(env, lambda: reader.load(sid)))
    )
    writer.commit(sid, _record(sid, 12), 11)
    rows.append(("load v12 by the v11 reader (one new chunk)", *_measure(env, lambda: reader.load(sid))))
    rows.append(("head", *_measure(env, lambda: env.store().head(sid))))
    parked = _record("bench-parked", 1, status=SessionStatus.AWAITING_INPUT, resume_at=NOW)
    writer.commit("bench-parked", parked, 0)
    rows.append(("due (one due park)", *_measure(env, lambda: writer.due(NOW))))
    return rows


def _batch_put(env: AwsEnv, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 25):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        while requests:
            answer = env.dynamodb.batch_write_item(RequestItems={env.table_name: requests})
            requests = answer.get("UnprocessedItems", {}).get(env.table_name, [])


def _parked_item(sid: str, resume_at: str | None) -> dict[str, Any]:
    # The attributes a commit would write for this park (the item module decides them, not the bench).
    item = item_attributes(
        _record(sid, 1, status=SessionStatus.AWAITING_INPUT, resume_at=resume_at), ttl_days=30
    )
    return {"pk": {"S": sid}, **item, "base": {"N": "1"}, "chunks": {"L": [{"S": "0" * 16}]}}


def sweep_table(
    env_factory: Callable[[], AwsEnv], sizes: list[int], due_count: int = 10
) -> list[tuple[int, dict[str, Any]]]:
    """For each size: ``due_count`` due parks among ``size`` parked sessions (the rest due later or untimed)."""
    rows = []
    for size in sizes:
        env = env_factory()
        items = []
        for i in range(size):
            if i < due_count:
                at: str | None = NOW
            else:
                at = LATER if i % 2 else None  # half due next month, half parked with no resume_at
            items.append(_parked_item(f"parked-{i:06d}", at))
        _batch_put(env, items)
        scanned: list[int] = []

        def count(parsed: Any, scanned: list[int] = scanned, **_: Any) -> None:
            scanned.append(int(parsed.get("ScannedCount", 0)))

        env.dynamodb.meta.events.register("after-call.dynamodb.Query", count, unique_id="bench-scanned")
        try:
            calls, elapsed = _measure(env, lambda env=env: env.store().due(NOW))
            found = env.store().due(NOW)
        finally:
            env.dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="bench-scanned")
        table_scan = sum(
            page["ScannedCount"]
            for page in env.dynamodb.get_paginator("scan").paginate(TableName=env.table_name, Select="COUNT")
        )
        rows.append(
            (
                size,
                {
                    "queries": calls["dynamodb.Query"],
                    "other calls": sum(calls.values()) - calls["dynamodb.Query"],
                    "items read": sum(scanned) // 2,  # the hook saw both due() calls
                    "due found": len(found),
                    "a scan would read": table_scan,
                    "ms": elapsed * 1000,
                },
            )
        )
    return rows


def _print_roundtrips(rows: list[tuple[str, Counter[str], float]]) -> None:
    print("AWS round trips per AwsStore operation (moto server, counted with botocore before-call hooks)")
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  {'DynamoDB':>8}  {'S3':>4}  {'total':>5}  {'ms':>7}  calls")
    for name, calls, elapsed in rows:
        ddb = sum(n for op, n in calls.items() if op.startswith("dynamodb."))
        s3 = sum(n for op, n in calls.items() if op.startswith("s3."))
        detail = ", ".join(f"{op.split('.', 1)[1]}x{n}" for op, n in sorted(calls.items()))
        print(f"{name:<{width}}  {ddb:>8}  {s3:>4}  {ddb + s3:>5}  {elapsed * 1000:>7.1f}  {detail}")


def _print_sweep(rows: list[tuple[int, dict[str, Any]]], due_count: int) -> None:
    print()
    print(
        f"Sweep cost: AwsStore.due() with {due_count} due parks among N parked sessions (sparse due-parks index)"
    )
    cols = ["queries", "other calls", "items read", "due found", "a scan would read", "ms"]
    print(f"{'parked N':>9}  " + "  ".join(f"{c:>17}" for c in cols))
    for size, row in rows:
        cells = [f"{row[c]:>17.1f}" if c == "ms" else f"{row[c]:>17}" for c in cols]
        print(f"{size:>9}  " + "  ".join(cells))
    print(
        "items read = DynamoDB's ScannedCount over the due() queries (what a real table charges for);"
        " ms is moto's own cost, which walks its whole index in memory and so grows with N where DynamoDB does not."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="parked-session counts for the sweep table")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    try:
        _print_roundtrips(roundtrip_table(fresh_env()))
        _print_sweep(sweep_table(fresh_env, sizes), 10)
    finally:
        stop_server()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
