"""A command whose operation raised after a sub-workflow child finished still lists what it sent (attack32).

The child's completion is committed and sent in-process before the caller's error goes on
(README "Outbound messages": "also when the operation then raised"; issue 20). The user reads the
``error:`` line; the ``sent:`` line of what went out to the bus (or to a customer) must be there too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._support import Run
from .test_sent_lines import CALLER, Pair, Script, bus, sent

__all__ = ["bus"]

CHILD = "s~work:b:1"
JOB = {"states": {"job": {"instructions": "Do it.", "triggers": {"manual": None}}}}
SCRIPT = [
    {"call": {"archmax_workflow_b": {}}},  # the caller calls b (the child's own first answer: refused, not its tool)
    {"say": "b done", "expect_state": "job"},  # the child finishes; the caller, in 'work', meets a script error
]


def test_run_that_raises_after_the_child_finished_lists_the_childs_event(
    cli: Callable[..., Run], script: Script, tmp_path: Path, bus: Any
) -> None:
    pair = Pair(cli, tmp_path, JOB, script(SCRIPT))
    run = pair.cli(*pair.flags, "run", "a", "go", "--session", CALLER)
    assert run.code == 1 and run.err.startswith("error: "), run.err
    child = pair.lines_of(CHILD)
    assert len(child) == 1 and "event 'Session Completed'" in child[0]  # the premise: it went to the bus
    assert sent(run) == child
