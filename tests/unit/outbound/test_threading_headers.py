"""Our threading headers: ids quoted as written, never encoded, folded only between ids (issue 20 items 6, 7, 11).

Real parts: the email adapter, the demo's support-inbox workflow on the filesystem store, the
dispatcher and an aiosmtpd server on 127.0.0.1. The customer's mail is built with the ``email``
package and carries ids as Exchange Online writes them (longer than a header line, upper case).
"""

from __future__ import annotations

import ast
import email
import re
from email.message import EmailMessage
from pathlib import Path

import pytest

from archmax.clock import FakeClock
from archmax.inbound.email import parse_email
from archmax.outbound.config import dispatcher_from_env
from archmax.outbound.mime import POLICY, build_reply
from archmax.session.records import OutboxEntry
from archmax.stores.filesystem import FilesystemStore

from ._mail import send_mail, support_agent

EXCHANGE_ID = "<AM0PR01MB12342AB24BBC6F1E4C4DB1F37A5E0C9D2B7E0001@AM0PR01MB1234.EURPRD01.PROD.EXCHANGELABS.COM>"
ROOT_ID = "<CAF+Xy9.Root-ABC@Mail.Gmail.COM>"


def exchange_reply() -> bytes:
    """A customer's mail in a thread, every id longer than a line or in upper case, as clients write them."""
    msg = EmailMessage()
    msg["From"] = "Dana Rivers <dana.rivers@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Question about the grinder"
    msg["Message-ID"] = EXCHANGE_ID
    msg["References"] = ROOT_ID
    msg["In-Reply-To"] = ROOT_ID
    msg.set_content("Hello, which grinder fits my café?")
    return msg.as_bytes()


def header_lines(raw: bytes, name: str) -> list[str]:
    """The physical lines of header ``name`` in a raw message (the first line and its continuations)."""
    head = raw.split(b"\r\n\r\n", 1)[0].decode("ascii")
    match = re.search(rf"(?im)^{name}:[^\r\n]*(?:\r\n[ \t][^\r\n]*)*", head)
    assert match, f"no {name} header"
    return match.group(0).split("\r\n")


def assert_ids_whole(raw: bytes, name: str, expected: list[str]) -> None:
    """Header ``name`` holds exactly ``expected``, unencoded, each id whole on one physical line."""
    lines = header_lines(raw, name)
    assert "=?" not in "".join(lines)
    tokens = [t for line in lines for t in line.removeprefix(f"{name}:").split()]
    assert tokens == expected
    assert all(len(line) <= 998 for line in lines)


@pytest.mark.parametrize("transport", ["file", "smtp"])
def test_long_and_upper_case_ids_are_quoted_as_written_unencoded_and_whole(tmp_path, smtp_server, transport):
    store = FilesystemStore(tmp_path / "sessions")
    clock = FakeClock("2025-01-14T10:00:00.000Z")
    env = (
        {"ARCHMAX_SMTP_URL": smtp_server.url, "ARCHMAX_MAIL_FROM": "support@example.com"} if transport == "smtp" else {}
    )
    agent = support_agent(store, outbound=dispatcher_from_env(store, env, clock=clock), clock=clock)
    outcome = send_mail(agent, parse_email(exchange_reply()))
    assert outcome.kind == "parked"
    if transport == "smtp":
        ((_, _, raw),) = smtp_server.messages
    else:
        record = store.load(outcome.session_id)
        raw = store.get(outcome.session_id, f"outbox/{record.outbox[0].id}.eml")
    assert_ids_whole(raw, "In-Reply-To", [EXCHANGE_ID])
    assert_ids_whole(raw, "References", [ROOT_ID, EXCHANGE_ID])
    read = email.message_from_bytes(raw, policy=email.policy.default)
    assert str(read["In-Reply-To"]) == EXCHANGE_ID  # what a client reads back, not a rewritten id


def _entry(**fields) -> OutboxEntry:
    base = {
        "version": 3,
        "index": 0,
        "kind": "email",
        "detail_type": "Session Parked",
        "text": "Which order?",
        "to": ["dana.rivers@example.org"],
        "inbox": "support@example.com",
        "subject": "Re: x",
    }
    return OutboxEntry(**{**base, **fields})


