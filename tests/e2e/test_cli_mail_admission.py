"""``archmax email`` through the archmax process: the SES path's one admission rule (issue 21 items 1 and 3, issue 23 item 5).

The attacker's side (held in quarantine, the session unchanged, never a participant) and Dana's
(her first mail opens her conversation, her reply completes it), with the support inbox's example
mails and its scripted model.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from archmax import FilesystemStore
from archmax.inbound.mail_auth import is_participant

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
EMAILS = EXAMPLES / "workflows" / "support-inbox" / "emails"
SCRIPT = f"scripted:{EXAMPLES / 'workflows' / 'support-inbox' / 'model.yaml'}"
SID = "mail:3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"
"""The session 01-first.eml opens: its Message-ID, in the mail namespace."""


def archmax(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "archmax", "--root", str(EXAMPLES), "--store", str(store), "--model", SCRIPT, *args]
    env = {k: v for k, v in os.environ.items() if k != "ARCHMAX_MODEL"} | {"NO_COLOR": "1"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=300)


def email(store: Path, path: Path) -> subprocess.CompletedProcess[str]:
    return archmax(store, "email", str(path), "--workflow", "support-inbox")


def from_mallory(tmp_path: Path, source: str, *, message_id: str | None = None) -> Path:
    """An example mail with Mallory's From (and, given, another Message-ID)."""
    lines = []
    for line in (EMAILS / source).read_bytes().split(b"\n"):
        if line.startswith(b"From:"):
            line = b"From: Mallory <mallory@evil.example>\r"
        elif message_id and line.startswith(b"Message-ID:"):
            line = f"Message-ID: <{message_id}>\r".encode()
        lines.append(line)
    target = tmp_path / f"mallory-{source}"
    target.write_bytes(b"\n".join(lines))
    return target


def test_a_stranger_resending_the_first_message_id_is_quarantined_by_archmax_email_too(tmp_path: Path) -> None:
    store_dir = tmp_path / "sessions"
    first = email(store_dir, EMAILS / "01-first.eml")
    assert first.returncode == 0, first.stderr
    assert f"-> session '{SID}'" in first.stderr
    store = FilesystemStore(store_dir)
    before = store.load(SID)
    assert before.status == "awaiting_input"

    copycat = email(store_dir, from_mallory(tmp_path, "01-first.eml"))  # Dana's Message-ID, Mallory's From
    assert copycat.returncode == 0 and "duplicate" not in copycat.stderr
    assert "quarantined: sender 'mallory@evil.example' is not a participant" in copycat.stderr
    reply = email(store_dir, from_mallory(tmp_path, "02-reply.eml"))  # her "reply" in the thread
    assert "quarantined: sender 'mallory@evil.example' is not a participant" in reply.stderr
    assert store.load(SID) == before and not is_participant(store, SID, None, "mallory@evil.example")

    again = email(store_dir, EMAILS / "01-first.eml")  # Dana's own file again: a duplicate, nothing changes
    assert again.returncode == 0 and "duplicate" in again.stderr and store.load(SID) == before
    answered = email(store_dir, EMAILS / "02-reply.eml")
    assert answered.returncode == 0, answered.stderr
    assert store.load(SID).status == "completed"


def test_a_strangers_mail_cannot_join_a_session_another_channel_opened(tmp_path: Path) -> None:
    store_dir = tmp_path / "sessions"
    opened = archmax(store_dir, "run", "support-inbox", "Where is my order?", "--session", "order-1234",
                     "--trigger", "email_received")  # fmt: skip
    assert opened.returncode == 0, opened.stderr
    store = FilesystemStore(store_dir)
    before = store.load("order-1234")
    claim = email(store_dir, from_mallory(tmp_path, "01-first.eml", message_id="order-1234"))
    assert claim.returncode == 0, claim.stderr
    assert "-> session 'mail:order-1234'" in claim.stderr
    assert store.load("order-1234") == before and not is_participant(store, "order-1234", None, "mallory@evil.example")
