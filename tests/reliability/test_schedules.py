"""Random schedules with faults at every commit point, on the memory, filesystem and AWS (moto) stores.

Each store also runs a short profile behind a wrapper with exactly the store protocol's members
(``tests/stores/protocol_only.py``, issue 23).

Issue 9 "What to build": a model-based suite (hypothesis stateful testing, shrinking); the rules and
faults are in schedules.py and harness.py, the invariants in invariants.py. The example count
comes from the profile (conftest.py): ``ci`` by default, ``soak`` under ``make soak``.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from .conftest import PROFILE, SCHEDULES, STEPS
from .schedules import OPEN_SCENARIOS, Schedule

PROTOCOL_ONLY_SHARE = 4
"""The protocol-only runs are a short profile: a quarter of the store's schedules, one shard (issue 23)."""


def _cases(kind: str, *, protocol_only: bool = False) -> dict[str, type]:
    """One TestCase per shard of the store's schedules (the profile says how many).

    With ``protocol_only`` the store sits behind a wrapper with exactly the store protocol's members,
    for a quarter of the schedules in one shard: it must meet every invariant the bare store meets.
    """
    shards, schedules = SCHEDULES[kind]
    if protocol_only:
        shards, schedules = 1, max(1, shards * schedules // PROTOCOL_ONLY_SHARE)
    name = kind.capitalize() + ("ProtocolOnly" if protocol_only else "")
    machine = type(f"{name}Schedule", (Schedule,), {"kind": kind, "protocol_only": protocol_only})
    out = {}
    for shard in range(shards):
        case = type(f"Test{name}Schedules{shard if shards > 1 else ''}", (machine.TestCase,), {})
        case.settings = settings(settings.get_profile(PROFILE), max_examples=schedules, stateful_step_count=STEPS[kind])
        out[case.__name__] = case
    return out


for _kind in ("memory", "filesystem", "aws"):
    globals().update(_cases(_kind))
    globals().update(_cases(_kind, protocol_only=True))


def test_no_operation_mix_is_left_out() -> None:
    """Every mix runs once the eight scenarios are fixed; until then this says which are still left out."""
    if OPEN_SCENARIOS:
        listed = "; ".join(f"#{n}: {text}" for n, text in sorted(OPEN_SCENARIOS.items()))
        pytest.skip(f"mixes reaching open issue 9 scenarios are left out of the schedules — {listed}")