def test_a_long_references_chain_folds_only_between_ids():
    chain = [f"<{n:03d}-{'x' * 70}@Host{n}.Example.COM>" for n in range(6)]
    msg = build_reply(
        _entry(in_reply_to=chain[-1].strip("<>"), references=[c.strip("<>") for c in chain]),
        sender="support@example.com",
        message_id="3.0.abc@example.com",
    )
    raw = msg.as_bytes()
    assert_ids_whole(raw, "References", chain)
    assert len(header_lines(raw, "References")) > 1  # it did fold, and only at the spaces between ids


def test_our_lower_cased_key_of_an_id_gives_way_to_the_spelling_the_customer_wrote():
    msg = build_reply(
        _entry(in_reply_to="Dana.1@Example.ORG", references=["Root.A@example.com", "Root.A@Example.COM"]),
        sender="support@example.com",
        message_id="3.0.abc@example.com",
    )
    assert str(msg["References"]) == "<Root.A@Example.COM> <Dana.1@Example.ORG>"
    assert str(msg["In-Reply-To"]) == "<Dana.1@Example.ORG>"


@pytest.mark.parametrize("sender", ["=?utf-8?q?Support_Team?=@example.com", "Support <support@>", "not an address"])
def test_an_invalid_from_is_never_built(sender):
    with pytest.raises(ValueError, match="not an RFC 5322 address"):
        build_reply(_entry(), sender=sender, message_id="3.0.abc@example.com")


def test_short_ids_fold_within_the_line_limit_and_read_back_as_written():
    chain = [f"<{n}.Short@Host.Example.COM>" for n in range(12)]
    msg = build_reply(
        _entry(in_reply_to=chain[-1].strip("<>"), references=[c.strip("<>") for c in chain]),
        sender="support@example.com",
        message_id="3.0.abc@example.com",
    )
    raw = msg.as_bytes()
    lines = header_lines(raw, "References")
    assert len(lines) > 1 and all(len(line) <= 78 for line in lines)  # RFC 5322 §2.1.1's SHOULD
    read = email.message_from_bytes(raw, policy=email.policy.default)
    assert str(read["References"]).split() == chain


def test_an_id_holding_an_encoded_word_is_quoted_byte_for_byte():
    # The stdlib's unstructured header would decode it (to "<café@X.COM>") when set: it is an id, not text.
    written = "=?utf-8?q?caf=C3=A9?=@X.COM"
    msg = build_reply(
        _entry(in_reply_to=written, references=["Root@Example.COM"]),
        sender="support@example.com",
        message_id="3.0.abc@example.com",
    )
    raw = msg.as_bytes()
    assert header_lines(raw, "In-Reply-To") == [f"In-Reply-To: <{written}>"]
    assert header_lines(raw, "References") == [f"References: <Root@Example.COM> <{written}>"]
    assert str(msg["In-Reply-To"]) == f"<{written}>"


@pytest.mark.parametrize("name", ["In-Reply-To", "References"])
def test_a_msg_id_header_refuses_a_line_break_and_a_second_copy(name):
    msg = EmailMessage(policy=POLICY)
    for injected in ("<a@b>\r\nBcc: x@example.org", "<a@b>\nBcc: x@example.org", "<a@b>\rX: y"):
        with pytest.raises(ValueError):
            msg[name] = injected
    assert msg[name] is None
    msg[name] = "<a@b>"
    with pytest.raises(ValueError):
        msg[name] = "<c@d>"
    assert msg.get_all(name) == ["<a@b>"]


def test_the_runtime_uses_no_private_stdlib_email_module():
    """Issue 20: ``email._header_value_parser`` and its kin are CPython internals, free to change."""
    private = []
    for path in sorted((Path(__file__).resolve().parents[3] / "runtime").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            private += [f"{path.name}: {n}" for n in names if n.startswith("email.") and "._" in f".{n}"]
    assert private == []
