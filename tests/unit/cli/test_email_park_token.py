"""Issue 21 item 6 on ``archmax email`` (filesystem store, file mail transport; BEHAVIOUR.md §5.11).

The mail that asks a question carries a signed reply token naming its park (read back from the
``.eml`` the file transport wrote). Dana's answer to question A, sent to A's ``Reply-To``, moves the
session on to question B; a late second answer to A is refused (exit 1, ``SessionNotAwaitingInputError``
naming both parks) and the store is byte-for-byte unchanged. The answer to B, and a token that names
no park (issued before parks were named), are applied.
"""

from __future__ import annotations

from email import message_from_bytes
from email.policy import default
from pathlib import Path
from typing import Any

import pytest

from archmax.inbound.reply_token import reply_address, verify_token
from archmax.session.records import park_id_at
from archmax.stores.filesystem import FilesystemStore

from ._support import EMAILS

SECRET = "a-reply-secret-of-32-characters!"
ROOT = "3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"
CONVERSATION = f"mail:{ROOT}"
SCRIPT = [
    {"expect_state": "intake", "call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {
        "expect_state": "clarify",
        "say": "Which order is this about?",
        "call": {"archmax_wait": {"reason": "the order number"}},
    },
    {
        "expect_state": "clarify",
        "say": "Thanks. And the postcode it goes to?",
        "call": {"archmax_wait": {"reason": "the postcode"}},
    },
    {"expect_state": "clarify", "call": {"archmax_advance": {"to": "answer", "reason": "order and postcode known"}}},
    {"expect_state": "answer", "say": "ORD-1001 reaches 10115 on Thursday."},
]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {".locks", ".tmp"} & set(p.relative_to(root).parts)
    }


class Conversation:
    """Dana's thread with the support inbox, one ``archmax email`` per mail."""

    def __init__(self, cli: Any, flags: list[str], store: Path, tmp: Path) -> None:
        self.cli, self.flags, self.root, self.tmp = cli, flags, store, tmp
        self.store = FilesystemStore(store)

    def email(self, path: Path) -> Any:
        return self.cli(*self.flags, "email", str(path), "--workflow", "support-inbox")

    def reply(self, n: int, to: str, body: str, sender: str = "Dana Rivers <dana.rivers@example.org>") -> Path:
        path = self.tmp / f"reply-{n}.eml"
        path.write_bytes(
            "\r\n".join(
                [
                    f"From: {sender}",
                    f"To: {to}",
                    "Subject: Re: the grinder",
                    f"Message-ID: <r{n}@example.org>",
                    f"In-Reply-To: <{ROOT}>",
                    f"References: <{ROOT}>",
                    "",
                    body,
                    "",
                ]
            ).encode()
        )
        return path

    def reply_to(self) -> str:
        """The ``Reply-To`` of the newest mail the session sent (the ``.eml`` the file transport wrote)."""
        entry = [e for e in self.store.load(CONVERSATION).outbox if e.kind == "email"][-1]
        raw = self.store.get(CONVERSATION, f"outbox/{entry.id}.eml")
        assert raw is not None, "the mail was not sent"
        return str(message_from_bytes(raw, policy=default)["Reply-To"])

    def park_id(self) -> str | None:
        return self.store.load(CONVERSATION).park_id


def _token_park(address: str) -> str:
    found = verify_token(address.partition("@")[0].partition("+")[2], SECRET.encode())
    assert found is not None and found.session_id == CONVERSATION and found.park_version is not None
    return park_id_at(found.session_id, found.park_version)


@pytest.fixture
def asked_b(cli: Any, examples: list[str], script: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The first mail asked A (its mail's token names park A); Dana's answer to A moved the session on to ask B."""
    for name in ("ARCHMAX_REPLY_SECRET_PARAM", "ARCHMAX_SMTP_URL", "ARCHMAX_MAIL_TRANSPORT", "ARCHMAX_OUTBOUND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ARCHMAX_REPLY_SECRET", SECRET)
    c = Conversation(cli, [*examples, "--model", script(SCRIPT)], Path(examples[3]), tmp_path)
    assert c.email(EMAILS / "01-first.eml").code == 0
    c.park_a, c.reply_to_a = c.park_id(), c.reply_to()
    assert c.park_a is not None and _token_park(c.reply_to_a) == c.park_a  # the mail that asked A names park A
    assert c.email(c.reply(1, c.reply_to_a, "It's ORD-1001.")).code == 0  # the answer to the current question
    c.park_b = c.park_id()
    assert c.park_b not in (None, c.park_a) and _token_park(c.reply_to()) == c.park_b
    return c


def test_a_late_answer_to_question_a_is_refused_and_the_store_is_unchanged(asked_b: Any) -> None:
    c = asked_b
    before = _snapshot(c.root)
    run = c.email(c.reply(2, c.reply_to_a, "Sorry, it's ORD-1002."))
    assert (
        run.code == 1 and "is not parked awaiting an event" in run.err and "not the session's current park" in run.err
    )  # §5.11
    assert c.park_a in run.err and c.park_b in run.err
    assert "quarantined" not in run.err
    assert _snapshot(c.root) == before  # no delivery id, no quarantine, no participant, no transcript line
    assert c.park_id() == c.park_b


def test_the_answer_to_question_b_is_applied(asked_b: Any) -> None:
    c = asked_b
    run = c.email(c.reply(2, c.reply_to(), "10115."))
    assert run.code == 0
    assert c.store.load(CONVERSATION).status == "completed"


def test_a_token_naming_no_park_keeps_todays_behaviour(asked_b: Any) -> None:
    c = asked_b
    old_style = reply_address("support@example.com", CONVERSATION, SECRET.encode())  # issued before parks had names
    run = c.email(c.reply(2, old_style, "10115, for Dana.", sender="Carol <carol@partner.example>"))
    assert run.code == 0 and "quarantined" not in run.err  # the token lets a new address speak, as before
    assert c.store.load(CONVERSATION).status == "completed"
