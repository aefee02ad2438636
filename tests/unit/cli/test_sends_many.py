""":class:`archmax.cli.sent.Sends` with many Outcomes kept: each door call's bookkeeping does not grow with them.

``archmax sweep`` keeps every Outcome it woke or recovered (for its report), and its agent's door is
wrapped by ``Sends``. Scanning every kept Outcome at each door call made a sweep of N sessions cost
N² weak-reference checks (16,000 wakes: minutes; attack32). Counted, never timed.
"""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace
from typing import Any

import pytest

from archmax.cli import sent
from archmax.cli.sent import Committed, Sends


class Counted(weakref.ref):  # type: ignore[type-arg]
    """A weak reference that counts how often it is dereferenced."""

    derefs = 0

    def __call__(self) -> Any:
        Counted.derefs += 1
        return super().__call__()


class Answer:
    """A stand-in Outcome (weakly referenceable, compared by identity)."""


def _door(sends: Sends, commits: list[list[Any]]) -> Any:
    """``sends.door`` around a door whose n-th call answers a fresh Outcome and commits ``commits[n]``."""
    calls = iter(commits)

    def door(rt: Any, firing: Any, *, riders: Any = None) -> Any:
        records = next(calls)
        return SimpleNamespace(outcome=Answer(), to_send=lambda: records)

    return sends.door(door)


def test_a_door_call_checks_no_earlier_outcome_however_many_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sent, "weakref", SimpleNamespace(ref=Counted))
    Counted.derefs = 0
    n = 300
    door = _door(Sends(), [[] for _ in range(n)])
    kept = [door(None, None).outcome for _ in range(n)]  # a sweep's report keeps every Outcome
    assert len(kept) == n
    assert Counted.derefs <= n  # at most one per call, not one per kept Outcome (n * (n - 1) / 2 before)


def test_each_kept_outcome_answers_its_own_commits_and_a_dropped_one_is_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = [
        SimpleNamespace(session_id=f"s{i}", created_at="2025-01-01T00:00:00.000Z", version=1, outbox=[])
        for i in range(3)
    ]
    sends = Sends()
    door = _door(sends, [[rec[0]], [rec[1]], [rec[2]]])
    first, second, third = (door(None, None).outcome for _ in range(3))
    assert [c.session_id for c in sends.of(second)] == ["s1"]
    assert sends.of(first) == [Committed("s0", "2025-01-01T00:00:00.000Z", ())]
    assert sends.of(Answer()) == []  # an Outcome no operation here answered
    del second
    gc.collect()
    assert len(sends._answered) == 2  # the dropped Outcome's commits are not kept
    assert [c.session_id for c in sends.of(third)] == ["s2"]
