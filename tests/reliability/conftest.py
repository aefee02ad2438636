"""Hypothesis profiles for the reliability suite and the soak summary table.

``ARCHMAX_RELIABILITY_PROFILE`` picks the profile: ``ci`` (the default: a count that keeps the
suite to a minute or two on 2 cores, derandomized so CI is reproducible), ``soak`` (``make soak``:
at least 2,000 schedules per store, random seeds), ``dev`` (a handful, random seeds, for iterating;
``ARCHMAX_RELIABILITY_EXAMPLES`` sets one count for every store).
The counts (schedules, crash points, faults fired, violations) are printed at the end of any run
that ran a schedule; under xdist each worker hands its counts to the controller.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from . import counters

PROFILE_VAR = "ARCHMAX_RELIABILITY_PROFILE"
_COMMON = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
settings.register_profile("ci", max_examples=25, derandomize=True, **_COMMON)
settings.register_profile("soak", max_examples=2000, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=5, **_COMMON)
PROFILE = os.environ.get(PROFILE_VAR, "ci")

SCHEDULES = {
    # store -> (shards, schedules per shard); shards are separate tests, so xdist runs them side by side.
    # The AWS store talks to moto over HTTP (~150 calls a schedule): fewer fit the CI budget.
    "ci": {"memory": (1, 60), "filesystem": (1, 35), "aws": (1, 12)},
    "soak": {"memory": (1, 2000), "filesystem": (2, 1000), "aws": (4, 500)},
    "dev": {"memory": (1, 5), "filesystem": (1, 5), "aws": (1, 3)},
}[PROFILE]
if os.environ.get("ARCHMAX_RELIABILITY_EXAMPLES"):  # one count for every store, e.g. while iterating
    SCHEDULES = {kind: (1, int(os.environ["ARCHMAX_RELIABILITY_EXAMPLES"])) for kind in SCHEDULES}
STEPS = {"memory": 14, "filesystem": 14, "aws": 10}
"""Most steps in one schedule (hypothesis ``stateful_step_count``)."""
SIGKILL_EXAMPLES = {"ci": 3, "soak": 40, "dev": 2}[PROFILE]


def pytest_sessionfinish(session: Any) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints
        workeroutput["reliability"] = json.dumps(counters.export())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get("reliability")
    if data:
        counters.merge(json.loads(data))


def pytest_runtest_logreport(report: Any) -> None:
    if report.failed and "PYTEST_XDIST_WORKER" not in os.environ:  # the process that prints the run
        counters.keep_failure(report.nodeid, report.longreprtext)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = counters.render()
    if lines:
        terminalreporter.section(f"reliability schedules (profile {PROFILE})")
        for line in lines:
            terminalreporter.write_line(line)
