"""``sent:`` lines of a firing addressed to a sub-workflow child's id (BEHAVIOUR.md §5.10; attack32).

The firing reaches the pair through its caller; the pair's commits sent as they do for a firing at
the caller's id, so the command lists the same lines.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._support import Run
from .test_sent_lines import CALLED, CALLER, CHILD, REVIEWED, REVIEWS, WAITS, Pair, Script, bus, sent

__all__ = ["bus"]


def test_deliver_at_the_childs_id_lists_the_pairs_events(
    cli: Callable[..., Run], script: Script, tmp_path: Path, bus: Any
) -> None:
    pair = Pair(cli, tmp_path, CALLED, script(WAITS))
    pair("run", "a", "go", "--session", CALLER)
    delivered = sent(pair("deliver", CHILD, "--trigger", "manual", "--message", "ORD-1"))
    assert delivered == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(delivered) == 2 and all("event 'Session Completed'" in x for x in delivered)


def test_reply_and_decide_at_the_childs_id_list_the_pairs_events(
    cli: Callable[..., Run], script: Script, tmp_path: Path, bus: Any
) -> None:
    pair = Pair(cli, tmp_path, REVIEWED, script(REVIEWS))
    pair("run", "a", "go", "--session", CALLER)
    replied = sent(pair("reply", CHILD, "One more thing."))
    assert replied == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(replied) == 2
    decided = sent(pair("decide", CHILD, "--to", "approved"))
    assert decided == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(decided) == 2
