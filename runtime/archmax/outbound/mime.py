"""The reply mail as raw MIME, built with the standard library's ``email`` package.

Rule source: issue 12 item 2: ``From`` the inbox address, ``To`` the sender, ``Subject: Re: ...``,
``In-Reply-To`` the customer's Message-ID, ``References`` the chain, a ``Message-ID`` of our own,
and a ``Reply-To`` of the form ``<local>+<token>@<domain>`` when a reply secret is configured.

Every header value comes from untrusted mail (subject, addresses, ids): the ``email`` package's
``default`` policy refuses a header value holding CR or LF, and ids are re-normalised here, so
nothing a customer wrote can add a header.
"""

from __future__ import annotations

import email.policy
import email.utils
import hashlib
from datetime import datetime
from email.message import EmailMessage

from archmax.inbound.email_ids import normalise_message_id
from archmax.session.records import OutboxEntry

MAX_REFERENCES = 20
"""References keeps the thread root and the newest ids (RFC 5322 §3.6.4 lets a long chain be cut)."""


def our_message_id(session_id: str, created_at: str, entry: OutboxEntry, domain: str) -> str:
    """The Message-ID we send an entry under, without brackets: the same for every attempt.

    ``<version>.<index>.<first 20 hex of sha256(session id, created_at)>@<domain>``: stable across a
    resend (so a duplicate in the documented window carries the same id, which mail clients collapse),
    distinct for a session deleted and started again under the same id, and free of the session id
    itself (which may hold characters a Message-ID cannot).

    Args:
        session_id: The session.
        created_at: The session's ``created_at`` (its first commit).
        entry: The outbox entry.
        domain: The domain of our ``From`` address.
    """
    digest = hashlib.sha256(f"{session_id}\0{created_at}".encode()).hexdigest()[:20]
    return f"{entry.version}.{entry.index}.{digest}@{domain.lower()}"


def domain_of(address: str) -> str:
    """The domain of ``Name <local@domain>`` or ``local@domain`` (``localhost`` when there is none)."""
    _, addr = email.utils.parseaddr(address)
    domain = addr.rpartition("@")[2]
    return domain or "localhost"


def build_reply(
    entry: OutboxEntry,
    *,
    sender: str,
    message_id: str,
    reply_to: str | None = None,
    date: datetime | None = None,
) -> EmailMessage:
    """The threaded reply of an ``email`` outbox entry.

    Args:
        entry: The entry (``to``, ``cc``, ``subject``, ``in_reply_to``, ``references``, ``text``).
        sender: Our ``From`` (the inbox address, ``Name <addr>`` allowed).
        message_id: Our Message-ID, without brackets (:func:`our_message_id`).
        reply_to: ``<local>+<token>@<domain>``, or ``None`` to leave ``Reply-To`` out.
        date: The ``Date`` header's instant (timezone-aware); now when ``None``.

    Returns:
        A single-part ``text/plain; charset=utf-8`` message; ``bytes(msg)`` is the raw MIME.

    Raises:
        ValueError: an entry that is not an email, has no recipient, or a header the policy refuses.
    """
    if entry.kind != "email" or not entry.to:
        raise ValueError(f"outbox entry {entry.id} is not an email with a recipient")
    msg = EmailMessage(policy=email.policy.SMTP)
    msg["From"] = sender
    msg["To"] = ", ".join(entry.to)
    if entry.cc:
        msg["Cc"] = ", ".join(entry.cc)
    if reply_to:
        msg["Reply-To"] = reply_to
    msg["Subject"] = entry.subject or "Re: your message"
    msg["Date"] = email.utils.format_datetime(date) if date else email.utils.formatdate(localtime=False)
    msg["Message-ID"] = f"<{message_id}>"
    parent = normalise_message_id(entry.in_reply_to) if entry.in_reply_to else None
    if parent:
        msg["In-Reply-To"] = f"<{parent}>"
    chain = [i for i in (normalise_message_id(r) for r in entry.references) if i]
    if len(chain) > MAX_REFERENCES:
        chain = chain[:1] + chain[-(MAX_REFERENCES - 1) :]
    if chain:
        msg["References"] = " ".join(f"<{i}>" for i in chain)
    msg["Auto-Submitted"] = "auto-replied"  # RFC 3834: other robots must not answer it
    msg.set_content(entry.text, charset="utf-8")
    return msg
