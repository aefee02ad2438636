"""AWS round trips per store operation and per engine operation, and what the sweep reads as parks pile up.

Run: ``make bench`` (or ``.venv/bin/python bench/roundtrips.py [--sizes 1000,10000]``).
Starts its own moto server on 127.0.0.1 (``bench/_aws.py``) and builds the sessions table, the
inbox table and the bucket from template.yaml. Calls are counted with botocore's ``before-call``
event hooks; items read come from DynamoDB's own ``ScannedCount``. Prints three tables; asserts
nothing about time.

1. Store operations (``AwsStore`` alone: commit, load, head, due).
2. Engine operations through ``create_agent(WORKFLOW, AwsStore(...))``: a send that opens a turn
   and parks, deliveries that re-park or complete, a refused delivery, ``resolve_session``,
   ``sessions.get``, the sweep (``archmax.hosting.sweep.sweep``, what ``archmax sweep`` runs) with
   N = 0, 1, 10 due parks, and the Lambda path through ``Host`` (webhook accept, the drain in the
   asynchronous invocation, the timer function's sweep, which also asks the inbox for waiting items).
   "cold" is a fresh ``AwsStore`` instance (a new Lambda container: empty chunk cache), "warm" the
   instance that wrote the session last.
3. Sweep cost: 10 due parks among N parked sessions; items the sweep's query reads.

Rule source: DESIGN.md §7 (benchmarks), §3 (the sweep's "cost grows with the number of due
parks, never with the number of sessions"; no scans on hot paths); issue 4 item 6.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from _aws import AwsEnv, CallCounter, MotoServer
from _workload import AGAIN_MESSAGE, FINISH_MESSAGE, PARK_MESSAGE, START, WORKFLOW, WaiterModel

from archmax import Checkpoint, FakeClock, Message, PendingInput, SessionNotAwaitingInputError, SessionStatus
from archmax import create_agent as _create_agent
from archmax.clock import format_instant
from archmax.hosting.host import Host
from archmax.hosting.sweep import sweep
from archmax.session.firing import Firing
from archmax.stores.aws.item import item_attributes

T0 = "2025-01-01T00:00:00.000Z"
NOW = "2025-01-02T00:00:00.000Z"
LATER = "2025-02-01T00:00:00.000Z"
SWEEP_AT = "2025-01-03T00:00:00.000Z"  # two days after T0: every `until: 1d` park made at T0 is due
MODEL = WaiterModel()

Row = tuple[str, CallCounter, float]


def _measure(env: AwsEnv, name: str, action: Callable[[], Any]) -> Row:
    with CallCounter(env.dynamodb, env.s3) as counter:
        started = time.perf_counter()
        action()
        elapsed = time.perf_counter() - started
    return name, counter, elapsed


# ---------------------------------------------------------------------- 1. store operations


def _record(
    sid: str,
    version: int,
    *,
    status: SessionStatus = SessionStatus.RUNNING,
    resume_at: str | None = None,
    workflow: str = "bank-check",
) -> Checkpoint:
    pending = None
    if status == SessionStatus.AWAITING_INPUT:
        pending = PendingInput(
            state="wait", reason="the transaction posts overnight", parked_at=T0, resume_at=resume_at
        )
    return Checkpoint(
        session_id=sid,
        version=version,
        workflow=workflow,
        status=status,
        position="wait",
        messages=[
            Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i} " + "x" * 200)
            for i in range(version * 3)
        ],
        pending_input=pending,
        created_at=T0,
        updated_at=T0,
    )


def store_table(env: AwsEnv) -> list[Row]:
    """Calls per store operation, warm (this instance has seen the session) and cold (a fresh instance)."""
    rows: list[Row] = []
    sid = "bench-session"
    writer = env.store()
    rows.append(_measure(env, "commit v1 (new session)", lambda: writer.commit(sid, _record(sid, 1), 0)))
    for v in range(2, 10):
        writer.commit(sid, _record(sid, v), v - 1)
    rows.append(
        _measure(env, "commit v10 (warm: this instance wrote v9)", lambda: writer.commit(sid, _record(sid, 10), 9))
    )
    cold = env.store()
    rows.append(_measure(env, "commit v11 (cold: fresh instance)", lambda: cold.commit(sid, _record(sid, 11), 10)))
    reader = env.store()
    rows.append(_measure(env, "load v11 (cold: 11 chunks since the full one)", lambda: reader.load(sid)))
    rows.append(_measure(env, "load v11 again (warm: chunks are immutable, cached)", lambda: reader.load(sid)))
    writer.commit(sid, _record(sid, 12), 11)
    rows.append(_measure(env, "load v12 by the v11 reader (one new chunk)", lambda: reader.load(sid)))
    rows.append(_measure(env, "head", lambda: env.store().head(sid)))
    parked = _record("bench-parked", 1, status=SessionStatus.AWAITING_INPUT, resume_at=NOW)
    writer.commit("bench-parked", parked, 0)
    rows.append(_measure(env, "due (one due park)", lambda: writer.due(NOW)))
    return rows


# ---------------------------------------------------------------------- 2. engine operations


def _agent(env: AwsEnv, clock: FakeClock) -> Any:
    """An agent on a fresh AwsStore instance (a cold container)."""
    return _create_agent(WORKFLOW, env.store(), MODEL, clock=clock)


def _expect(kind: str, outcome: Any) -> Any:
    if outcome.kind != kind:
        raise RuntimeError(f"expected a {kind!r} outcome, got {outcome.kind!r}")
    return outcome


def _park(agent: Any, sid: str) -> None:
    _expect("parked", agent.workflow.send(sid, PARK_MESSAGE, trigger=START))


def _refused(agent: Any, sid: str) -> None:
    try:
        agent.workflow.deliver(sid, trigger="event", message=FINISH_MESSAGE)
    except SessionNotAwaitingInputError:
        return
    raise RuntimeError("a delivery to a finished session was not refused")


def _sweep_rows(server: MotoServer, due: int) -> list[Row]:
    """``sweep`` (archmax sweep) and ``Host.sweep`` (the timer function) with ``due`` due parks."""
    rows: list[Row] = []
    for label, run in (
        (f"sweep, {due} due (archmax sweep: hosting.sweep.sweep)", lambda agent, inbox: sweep(agent, SWEEP_AT)),
        (
            f"timer function, {due} due (Host.sweep: + inbox re-drive)",
            lambda agent, inbox: Host(agent, inbox).sweep(SWEEP_AT),
        ),
    ):
        env = server.fresh()
        clock = FakeClock(T0)
        parker = _agent(env, clock)
        for i in range(due):
            _park(parker, f"due-{i:02d}")
        agent = _agent(env, clock)
        inbox = env.inbox(clock)
        results: list[Any] = []
        rows.append(
            _measure(
                env, label, lambda agent=agent, inbox=inbox, run=run, results=results: results.append(run(agent, inbox))
            )
        )
        done = results[0] if isinstance(results[0], list) else results[0].due
        if [kind for _sid, kind in done] != ["completed"] * due:
            raise RuntimeError(f"the sweep did not complete every due park: {done}")
    return rows


def engine_table(server: MotoServer) -> list[Row]:
    """Calls per engine operation through ``create_agent(WORKFLOW, AwsStore(...))``."""
    env = server.fresh()
    clock = FakeClock(T0)
    rows: list[Row] = []
    warm = _agent(env, clock)
    rows.append(
        _measure(env, "send: new session, turn parks (cold instance)", lambda: _park(_agent(env, clock), "s-1"))
    )
    rows.append(_measure(env, "send: new session, turn parks (warm instance)", lambda: _park(warm, "s-2")))
    deliver_again = lambda agent, sid: _expect(  # noqa: E731
        "parked", agent.workflow.deliver(sid, trigger="event", message=AGAIN_MESSAGE)
    )
    deliver_finish = lambda agent, sid: _expect(  # noqa: E731
        "completed", agent.workflow.deliver(sid, trigger="event", message=FINISH_MESSAGE)
    )
    rows.append(_measure(env, "deliver: resumes, parks again (warm)", lambda: deliver_again(warm, "s-2")))
    rows.append(_measure(env, "deliver: resumes, completes (warm)", lambda: deliver_finish(warm, "s-2")))
    rows.append(_measure(env, "deliver: resumes, completes (cold)", lambda: deliver_finish(_agent(env, clock), "s-1")))
    rows.append(
        _measure(
            env, "deliver refused: not parked (cold; a double-fired timer)", lambda: _refused(_agent(env, clock), "s-1")
        )
    )
    _park(warm, "s-3")
    rows.append(
        _measure(
            env,
            "resolve_session: parked session (cold)",
            lambda: _agent(env, clock).workflow.resolve_session(session_id="s-3", trigger="event"),
        )
    )
    rows.append(
        _measure(
            env,
            "resolve_session: unknown session (cold)",
            lambda: _agent(env, clock).workflow.resolve_session(session_id="s-new", trigger=START),
        )
    )
    rows.append(_measure(env, "sessions.get: parked session (cold)", lambda: _agent(env, clock).sessions.get("s-3")))
    rows.append(_measure(env, "sessions.get: parked session (warm)", lambda: warm.sessions.get("s-3")))

    # The Lambda path: the send function inboxes and wakes; the async invocation drains.
    agent = _agent(env, clock)
    host = Host(agent, env.inbox(clock), waker=lambda sid: None)  # the wake is the async self-invoke
    firing = Firing(trigger=START, message=PARK_MESSAGE, delivery_id="evt-1")
    rows.append(
        _measure(
            env,
            "send function: Host.accept (webhook; inbox put, wake deferred)",
            lambda: host.accept(firing, session_id="s-4"),
        )
    )
    drainer = Host(_agent(env, clock), env.inbox(clock))
    rows.append(
        _measure(env, "async invocation: Host.drain (turn parks, item marked done)", lambda: drainer.drain("s-4"))
    )
    for due in (0, 1, 10):
        rows.extend(_sweep_rows(server, due))
    return rows


# ---------------------------------------------------------------------- 3. sweep cost


def _batch_put(env: AwsEnv, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 25):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        while requests:
            answer = env.dynamodb.batch_write_item(RequestItems={env.table_name: requests})
            requests = answer.get("UnprocessedItems", {}).get(env.table_name, [])


def _filler_item(sid: str, workflow: str, resume_at: str | None) -> dict[str, Any]:
    # The attributes a commit would write for this park (the store's item module decides them).
    record = _record(sid, 1, status=SessionStatus.AWAITING_INPUT, resume_at=resume_at, workflow=workflow)
    item = item_attributes(record, ttl_days=None)
    return {"pk": {"S": sid}, **item, "base": {"N": "1"}, "chunks": {"L": [{"S": "0" * 16}]}}


def sweep_cost(server: MotoServer, sizes: list[int], due_count: int = 10) -> list[tuple[int, dict[str, Any]]]:
    """For each size: ``due_count`` real parks (made by the engine) among ``size`` parked sessions.

    The other ``size - due_count`` are parked too, half due next month and half with no
    ``resume_at`` (only the first half is in the sparse index); they are written straight to the
    table with the attributes a commit would give them. The sweep then runs end to end.
    """
    rows = []
    for size in sizes:
        env = server.fresh()
        clock = FakeClock(T0)
        parker = _agent(env, clock)
        for i in range(due_count):
            _park(parker, f"due-{i:02d}")
        slug = parker.spec.slug
        later = format_instant(clock.now() + timedelta(days=30))
        _batch_put(
            env,
            [_filler_item(f"parked-{i:06d}", slug, later if i % 2 else None) for i in range(size - due_count)],
        )
        scanned: list[int] = []

        def count(parsed: Any, scanned: list[int] = scanned, **_: Any) -> None:
            scanned.append(int(parsed.get("ScannedCount", 0)))

        agent = _agent(env, clock)
        env.dynamodb.meta.events.register("after-call.dynamodb.Query", count, unique_id="bench-scanned")
        found: list[Any] = []
        try:
            _name, calls, _elapsed = _measure(
                env, "sweep", lambda agent=agent, found=found: found.extend(sweep(agent, SWEEP_AT))
            )
        finally:
            env.dynamodb.meta.events.unregister("after-call.dynamodb.Query", unique_id="bench-scanned")
        table_scan = sum(
            page["ScannedCount"]
            for page in env.dynamodb.get_paginator("scan").paginate(TableName=env.table_name, Select="COUNT")
        )
        queries = calls.calls["dynamodb.Query"]
        rows.append(
            (
                size,
                {
                    "queries": queries,
                    "items read": sum(scanned),
                    "completed": sum(kind == "completed" for _sid, kind in found),
                    "other calls": sum(calls.calls.values()) - queries,
                    "a scan would read": table_scan,
                },
            )
        )
    return rows


# ---------------------------------------------------------------------- printing


def _print_calls(title: str, rows: list[Row], *, ms: bool) -> None:
    print(title)
    width = max(len(r[0]) for r in rows)
    head = f"{'operation':<{width}}  {'DynamoDB':>8}  {'S3':>4}  {'total':>5}"
    print(head + (f"  {'ms':>7}" if ms else "") + "  calls")
    for name, counter, elapsed in rows:
        ddb, s3 = counter.service_total("dynamodb"), counter.service_total("s3")
        line = f"{name:<{width}}  {ddb:>8}  {s3:>4}  {ddb + s3:>5}"
        print(line + (f"  {elapsed * 1000:>7.1f}" if ms else "") + f"  {counter.detail()}")
    print()


def _print_sweep(rows: list[tuple[int, dict[str, Any]]], due_count: int) -> None:
    print(
        f"Sweep cost: hosting.sweep.sweep with {due_count} due parks among N parked sessions (sparse due-parks index)"
    )
    cols = list(rows[0][1])
    print(f"{'parked N':>9}  " + "  ".join(f"{c:>17}" for c in cols))
    for size, row in rows:
        print(f"{size:>9}  " + "  ".join(f"{row[c]:>17}" for c in cols))
    first, last = rows[0], rows[-1]
    print(
        f"N x{last[0] / first[0]:g}: items read x{last[1]['items read'] / max(first[1]['items read'], 1):g},"
        f" a scan x{last[1]['a scan would read'] / first[1]['a scan would read']:g}."
    )
    print(
        "items read = DynamoDB's ScannedCount over the sweep's Query calls (what a real table charges for);"
        " other calls are the 10 deliveries (timed here: nothing; moto's query walks its whole index in memory,"
        " so its time would grow with N where DynamoDB's does not)."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="parked-session counts for the sweep-cost table")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    server = MotoServer()
    try:
        _print_calls(
            "AWS calls per AwsStore operation (moto server, botocore before-call hooks)",
            store_table(server.fresh()),
            ms=True,
        )
        _print_calls(
            "AWS calls per engine operation: create_agent(bench/waiter, AwsStore) (moto server, botocore before-call hooks)",
            engine_table(server),
            ms=False,
        )
        _print_sweep(sweep_cost(server, sizes), 10)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
