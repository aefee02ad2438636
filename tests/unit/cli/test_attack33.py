"""The CLI's renamed-workflow allowance (``Runtime.adopts``) seen from a third workflow (attack33).

``Context.agent`` sets ``runtime.adopts`` to "that workflow is gone from the workspace", whatever
``--workflow`` names: after ``support-inbox`` is renamed to ``helpdesk``, *every* workflow of the
workspace adopts its sessions, not only the renamed folder. Rule sources: BEHAVIOUR.md §3.3 (a refused
firing changes nothing; errors are typed), §11 (which workflow a session command uses), attack32 (the
engine refuses another workflow's session: ``OtherWorkflowSessionError``, exit 2).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ._support import EXAMPLES, INBOX_SCRIPT

SID = "c-1"


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.xfail(
    strict=True,
    raises=KeyError,
    reason=(
        "attack33: after support-inbox is renamed, 'deliver c-1 --workflow bank-check' passes the CLI's "
        "check (the session's workflow is gone) and the engine's (bank-check's runtime adopts every gone "
        "workflow), so bank-check's states resume the session: a bare KeyError ('clarify') out of the "
        "turn loop after the claim, the attack32 bug again"
    ),
)
def test_a_renamed_workflows_session_is_not_adopted_by_another_workflow_of_the_workspace(cli, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for name in ("support-inbox", "bank-check"):
        shutil.copytree(EXAMPLES / "workflows" / name, root / "workflows" / name)
    flags = ["--root", str(root), "--store", str(tmp_path / "store"), "--model", INBOX_SCRIPT]
    first = cli(*flags, "run", "support-inbox", "About the thing", "--session", SID, "--trigger", "email_received")
    assert first.code == 0, first.err
    (root / "workflows" / "support-inbox").rename(root / "workflows" / "helpdesk")
    before = files(tmp_path / "store")

    run = cli(*flags, "deliver", SID, "--trigger", "email_reply", "--message", "ORD-1", "--workflow", "bank-check")
    assert run.code == 2
    assert f"session '{SID}' belongs to workflow 'support-inbox', not 'bank-check'" in run.err
    assert files(tmp_path / "store") == before
