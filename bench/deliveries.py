"""Deliveries per second under concurrency, on the memory and filesystem stores.

Run: ``.venv/bin/python bench/deliveries.py [--per-thread 20] [--races 20]``.

One agent (``bench/waiter`` with the scripted :class:`~_workload.WaiterModel`) is shared by all
threads, as a server shares it. Rows:

* **own session, T threads** (T = 1, 4, 16): each thread has its own parked session and delivers
  ``wait again`` to it ``--per-thread`` times; every delivery resumes the session, makes one model
  call, parks again and makes the handoff call (5 commits). All threads start together on a barrier;
  the clock runs from the barrier to the last join.
* **one park, T threads racing**: ``--races`` sessions are parked; for each, T threads start on a
  barrier and all deliver ``finish`` to it. Exactly one wins (the session resumes and completes, so no
  new park can be won by a late thread); the others must get ``SessionNotAwaitingInputError`` (§3.5).
  Its ratio divides by the same row with 1 thread (no race), since a completing delivery is less work
  than a re-parking one. The row counts winning deliveries per second and
  checks the one-winner rule in every race (it prints a violation instead of a rate if not).

The ratio column divides by the same store's single-thread row of the same kind. Python threads share the GIL, so
these rows measure how much the stores' locks and I/O let threads overlap, not CPU scaling.

Rule source: DESIGN.md §7 ("deliveries per second under concurrency"), BEHAVIOUR.md §3.5.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _workload import AGAIN_MESSAGE, FINISH_MESSAGE, PARK_MESSAGE, START, WORKFLOW, WaiterModel, run_threads

from archmax import FakeClock, FilesystemStore, MemoryStore, SessionNotAwaitingInputError, create_agent

THREADS = (1, 4, 16)


def _agent(store: Any) -> Any:
    return create_agent(WORKFLOW, store, WaiterModel(), clock=FakeClock())


def _park(agent: Any, sid: str) -> None:
    outcome = agent.workflow.send(sid, PARK_MESSAGE, trigger=START)
    if outcome.kind != "parked":
        raise RuntimeError(f"{sid}: expected a park, got {outcome.kind}")


def own_sessions(store: Any, threads: int, per_thread: int) -> dict[str, Any]:
    """``threads`` threads, each re-parking its own session ``per_thread`` times."""
    agent = _agent(store)
    for i in range(threads):
        _park(agent, f"own-{threads}-{i:02d}")
        agent.workflow.deliver(f"own-{threads}-{i:02d}", trigger="event", message=AGAIN_MESSAGE)  # warm-up
    latencies: list[float] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        sid = f"own-{threads}-{i:02d}"
        mine = []
        for _ in range(per_thread):
            t0 = time.perf_counter()
            outcome = agent.workflow.deliver(sid, trigger="event", message=AGAIN_MESSAGE)
            mine.append(time.perf_counter() - t0)
            if outcome.kind != "parked":
                raise RuntimeError(f"{sid}: expected a park, got {outcome.kind}")
        with lock:
            latencies.extend(mine)

    elapsed = run_threads(threads, work)
    done = threads * per_thread
    return {
        "deliveries": done,
        "seconds": elapsed,
        "per_s": done / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
    }


def racing(store: Any, threads: int, races: int) -> dict[str, Any]:
    """``races`` parks, each raced by ``threads`` threads delivering at once."""
    agent = _agent(store)
    for r in range(races):
        _park(agent, f"race-{threads}-{r:03d}")
        agent.workflow.deliver(f"race-{threads}-{r:03d}", trigger="event", message=AGAIN_MESSAGE)  # as above
    winners: list[int] = []
    refused: list[int] = []
    total = 0.0
    for r in range(races):
        sid = f"race-{threads}-{r:03d}"
        wins = [0]
        refusals = [0]
        lock = threading.Lock()

        def work(
            _i: int, sid: str = sid, wins: list[int] = wins, refusals: list[int] = refusals, lock: threading.Lock = lock
        ) -> None:
            try:
                outcome = agent.workflow.deliver(sid, trigger="event", message=FINISH_MESSAGE)
            except SessionNotAwaitingInputError:
                with lock:
                    refusals[0] += 1
                return
            if outcome.kind != "completed":
                raise RuntimeError(f"{sid}: the winner did not complete: {outcome.kind}")
            with lock:
                wins[0] += 1

        total += run_threads(threads, work)
        winners.append(wins[0])
        refused.append(refusals[0])
    return {
        "deliveries": races,
        "attempts": races * threads,
        "seconds": total,
        "per_s": races / total,
        "winners": (min(winners), max(winners)),
        "refused": sum(refused),
        "one_winner": all(w == 1 for w in winners) and sum(refused) == races * (threads - 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-thread", type=int, default=12, help="deliveries per thread in the own-session rows")
    parser.add_argument("--races", type=int, default=12, help="races in the contention row")
    parser.add_argument("--racers", type=int, default=16, help="threads per race")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; every row runs once per round, medians printed")
    args = parser.parse_args(argv)
    print(
        f"Deliveries per second: one shared agent, threads started on a barrier; median of {args.rounds} interleaved rounds"
        f" ({args.per_thread} re-parking deliveries per thread; {args.races} races of {args.racers} threads)"
    )
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[tuple[str, Callable[[str], Any]]] = [
            ("memory", lambda _name: MemoryStore()),
            ("filesystem", lambda name: FilesystemStore(Path(tmp) / name)),
        ]
        for n in range(args.rounds):
            for label, make in stores:
                for threads in THREADS:
                    name = f"own session, {threads} thread(s)"
                    rows.setdefault((label, name), []).append(
                        own_sessions(make(f"own-{threads}-{n}"), threads, args.per_thread)
                    )
                for racers in (1, args.racers):
                    name = "one park, 1 thread (no race)" if racers == 1 else f"one park, {racers} threads racing"
                    rows.setdefault((label, name), []).append(racing(make(f"race-{racers}-{n}"), racers, args.races))
    print(
        f"{'store':<10}  {'row':<31}  {'deliveries':>10}  {'per s':>7}  {'x 1 thread':>10}  {'range per s':>13}  notes"
    )
    base: dict[tuple[str, str], float] = {}
    for (label, name), runs in rows.items():
        rates = [r["per_s"] for r in runs]
        rate = statistics.median(rates)
        kind = name.split(",")[0]
        base.setdefault((label, kind), rate)
        if "p50_ms" in runs[0]:
            note = f"p50 latency {statistics.median(r['p50_ms'] for r in runs):.1f} ms"
        elif runs[0]["attempts"] == runs[0]["deliveries"]:
            note = "completing deliveries, one thread"
        elif all(r["one_winner"] for r in runs):
            note = (
                f"1 winner in every race, {sum(r['refused'] for r in runs)} refused"
                f" ({statistics.median(r['attempts'] / r['seconds'] for r in runs):.0f} attempts/s)"
            )
        else:
            note = "VIOLATION: " + "; ".join(f"winners per race {r['winners']}, {r['refused']} refused" for r in runs)
        span = f"{min(rates):.1f}-{max(rates):.1f}"
        print(
            f"{label:<10}  {name:<31}  {runs[0]['deliveries']:>10}  {rate:>7.1f}  {rate / base[(label, kind)]:>10.2f}  {span:>13}  {note}"
        )
    print(
        "'per s' counts deliveries that resumed a session (median over rounds); 'x 1 thread' divides by the same"
        " store's single-thread row of the same kind; 'deliveries' is per round."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
