"""Timer lateness of the sweep: one invocation waking parks one after another vs the fan-out to W workers.

Run: ``.venv/bin/python bench/sweep_fanout.py [--parked 50000] [--due-per-min 0.01] [--minutes 10]
[--turn-s 2] [--workers 1,10,20,100]``. Part of ``make bench``.

A discrete-event simulation on a simulated clock (no wall time, nothing slept): ``--parked``
sessions, ``--due-per-min`` of them coming due each minute for ``--minutes`` minutes (each park's
``resume_at`` uniform over the period, seeded), and the 1-minute schedule sweeping them:

* **one invocation** (before issue 24): each scheduled sweep lists the due parks and wakes them one
  after another, a model turn each, until its 900 s timeout; a park another sweep took meanwhile is
  a refused delivery. Two rows: one invocation at a time (reserved concurrency 1: a sweep that finds
  the last still running is dropped) and overlapping invocations as deployed (the schedule starts a
  new one every minute; up to 15 live).
* **fan-out** (issue 24 goal 3, ``archmax.hosting.timer_queue``): each sweep lists the due parks and
  sends each (just due, or at its 15-minute redrive point) to the timer queue, ten per
  SendMessageBatch; W wake-function instances (the event source's MaximumConcurrency) each take up
  to ten messages and fire them one after another; a message whose park was already taken is a
  refused delivery.

Printed per design: timer lateness (``resume_at`` -> the delivery's turn committed, the
``TimerLateness`` metric) p50/p99/max, the backlog (due, not yet delivered) just before the sweeps
at half time and at the end of the period, whether the sweep keeps up (the backlog does not grow),
and the messages and refused deliveries it cost. Assumptions are printed with the table.

Rule source: issue 24 goal 3; DESIGN.md §7 (benchmarks print, tests assert no time).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import math
import random
import statistics
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

SWEEP_EVERY_S = 60.0
"""The schedule: rate(1 minute)."""
SWEEP_TIMEOUT_S = 900.0
"""The timer function's timeout (template.yaml)."""
BATCH = 10
"""Messages per SendMessageBatch, and the wake function's BatchSize (template.yaml)."""
FRESH_S = 90.0
"""archmax.hosting.timer_queue.FRESH_S: a park is queued while it is this fresh..."""
REDRIVE_S = 900.0
"""...and again once per this many seconds while it stays due (REDRIVE_S)."""
HORIZON_S = 6 * 3600.0
"""Simulated time after which a design that has not delivered every timer is cut off (its lateness censored)."""


@dataclass(frozen=True)
class Costs:
    """Modelled durations, seconds of simulated time."""

    turn_s: float = 2.0
    """One timer delivery: the model turn and its commits."""
    refused_s: float = 0.03
    """A delivery refused because its park was taken (a store read or two)."""
    send_batch_s: float = 0.02
    """One SendMessageBatch call."""
    list_per_1000_s: float = 0.05
    """Listing due parks from the sparse index, per thousand."""
    pickup_s: float = 0.2
    """From a message being available to a wake-function instance running its batch (poll + invoke)."""


@dataclass
class Result:
    """What one design did to the timers."""

    name: str
    workers: str
    lateness: list[float]
    undelivered: int
    backlog: dict[float, int]
    messages: int = 0
    refused: int = 0
    last_delivery_s: float = 0.0


@dataclass
class _Sim:
    """The shared state: due times, the parks still open (due, not taken), deliveries, the event heap."""

    due: list[tuple[float, int]]
    costs: Costs
    open: dict[int, float] = field(default_factory=dict)
    """Due parks not taken yet, in resume_at order (what a sweep's listing returns)."""
    taken: set[int] = field(default_factory=set)
    delivered: dict[int, float] = field(default_factory=dict)
    backlog: dict[float, int] = field(default_factory=dict)
    refused: int = 0
    _heap: list[tuple[float, int, Callable[[float], None]]] = field(default_factory=list)
    _seq: itertools.count = field(default_factory=itertools.count)
    _next_due: int = 0

    def at(self, t: float, call: Callable[[float], None]) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), call))

    def open_until(self, t: float) -> None:
        """Parks whose resume_at <= t become open (listed by a sweep at t)."""
        while self._next_due < len(self.due) and self.due[self._next_due][0] <= t:
            resume_at, pid = self.due[self._next_due]
            self.open[pid] = resume_at
            self._next_due += 1

    def take(self, pid: int, t: float) -> float:
        """Fire the timer of ``pid`` at ``t``: the turn when its park is open, else a refusal. When it ends."""
        if pid in self.taken:
            self.refused += 1
            return t + self.costs.refused_s
        self.taken.add(pid)
        self.open.pop(pid, None)
        self.delivered[pid] = t + self.costs.turn_s
        return t + self.costs.turn_s

    def run(self, sweep: Callable[[float], None]) -> None:
        """Sweep every minute until every timer is delivered (or the horizon); process events in time order."""
        t_sweep = 0.0
        while True:
            next_event = self._heap[0][0] if self._heap else math.inf
            if t_sweep <= next_event:
                if len(self.delivered) == len(self.due) or t_sweep > HORIZON_S:
                    return
                self.open_until(t_sweep)
                self.backlog[t_sweep] = sum(1 for _t, pid in self.due[: self._next_due] if pid not in self.delivered)
                sweep(t_sweep)
                t_sweep += SWEEP_EVERY_S
                continue
            t, _seq, call = heapq.heappop(self._heap)
            call(t)


