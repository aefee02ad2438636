"""What a case run records: one ``AssertionRecord`` per check, a ``CaseResult`` per case.

Rule source: BEHAVIOUR.md §10.3 (records, verdict, halting) and §10.4 (``model.unconsumed``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class AssertionRecord(BaseModel):
    """One check (or one action) of a case.

    ``kind`` is the step key (``send``, ``parked``, ``reply``, ...), ``variables.locked`` for a
    lock check, or ``model.unconsumed``. A ``reply`` step gives one record per token, a
    ``variables`` step one per name.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    status: Literal["passed", "failed", "not-executed"]
    step: int | None
    """1-based step number; ``None`` for ``model.unconsumed``."""
    threshold: float | None = None
    """Only for ``grade``: the ``atLeast`` asked for."""
    score: float | None = None
    """Only for ``grade``: the judge's score, clamped to 0..1."""
    detail: str | None = None
    """What was checked, and on failure what was found."""


class Verdict(BaseModel):
    """``passed`` / ``failed`` / ``skipped`` and the failure lines (the error first)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["passed", "failed", "skipped"]
    failures: list[str] = Field(default_factory=list)


class CaseResult(BaseModel):
    """The result of one case (§10.3)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The path relative to ``tests/`` without the extension."""
    title: str
    description: str
    session_id: str | None
    """``test-<epoch ms>-<id with / → ->``; ``None`` when nothing ran (skipped, invalid)."""
    verdict: Verdict
    records: list[AssertionRecord] = Field(default_factory=list)
    skip_reason: str | None = None
    error: str | None = None
    """Why the case died (an action raised, a refused start, the timeout, the model script, an invalid case)."""
