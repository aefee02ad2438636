"""Counts kept across schedules for the soak summary: schedules, steps, crash points, faults fired, violations.

One table per pytest process; xdist workers hand theirs to the controller (see conftest.py), which
prints the merged table at the end of the run.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from .harness import CRASHES

COUNTS_DIR_VAR = "ARCHMAX_RELIABILITY_COUNTS_DIR"
COLUMNS = ("schedules", "steps", "recoveries", "crash points", "faults fired", "violations")


VIOLATIONS_KEPT = 3
"""The first violations' texts kept per store, so a soak stopped before its report still says what broke."""


class StoreCounters:
    """The counts of one store kind."""

    def __init__(self, table: Counter[str], kinds: Counter[str], texts: list[str] | None = None) -> None:
        self._table = table
        self._kinds = kinds
        self._texts = [] if texts is None else texts

    def add(self, name: str, n: int = 1) -> None:
        self._table[name] += n

    def violation(self, text: str) -> None:
        """One violated invariant: counted, and its text kept if it is one of the first few."""
        self._table["violations"] += 1
        if len(self._texts) < VIOLATIONS_KEPT:
            self._texts.append(text)

    def left_out(self, scenario: int) -> None:
        """A fault or interleaving not made because it reaches an open scenario of issue 9."""
        self._kinds[f"left out (open #{scenario})"] += 1

    def fault(self, kind: str) -> None:
        self._kinds[kind] += 1
        if kind not in ("interleaving",):
            self._table["faults fired"] += 1
        if kind in CRASHES:
            self._table["crash points"] += 1


TABLES: dict[str, Counter[str]] = defaultdict(Counter)
KINDS: dict[str, Counter[str]] = defaultdict(Counter)
TEXTS: dict[str, list[str]] = defaultdict(list)


def for_store(kind: str) -> StoreCounters:
    return StoreCounters(TABLES[kind], KINDS[kind], TEXTS[kind])


def dump() -> None:
    """Write this process's counts to ``$ARCHMAX_RELIABILITY_COUNTS_DIR/<pid>.json`` when that is set.

    Called after every schedule, so ``summary.py`` can print what a long soak reached so far, even one
    stopped before the end.
    """
    folder = os.environ.get(COUNTS_DIR_VAR)
    if folder:
        path = Path(folder) / f"{os.getpid()}.json"
        path.with_suffix(".tmp").write_text(json.dumps(export()), encoding="utf-8")
        path.with_suffix(".tmp").replace(path)


FAILURES_FILE = "failures.txt"
"""The report of each failed test, in the counts folder: written by the process that prints the run."""


def keep_failure(nodeid: str, text: str) -> None:
    """Append a failed test's report (its falsifying schedule) to the counts folder's ``failures.txt``.

    Under xdist the controller gets each report when the test ends, but prints it only when the whole
    run ends (hours later for ``make soak``); this file has it at once.
    """
    folder = os.environ.get(COUNTS_DIR_VAR)
    if folder:
        with (Path(folder) / FAILURES_FILE).open("a", encoding="utf-8") as out:
            out.write(f"==== {nodeid}\n{text}\n")


def export() -> dict[str, Any]:
    return {
        "tables": {k: dict(v) for k, v in TABLES.items()},
        "kinds": {k: dict(v) for k, v in KINDS.items()},
        "violations": {k: list(v) for k, v in TEXTS.items() if v},
    }


def merge(data: dict[str, Any]) -> None:
    for kind, table in data.get("tables", {}).items():
        TABLES[kind].update(table)
    for kind, kinds in data.get("kinds", {}).items():
        KINDS[kind].update(kinds)
    for kind, texts in data.get("violations", {}).items():
        TEXTS[kind].extend(texts[: VIOLATIONS_KEPT - len(TEXTS[kind])])


def render() -> list[str]:
    """The summary table, one line per store, then the faults by kind."""
    if not TABLES:
        return []
    width = max(len(k) for k in TABLES) + 2
    lines = ["store".ljust(width) + "".join(c.rjust(14) for c in COLUMNS)]
    for kind in sorted(TABLES):
        lines.append(kind.ljust(width) + "".join(str(TABLES[kind][c]).rjust(14) for c in COLUMNS))
    for kind in sorted(KINDS):
        fired = ", ".join(f"{name} {count}" for name, count in sorted(KINDS[kind].items()))
        lines.append(f"{kind} by kind: {fired or 'none'}")
    for kind in sorted(TEXTS):
        for text in TEXTS[kind]:
            lines.append(f"{kind} violation: {text}")
    return lines