def one_invocation(due: list[tuple[float, int]], costs: Costs, *, overlapping: bool) -> Result:
    """Each sweep an invocation that wakes its listing one after another until its timeout."""
    sim = _Sim(due, costs)
    live = [0]

    def sweep(s: float) -> None:
        if live[0] and not overlapping:
            return  # reserved concurrency 1: this scheduled invocation is throttled and dropped
        listing = list(sim.open)
        live[0] += 1
        deadline = s + SWEEP_TIMEOUT_S
        cursor = iter(listing)

        def step(t: float) -> None:
            for pid in cursor:
                if pid not in sim.taken and t + costs.turn_s > deadline:
                    break  # the timeout: a turn is not started that could not finish
                sim.at(sim.take(pid, t), step)
                return
            live[0] -= 1

        sim.at(s + costs.list_per_1000_s * len(listing) / 1000, step)

    sim.run(sweep)
    name = "one invocation, overlapping (as deployed)" if overlapping else "one invocation at a time"
    return _result(sim, name, "≤15" if overlapping else "1")


def fan_out(due: list[tuple[float, int]], costs: Costs, workers: int, batch_size: int = BATCH) -> Result:
    """Each sweep queues due timers; ``workers`` wake-function instances fire them, ``batch_size`` at a time."""
    sim = _Sim(due, costs)
    queue: deque[tuple[float, int]] = deque()
    idle = list(range(workers))
    sent = [0]

    def take_batch(t: float) -> None:
        if not queue:
            idle.append(0)
            return
        if queue[0][0] > t:
            sim.at(queue[0][0], take_batch)
            return
        batch: list[int] = []
        while queue and queue[0][0] <= t and len(batch) < batch_size:
            batch.append(queue.popleft()[1])
        run(iter(batch), t + costs.pickup_s)

    def run(batch: Iterator[int], t: float) -> None:
        pid = next(batch, None)
        if pid is None:
            take_batch(t)
            return
        sim.at(sim.take(pid, t), lambda t2: run(batch, t2))

    def sweep(s: float) -> None:
        listing = [pid for pid, resume_at in sim.open.items() if _to_queue(s - resume_at)]
        t = s + costs.list_per_1000_s * len(sim.open) / 1000
        for start in range(0, len(listing), BATCH):
            t += costs.send_batch_s
            queue.extend((t, pid) for pid in listing[start : start + BATCH])
        sent[0] += len(listing)
        while idle and queue:
            idle.pop()
            sim.at(queue[0][0], take_batch)

    sim.run(sweep)
    name = "fan-out: timer queue + wake function" + (f" (batch {batch_size})" if batch_size != BATCH else "")
    result = _result(sim, name, str(workers))
    result.messages = sent[0]
    return result


def _to_queue(age: float) -> bool:
    """archmax.hosting.timer_queue.SqsTimers.to_queue on a park ``age`` seconds past its resume_at."""
    return age < FRESH_S or age % REDRIVE_S < FRESH_S


def _result(sim: _Sim, name: str, workers: str) -> Result:
    late = [sim.delivered[pid] - resume_at for resume_at, pid in sim.due if pid in sim.delivered]
    return Result(
        name=name,
        workers=workers,
        lateness=late,
        undelivered=len(sim.due) - len(late),
        backlog=sim.backlog,
        refused=sim.refused,
        last_delivery_s=max(sim.delivered.values(), default=0.0),
    )


