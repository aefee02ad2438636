"""``archmax test``: declarative YAML test cases for workflows (BEHAVIOUR.md §10).

Public surface: :func:`run_tests` runs a workflow's ``tests/**/*.test.yaml`` cases and
:func:`format_results` renders the verdicts; :func:`results_to_json` is the ``--json`` form.
"""

from archmax.cases.discovery import CaseFile, discover_cases, read_case
from archmax.cases.report import format_results, results_to_json
from archmax.cases.results import AssertionRecord, CaseResult, Verdict
from archmax.cases.runner import run_tests, session_id_for
from archmax.cases.schema import Case, parse_case

__all__ = [
    "AssertionRecord",
    "Case",
    "CaseFile",
    "CaseResult",
    "Verdict",
    "discover_cases",
    "format_results",
    "parse_case",
    "read_case",
    "results_to_json",
    "run_tests",
    "session_id_for",
]
