"""The cold start's garbage-collector pause: held from app.py's first line to the end of the first invocation.

Rule source: issue 24 goal 4 (cold start end to end); :mod:`archmax.hosting.coldstart`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from archmax.hosting.coldstart import pause_gc, resume_gc
from archmax.hosting.telemetry import Telemetry
from archmax.testing import FakeLambdaContext


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    resume_gc()
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_pause_holds_the_collector_off_until_resume() -> None:
    gc.enable()
    pause_gc()
    assert not gc.isenabled()
    resume_gc()
    assert gc.isenabled()


def test_resume_freezes_what_the_cold_start_built() -> None:
    """The second invocation must not pay for collecting the cold start's long-lived objects."""
    gc.unfreeze()
    gc.enable()
    pause_gc()
    built = [[n] for n in range(1000)]  # tracked containers, as a cold start makes
    resume_gc()
    assert gc.get_freeze_count() >= len(built)
    assert gc.isenabled()


def test_a_collector_disabled_by_someone_else_stays_disabled() -> None:
    gc.disable()
    pause_gc()
    resume_gc()
    assert not gc.isenabled()


def test_resume_without_a_pause_changes_nothing() -> None:
    gc.disable()
    resume_gc()
    assert not gc.isenabled()


@pytest.fixture
def telemetry(monkeypatch: pytest.MonkeyPatch) -> Telemetry:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "archmax")
    return Telemetry("test")


def test_the_first_invocation_resumes_the_collector(telemetry: Telemetry) -> None:
    gc.enable()
    pause_gc()
    seen: list[bool] = []

    def handle(event: Any, context: Any) -> dict[str, Any]:
        seen.append(gc.isenabled())
        return {"ok": True}

    handler = telemetry.handler(handle)
    assert handler({}, FakeLambdaContext()) == {"ok": True}
    assert seen == [False]  # paused through the first invocation
    assert gc.isenabled()
    handler({}, FakeLambdaContext())
    assert seen == [False, True]


def test_a_first_invocation_that_raises_resumes_the_collector_too(telemetry: Telemetry) -> None:
    gc.enable()
    pause_gc()

    def handle(event: Any, context: Any) -> dict[str, Any]:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        telemetry.handler(handle)({}, FakeLambdaContext())
    assert gc.isenabled()
