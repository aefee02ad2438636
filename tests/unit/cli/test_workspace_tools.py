"""The CLI gives a caller's agent the host tools of the sibling workflows it may run as sub-workflows.

Rule source: BEHAVIOUR.md §5.10 (a child is ``workflows/<slug>/`` beside the caller's; it runs with
the caller's agent) and §2.3 (host tools are offered only where allow lists grant them).
"""

from __future__ import annotations

from pathlib import Path

from archmax.cli import main
from archmax.workflow_tools import load_workspace_tools

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_callers_tools_come_first_then_its_siblings_new_ones():
    names = [tool.__name__ for tool in load_workspace_tools(EXAMPLES / "workflows" / "refund-desk")]
    assert "lookup_order" in names and "lookup_transaction" in names  # order-lookup's and bank-check's
    assert len(names) == len(set(names))


def test_archmax_test_runs_the_refund_desk_cases_with_their_child_workflow(capsys, tmp_path):
    code = main(["--root", str(EXAMPLES), "--store", str(tmp_path / "s"), "test", "refund-desk"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 cases: 4 passed, 0 failed" in out
