"""Three exchanges with a customer thread into ONE thread under the JWZ algorithm (issue 20 items 6, 7, "Done when").

Real parts: public sample mails from ``../shared/samples/emails`` (read in place) as the customer's
first mail, the email adapter, the demo's support-inbox workflow on the filesystem store, the
commit's outbox and the dispatcher writing our replies as ``.eml`` files. The customer's replies
are written as a mail client writes them: ``In-Reply-To`` our Message-ID, ``References`` ours plus
our Message-ID, copied verbatim from the raw headers. The ids are the sample's own, or replaced by
Exchange-Online-style ids longer than a header line with an upper-case domain.
"""

from __future__ import annotations

import email
import re
from pathlib import Path

import pytest

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.inbound.email import parse_email
from archmax.models.scripted import ScriptedModel
from archmax.outbound.config import dispatcher_from_env
from archmax.stores.filesystem import FilesystemStore

from . import jwz
from ._mail import SUPPORT_INBOX, send_mail

# Customer first mails with a sender and a Message-ID (a mail without an id cannot be threaded on).
# Left out: aws-lambda-ses-forwarder__message.txt, whose two Message-ID headers leave the thread to
# whichever one a client reads (the adapter answers the last, DESIGN.md §4; this threader reads the first).
SAMPLES = [
    "talon__android.eml",
    "talon__iphone.eml",
    "talon__yahoo.eml",
    "talon__hotmail.eml",
    "mail__raw_email_reply.eml",  # mid-thread: References of two ids and In-Reply-To
    "mail__empty_in_reply_to.eml",
    "mail__multiple_references_with_one_invalid.eml",
    "notmuch__threading_ghost-root_fake-root.eml",  # In-Reply-To names a message nobody has
    "notmuch__threading_parent-priority_child.eml",  # In-Reply-To and References disagree
    "notmuch__threading_parent-priority_grand-child.eml",  # References newest first
    "mail-parser__mail_test_19",
]
QUESTIONS = ["Which order is this about?", "Which colour was it?", "Shall we send a replacement?"]
SCRIPT = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "more to ask"}}},
    *({"say": q, "call": {"archmax_wait": {"reason": "the customer's answer"}}} for q in QUESTIONS),
]
_MESSAGE_ID = re.compile(rb"(?im)^message-id:[^\n]*\n(?:[ \t][^\n]*\n)*")


def long_id(n: int) -> str:
    """An Exchange Online style id: 110 characters, upper-case domain (issue 20 item 6)."""
    return f"<AM0PR01MB{n:04d}2AB24BBC6F1E4C4DB1F37A5E0C9D2B7E{n:04d}@AM0PR01MB1234.EURPRD01.PROD.EXCHANGELABS.COM>"


def customer_mail(shared_samples: Path, name: str, *, long_ids: bool) -> bytes:
    raw = (shared_samples / "emails" / name).read_bytes().replace(b"\r\n", b"\n")
    if long_ids:  # every Message-ID header of the sample gets one long, upper-case id
        raw = _MESSAGE_ID.sub(f"Message-ID: {long_id(0)}\n".encode(), raw)
    return raw


def client_reply(ours: bytes, n: int, *, long_ids: bool) -> bytes:
    """The customer's reply to our mail, as a mail client threads it: ids copied from the raw headers."""
    msg = email.message_from_bytes(ours)  # compat32: the header text as received

    def raw(name: str) -> str:
        return re.sub(r"\r?\n[ \t]+", " ", msg.get(name, "")).strip()

    own = long_id(n) if long_ids else f"<reply-{n}.CAFE@Mail.Example.ORG>"
    lines = [
        f"From: {raw('To')}",
        f"To: {raw('From')}",
        f"Subject: Re: {raw('Subject')}",
        f"Message-ID: {own}",
        f"In-Reply-To: {raw('Message-ID')}",
        f"References: {raw('References')} {raw('Message-ID')}".replace("References:  ", "References: "),
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "",
        f"Answer number {n}.",
        "",
    ]
    return "\r\n".join(lines).encode("utf-8")


@pytest.mark.parametrize("long_ids", [False, True], ids=["sample-ids", "long-upper-case-ids"])
@pytest.mark.parametrize("name", SAMPLES)
def test_three_exchanges_with_a_customer_thread_into_one_jwz_thread(shared_samples, tmp_path, name, long_ids):
    if not (shared_samples / "emails" / name).is_file():
        pytest.skip(f"{name} is not among the samples")
    store = FilesystemStore(tmp_path / "sessions")
    clock = FakeClock("2025-01-14T10:00:00.000Z")
    agent = create_agent(
        SUPPORT_INBOX, store, ScriptedModel(SCRIPT), clock=clock, outbound=dispatcher_from_env(store, {}, clock=clock)
    )
    conversation: list[bytes] = []
    incoming = customer_mail(shared_samples, name, long_ids=long_ids)
    for n in range(1, 4):
        conversation.append(incoming)
        outcome = send_mail(agent, parse_email(incoming))
        assert outcome.kind == "parked", f"exchange {n}: {outcome}"
        record = store.load(outcome.session_id)
        mail = [e for e in record.outbox if e.kind == "email"][-1]
        ours = store.get(outcome.session_id, f"outbox/{mail.id}.eml")
        assert QUESTIONS[n - 1].encode() in ours
        headers = email.message_from_bytes(ours)
        assert "=?" not in headers["In-Reply-To"] + headers["References"]  # ids, never encoded-words
        conversation.append(ours)
        incoming = client_reply(ours, n, long_ids=long_ids)

    roots = jwz.thread(conversation)
    assert len(roots) == 1, f"{len(roots)} threads: the conversation split"
    assert sorted(jwz.messages_in(roots[0])) == sorted(conversation)
