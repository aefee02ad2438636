"""Counts kept by the forged-event fuzz (``test_fuzz_forged.py``): events per handler, answers per status.

One table per pytest process; ``conftest.py`` prints it at the end of any run that sent a forged
event (``make fuzz``'s closing table). An answer is counted by its HTTP status, by ``ok`` or the
``status`` of a direct invoke's typed refusal, and, for an SES receipt, by what each record got
(``ses:accepted``, ``ses:quarantined``, ``ses:refused``, ``ses:error``).
"""

from __future__ import annotations

from collections import Counter

HANDLERS: Counter[str] = Counter()
"""Forged events sent, by entry point (``send:http``, ``send:webhook``, ``deliver:direct``, ...)."""
ANSWERS: Counter[str] = Counter()
"""Answers, by status (``202``, ``400``, ``ok``, ``ses:quarantined``, ...)."""


def count(entry: str, answers: list[str]) -> None:
    """One forged event sent to ``entry`` and what it was answered."""
    HANDLERS[entry] += 1
    ANSWERS.update(answers)


def render() -> list[str]:
    """The closing table: events per handler, then answers per status; empty when nothing was sent."""
    if not HANDLERS:
        return []
    width = max(len(k) for k in [*HANDLERS, *ANSWERS]) + 2
    lines = [f"forged events: {sum(HANDLERS.values())}", "events per handler:"]
    lines += [f"  {name.ljust(width)}{n:>8}" for name, n in sorted(HANDLERS.items())]
    lines.append("answers per status:")
    lines += [f"  {name.ljust(width)}{n:>8}" for name, n in sorted(ANSWERS.items())]
    server_errors = sum(n for name, n in ANSWERS.items() if name[:1] == "5" or name == "raised")
    lines.append(f"5xx or unhandled: {server_errors}")
    return lines
