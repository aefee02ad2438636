"""A session whose workflow folder was renamed is reached with ``--workflow <new name>`` (attack32).

Without ``--workflow`` the CLI says the session's workflow ``is not under workflows/; pass --root or
--workflow`` (BEHAVIOUR.md §11: which workflow a session command uses). The refusal of a session
fired through another workflow (5bde42e) must not then refuse that very advice: it guards against
the wrong one of two workflows in the workspace, not against the only way left to continue.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ._support import EXAMPLES, INBOX_SCRIPT

SID = "c-1"


def parked(cli, tmp_path: Path) -> tuple[Path, list[str]]:
    """A workspace holding ``support-inbox`` and its session ``c-1`` parked; the flags that reach them."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "workflows" / "support-inbox", root / "workflows" / "support-inbox")
    flags = ["--root", str(root), "--store", str(tmp_path / "store"), "--model", INBOX_SCRIPT]
    first = cli(*flags, "run", "support-inbox", "About the thing", "--session", SID, "--trigger", "email_received")
    assert first.code == 0, first.err
    return root, flags


def test_a_renamed_workflows_session_continues_with_workflow_naming_the_new_folder(cli, tmp_path: Path) -> None:
    root, flags = parked(cli, tmp_path)
    (root / "workflows" / "support-inbox").rename(root / "workflows" / "helpdesk")  # the team renamed it

    advised = cli(*flags, "deliver", SID, "--trigger", "email_reply", "--message", "It is ORD-1001.")
    assert advised.code == 2 and "pass --root or --workflow" in advised.err, advised.err

    run = cli(
        *flags, "deliver", SID, "--trigger", "email_reply", "--message", "It is ORD-1001.", "--workflow", "helpdesk"
    )
    assert run.code == 0, run.err
    assert "ORD-1001" in run.out


def test_a_renamed_workflows_session_continues_with_run_naming_the_new_folder(cli, tmp_path: Path) -> None:
    """``run`` classifies the session (``resolve_session``) before it fires: the engine's refusal of
    another workflow's session (attack32) adopts a workflow that is gone from the workspace there too."""
    root, flags = parked(cli, tmp_path)
    (root / "workflows" / "support-inbox").rename(root / "workflows" / "helpdesk")

    run = cli(*flags, "run", "helpdesk", "It is ORD-1001.", "--session", SID, "--trigger", "email_reply")
    assert run.code == 0, run.err
    assert "ORD-1001" in run.out


def test_a_workflow_still_in_the_workspace_keeps_its_sessions(cli, tmp_path: Path) -> None:
    """Beside the old folder (copied, not renamed) the new one adopts nothing: refused, exit 2, nothing run."""
    root, flags = parked(cli, tmp_path)
    shutil.copytree(root / "workflows" / "support-inbox", root / "workflows" / "helpdesk")

    run = cli(*flags, "run", "helpdesk", "It is ORD-1001.", "--session", SID, "--trigger", "email_reply")
    assert run.code == 2
    assert f"session '{SID}' belongs to workflow 'support-inbox', not 'helpdesk'" in run.err
