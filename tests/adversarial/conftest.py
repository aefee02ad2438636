"""The forged-event fuzz's closing table (``make fuzz``): printed after any run that sent a forged event."""

from __future__ import annotations

from typing import Any

from . import fuzz_counts


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = fuzz_counts.render()
    if lines:
        terminalreporter.section("forged events (issue 21: 0 5xx, refusals write nothing)")
        for line in lines:
            terminalreporter.write_line(line)
