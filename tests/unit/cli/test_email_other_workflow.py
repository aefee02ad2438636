"""``archmax email --workflow <other>`` for a mail that threads into a session of another workflow.

The mail's conversation names an existing session; ``--workflow`` names another workflow. Like
``run <other> --session <id>`` and ``deliver <id> --workflow <other>`` (refused since 5bde42e), the
command must be refused with nothing written, not resume the session under the wrong workflow's
states (BEHAVIOUR.md §3.3 a refused firing writes nothing, §11; attack32).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from archmax.stores.filesystem import FilesystemStore

from ._support import EMAILS, EXAMPLES, INBOX_SCRIPT
from .test_email_test_sweep import CONVERSATION
from .test_refusals_write_nothing import listing


def test_a_reply_mail_fired_through_another_workflow_is_refused_and_writes_nothing(cli, tmp_path: Path):
    """Two workflows that both take mail: the reply threads into the first's session, ``--workflow`` names the copy."""
    root, store = tmp_path / "ws", tmp_path / "store"
    for slug in ("support-inbox", "helpdesk"):
        shutil.copytree(EXAMPLES / "workflows" / "support-inbox", root / "workflows" / slug)
    spec = root / "workflows" / "helpdesk" / "workflow.yaml"  # its states differ: no 'clarify'
    spec.write_text(spec.read_text(encoding="utf-8").replace("clarify", "ask"), encoding="utf-8")
    flags = ["--root", str(root), "--store", str(store), "--model", INBOX_SCRIPT]
    first = cli(*flags, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox")
    assert first.code == 0, first.err
    before, head = listing(store), FilesystemStore(store).head(CONVERSATION)
    run = cli(*flags, "email", str(EMAILS / "02-reply.eml"), "--workflow", "helpdesk")
    assert run.code == 2, run.err
    assert f"session '{CONVERSATION}' belongs to workflow 'support-inbox', not 'helpdesk'" in run.err
    assert "Traceback" not in run.err
    assert FilesystemStore(store).head(CONVERSATION) == head
    assert listing(store) == before