def due_timers(parked: int, due_per_min: float, minutes: int, seed: int = 24) -> list[tuple[float, int]]:
    """``(resume_at s, park id)`` sorted: ``parked * due_per_min`` parks due per minute, uniform over the period."""
    rng = random.Random(seed)
    count = round(parked * due_per_min * minutes)
    return sorted((rng.uniform(0, minutes * 60.0), pid) for pid in range(count))


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def _fmt_s(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def keeps_up(result: Result, minutes: int, per_minute: float) -> bool:
    """The backlog just before the last sweep of the period is no larger than at half time (plus 10% of a minute's due)."""
    half, end = result.backlog.get(minutes // 2 * 60.0, 0), result.backlog.get(minutes * 60.0, 0)
    return result.undelivered == 0 and end <= half + 0.1 * per_minute


def table(results: list[Result], minutes: int, per_minute: float) -> list[str]:
    """The printed rows."""
    head = (
        f"| design | workers | timers | p50 lateness | p99 lateness | max | backlog @{minutes // 2} min | "
        f"@{minutes} min | keeps up | messages | refused deliveries | last delivered |"
    )
    rows = [head, "|" + "---|" * 12]
    for r in results:
        censored = "≥ " if r.undelivered else ""
        rows.append(
            f"| {r.name} | {r.workers} | {len(r.lateness) + r.undelivered} | "
            f"{censored}{_fmt_s(_pct(_censor(r), 50))} | {censored}{_fmt_s(_pct(_censor(r), 99))} | "
            f"{censored}{_fmt_s(max(_censor(r)))} | {r.backlog.get(minutes // 2 * 60.0, 0)} | "
            f"{r.backlog.get(minutes * 60.0, 0)} | {'yes' if keeps_up(r, minutes, per_minute) else 'no'} | "
            f"{r.messages or '-'} | {r.refused} | {_fmt_s(r.last_delivery_s)} |"
        )
    return rows


def _censor(r: Result) -> list[float]:
    """Lateness of every timer; one never delivered counts as the horizon (so percentiles are lower bounds)."""
    return r.lateness + [HORIZON_S] * r.undelivered


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parked", type=int, default=50_000)
    parser.add_argument("--due-per-min", type=float, default=0.01)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--turn-s", type=float, default=2.0)
    parser.add_argument("--workers", default="1,10,20,100")
    args = parser.parse_args(argv)
    costs = Costs(turn_s=args.turn_s)
    due = due_timers(args.parked, args.due_per_min, args.minutes)
    per_minute = args.parked * args.due_per_min
    results = [
        one_invocation(due, costs, overlapping=False),
        one_invocation(due, costs, overlapping=True),
        *(fan_out(due, costs, int(w)) for w in args.workers.split(",")),
        fan_out(due, costs, int(args.workers.split(",")[-1]), batch_size=1),
    ]
    needed = per_minute * costs.turn_s / SWEEP_EVERY_S
    print(
        f"Sweep fan-out (issue 24 goal 3): {args.parked:,} parked, {args.due_per_min:.0%} due per minute "
        f"({per_minute:,.0f}/min) for {args.minutes} simulated minutes = {len(due):,} timers; "
        f"a {costs.turn_s:g} s turn each: {needed:.1f} turns in parallel needed to keep up."
    )
    print("Timer lateness = resume_at -> the timer's turn committed (the TimerLateness metric), simulated clock.\n")
    print("\n".join(table(results, args.minutes, per_minute)))
    print(
        "\nAssumptions (a model, not a measurement): resume_at uniform over the period (seed 24); a sweep every "
        f"{SWEEP_EVERY_S:g} s from t=0; every timer turn takes {costs.turn_s:g} s, a refused delivery "
        f"{costs.refused_s:g} s; listing {costs.list_per_1000_s:g} s per 1,000 due; SendMessageBatch "
        f"{costs.send_batch_s:g} s per {BATCH}; a wake batch (≤ {BATCH} messages, fired one after another) starts "
        f"{costs.pickup_s:g} s after its first message is available; the queue is FIFO (standard SQS is roughly "
        "so); all W instances are available at once (Lambda adds SQS concurrency by up to 1,250 a minute); "
        f"the old sweep starts no turn it could not finish before its {SWEEP_TIMEOUT_S:g} s timeout (a killed "
        "turn would wait for its 900 s lease: worse); the fan-out re-queues a still-due park only at its "
        f"{REDRIVE_S:g} s redrive point; keeps up = every timer delivered and the backlog before the last "
        "sweep of the period no larger than at half time (+10% of a minute's due); a design cut off at "
        f"{_fmt_s(HORIZON_S)} reports lower bounds (≥). No sweep step but the due parks is modelled (re-drives, "
        "stale turns, the outbox)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
