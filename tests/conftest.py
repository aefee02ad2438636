"""Shared fixtures: a fake clock, the path of the public samples (skipping where absent), the GC resumed."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from archmax.clock import FakeClock
from archmax.hosting.coldstart import resume_gc

REPO = Path(__file__).resolve().parent.parent
SHARED_SAMPLES = REPO.parent / "shared" / "samples"


@pytest.fixture
def clock() -> FakeClock:
    """A clock at 2025-01-01T00:00:00.000Z that moves only when a test advances it."""
    return FakeClock("2025-01-01T00:00:00.000Z")


@pytest.fixture
def shared_samples() -> Path:
    """``../shared/samples`` read in place; skips where that folder is absent (a user's fresh clone)."""
    if not SHARED_SAMPLES.is_dir():
        pytest.skip("../shared/samples is absent: the public sample files are not beside this clone")
    return SHARED_SAMPLES


@pytest.fixture(autouse=True)
def _gc_resumed() -> object:
    """A function module loaded in-process pauses the garbage collector until its first invocation; not past a test.

    Resuming freezes the heap (archmax.hosting.coldstart); a test process unfreezes it again, so what one
    test left behind is collected as usual.
    """
    yield
    resume_gc()
    gc.unfreeze()
