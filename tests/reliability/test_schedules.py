"""Random schedules with faults at every commit point, on the memory, filesystem and AWS (moto) stores.

Issue 9 "What to build": a model-based suite (hypothesis stateful testing, shrinking); the rules and
faults are in schedules.py and harness.py, the invariants in invariants.py. The example count
comes from the profile (conftest.py): ``ci`` by default, ``soak`` under ``make soak``.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from .conftest import PROFILE, SCHEDULES, STEPS
from .schedules import OPEN_SCENARIOS, Schedule


def _cases(kind: str) -> dict[str, type]:
    """One TestCase per shard of the store's schedules (the profile says how many)."""
    shards, schedules = SCHEDULES[kind]
    machine = type(f"{kind.capitalize()}Schedule", (Schedule,), {"kind": kind})
    out = {}
    for shard in range(shards):
        case = type(f"Test{kind.capitalize()}Schedules{shard if shards > 1 else ''}", (machine.TestCase,), {})
        case.settings = settings(
            settings.get_profile(PROFILE), max_examples=schedules, stateful_step_count=STEPS[kind]
        )
        out[case.__name__] = case
    return out


for _kind in ("memory", "filesystem", "aws"):
    globals().update(_cases(_kind))


def test_no_operation_mix_is_left_out() -> None:
    """Every mix runs once the eight scenarios are fixed; until then this says which are still left out."""
    if OPEN_SCENARIOS:
        listed = "; ".join(f"#{n}: {text}" for n, text in sorted(OPEN_SCENARIOS.items()))
        pytest.skip(f"mixes reaching open issue 9 scenarios are left out of the schedules — {listed}")
