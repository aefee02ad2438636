"""Reading a run: a verdict line per case (✔ / ✖ / ○) with failure details, and the JSON form.

Rule source: issue 6 ("a readable verdict line per case (✔ / ✖ / ○) with the failure details")
and BEHAVIOUR.md §11 (``test``: a disabled suite prints ``suite skipped — disabled``).
"""

from __future__ import annotations

from typing import Any

from archmax.cases.results import CaseResult

MARKS = {"passed": "✔", "failed": "✖", "skipped": "○"}


def format_results(result: dict[str, Any]) -> str:
    """Render ``run_tests``'s result for a terminal.

    Args:
        result: What :func:`archmax.cases.run_tests` returned.

    Returns:
        One line per case (``✔ <id> — <title>``, ``✖ …`` followed by indented failure lines,
        ``○ … (skipped: <reason>)``), then a summary line. A disabled suite is the single line
        ``suite skipped — disabled``; a filter that matched nothing says so.

    Example:
        >>> print(format_results({"results": [], "exit_code": 0, "discovered": 0, "skipped": "disabled"}))
        suite skipped — disabled
    """
    if result.get("skipped"):
        return f"suite skipped — {result['skipped']}"
    results: list[CaseResult] = list(result.get("results", []))
    if not results:
        if result.get("filter"):
            return f"no case matches filter '{result['filter']}'"
        return "no cases found (tests/**/*.test.yaml)"
    lines = [line for r in results for line in _case_lines(r)]
    lines.append(_summary(results))
    return "\n".join(lines)


def _case_lines(r: CaseResult) -> list[str]:
    """The verdict line, then for a failed case its failures and how many steps never ran."""
    status = r.verdict.status
    line = f"{MARKS[status]} {r.id} — {r.title}"
    if status == "skipped":
        line += f" (skipped: {r.skip_reason})"
    if status != "failed":
        return [line]
    lines = [line]
    for failure in r.verdict.failures:
        first, *rest = failure.splitlines() or [""]
        lines.append(f"    {first}")
        lines.extend(f"      {more}" for more in rest)
    not_run = sum(1 for rec in r.records if rec.status == "not-executed")
    if not_run:
        lines.append(f"    ({not_run} later step{'s' if not_run != 1 else ''} not executed)")
    return lines


def _summary(results: list[CaseResult]) -> str:
    counts = {k: sum(1 for r in results if r.verdict.status == k) for k in MARKS}
    summary = (
        f"{len(results)} case{'s' if len(results) != 1 else ''}: {counts['passed']} passed, {counts['failed']} failed"
    )
    if counts["skipped"]:
        summary += f", {counts['skipped']} skipped"
    return summary


def results_to_json(result: dict[str, Any]) -> dict[str, Any]:
    """``run_tests``'s result as plain JSON-able data (``archmax test --json``)."""
    out = dict(result)
    out["results"] = [r.model_dump(mode="json") for r in result.get("results", [])]
    return out
