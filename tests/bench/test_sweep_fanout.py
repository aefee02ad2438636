"""bench/sweep_fanout.py's simulation: each timer delivered once, and its queue rule is the runtime's.

Rule source: issue 24 goal 3. Nothing here asserts a time: only counts the simulation keeps, and
the re-queue rule compared with :class:`archmax.hosting.timer_queue.SqsTimers` itself.
"""

from __future__ import annotations

import sweep_fanout as bench

from archmax.hosting.timer_queue import SqsTimers
from archmax.hosting.timers import DueTimer

DUE = bench.due_timers(parked=2_000, due_per_min=0.01, minutes=5)  # 100 timers


def test_every_design_delivers_every_timer_once() -> None:
    for result in (
        bench.one_invocation(DUE, bench.Costs(), overlapping=False),
        bench.one_invocation(DUE, bench.Costs(), overlapping=True),
        bench.fan_out(DUE, bench.Costs(), workers=3),
        bench.fan_out(DUE, bench.Costs(), workers=3, batch_size=1),
    ):
        assert result.undelivered == 0 and len(result.lateness) == len(DUE) == 100, result.name
        assert min(result.lateness) >= bench.Costs().turn_s  # a timer is never delivered before it is due


def test_a_fan_out_with_workers_to_spare_sends_one_message_per_timer_and_refuses_none() -> None:
    result = bench.fan_out(DUE, bench.Costs(), workers=10)
    assert (result.messages, result.refused) == (len(DUE), 0)


def test_the_simulated_requeue_rule_is_the_timer_queues() -> None:
    queue = SqsTimers(client=None, queue_url="q")
    assert (bench.FRESH_S, bench.REDRIVE_S) == (queue.fresh_s, queue.redrive_s)
    for age in (0, 59, 60, 89, 90, 120, 899, 900, 989, 990, 1800, 1850, 3600):
        timer = DueTimer(session_id="p", park_version=1, resume_at="2025-01-01T00:00:00.000Z", now=_plus(age))
        assert bench._to_queue(float(age)) is queue.to_queue(timer), age


def _plus(seconds: int) -> str:
    return f"2025-01-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.000Z"
