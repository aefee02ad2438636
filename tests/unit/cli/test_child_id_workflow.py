"""A CLI firing addressed to a sub-workflow child's id may name the caller's workflow (BEHAVIOUR.md §5.10).

"A firing addressed to a child's id reaches the pair through its caller (a delivery, reply or
decision is applied as if sent to the caller)": ``deliver``/``reply``/``decide <child id> --workflow
<caller's>`` and ``run <caller's> --session <child id>`` worked before the CLI refused sessions fired
through another workflow (5bde42e), and were refused by it (attack32). A workflow that is neither
the child's nor a caller's stays refused, changing nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import make_workspace
from .test_refusals_write_nothing import listing
from .test_sent_lines import CALLED, CALLER, CHILD, REVIEWED, REVIEWS, WAITS, Pair

FLAGS = [[], ["--workflow", "a"], ["--workflow", "b"]]
IDS = ["no-flag", "callers-workflow", "childs-workflow"]


@pytest.mark.parametrize("flag", FLAGS, ids=IDS)
def test_deliver_to_the_childs_id_finishes_the_pair(cli, script, tmp_path: Path, flag) -> None:
    pair = Pair(cli, tmp_path, CALLED, script(WAITS))
    pair("run", "a", "go", "--session", CALLER)
    pair("deliver", CHILD, "--trigger", "manual", "--message", "ORD-1", *flag)
    assert [pair.store.head(s).status.value for s in (CALLER, CHILD)] == ["completed", "completed"]


@pytest.mark.parametrize("flag", FLAGS, ids=IDS)
def test_reply_then_decide_at_the_childs_id_finish_the_pair(cli, script, tmp_path: Path, flag) -> None:
    pair = Pair(cli, tmp_path, REVIEWED, script(REVIEWS))
    pair("run", "a", "go", "--session", CALLER)
    pair("reply", CHILD, "One more thing.", *flag)
    pair("decide", CHILD, "--to", "approved", *flag)
    assert [pair.store.head(s).status.value for s in (CALLER, CHILD)] == ["completed", "completed"]


@pytest.mark.parametrize("workflow", ["a", "b"])
def test_run_into_the_childs_id_through_either_workflow_of_the_pair(cli, script, tmp_path: Path, workflow) -> None:
    pair = Pair(cli, tmp_path, CALLED, script(WAITS))
    pair("run", "a", "go", "--session", CALLER)
    pair("run", workflow, "ORD-1", "--session", CHILD)


def test_a_workflow_outside_the_pair_is_still_refused_at_the_childs_id(cli, script, tmp_path: Path) -> None:
    pair = Pair(cli, tmp_path, CALLED, script(WAITS))
    make_workspace(tmp_path / "ws", c=CALLED)
    pair("run", "a", "go", "--session", CALLER)
    before = listing(tmp_path)
    run = pair.cli(*pair.flags, "deliver", CHILD, "--trigger", "manual", "--workflow", "c")
    assert run.code == 2 and run.err.startswith(f"error: session '{CHILD}' belongs to workflow 'b', not 'c'")
    assert listing(tmp_path) == before
