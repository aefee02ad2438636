"""The reply mail as raw MIME, built with the standard library's ``email`` package.

Rule source: issue 12 item 2: ``From`` the inbox address, ``To`` the sender, ``Subject: Re: ...``,
``In-Reply-To`` the customer's Message-ID, ``References`` the chain, a ``Message-ID`` of our own,
and a ``Reply-To`` of the form ``<local>+<token>@<domain>`` when a reply secret is configured.

Every header value comes from untrusted mail (subject, addresses, ids): the ``email`` package's
``default`` policy refuses a header value holding CR or LF, ids are re-checked here, and addresses
must be RFC 5322 addr-specs, so nothing a customer wrote can add a header or make an invalid From.

Threading headers (issue 20 items 6 and 7): ``In-Reply-To`` and ``References`` quote each id as
the customer's client wrote it (normalised ids are keys, never header text), are never
RFC 2047-encoded and are folded only between ids. The stdlib registers them as unstructured text,
which it encodes when an id is longer than a line (Exchange Online, Mailchimp and IBM Notes ids
are); :class:`MessageIDListHeader` registers them as msg-id lists instead.
"""

from __future__ import annotations

import email.policy
import email.utils
import hashlib
from datetime import datetime
from email import _header_value_parser as parser
from email import errors
from email.headerregistry import HeaderRegistry
from email.message import EmailMessage
from typing import Any

from archmax.inbound.addresses import usable_address
from archmax.inbound.email_ids import message_id_as_written, normalise_message_id
from archmax.session.records import OutboxEntry

MAX_REFERENCES = 20
"""References keeps the thread root and the newest ids (RFC 5322 §3.6.4 lets a long chain be cut)."""


class _MessageIDToken(parser.ValueTerminal):
    """One ``<id>``: a word the folder may move to a new line but never encodes or splits."""

    as_ew_allowed = False


def _msg_id(word: str) -> parser.TokenList | _MessageIDToken:
    """``<id>`` as the stdlib's msg-id token (the one ``MessageIDHeader`` uses), else as one word.

    The msg-id token keeps a long id on the header name's line; an id its parser reads differently
    (an obsolete or sloppy form a client sent) is kept whole as one unencodable word instead.
    """
    try:
        token, rest = parser.get_msg_id(word)
    except errors.HeaderParseError:
        return _MessageIDToken(word, "msg-id")
    return token if not rest and str(token) == word else _MessageIDToken(word, "msg-id")


class _MessageIDs(parser.TokenList):
    token_type = "msg-id-list"


class MessageIDListHeader:
    """``In-Reply-To`` / ``References`` as 1*msg-id (RFC 5322 §3.6.4) for ``email.headerregistry``.

    The value is ``<id> <id> ...`` built by :func:`build_reply` from checked ids (no whitespace,
    brackets or control characters inside one); the parse tree is one unencodable word per id, so
    the policy's folder breaks lines only at the spaces between ids.
    """

    max_count = 1

    @classmethod
    def parse(cls, value: str, kwds: dict[str, Any]) -> None:
        """Fill ``kwds`` (the registry's protocol) with the parse tree and the decoded value of ``value``."""
        tree = _MessageIDs()
        for n, word in enumerate(value.split()):
            if n:
                tree.append(parser.WhiteSpaceTerminal(" ", "fws"))
            tree.append(_msg_id(word))
        kwds["parse_tree"] = tree
        kwds["decoded"] = str(tree)


def _registry() -> HeaderRegistry:
    registry = HeaderRegistry()
    # The registry mixes BaseHeader into the class itself (email.headerregistry's header protocol).
    registry.map_to_type("in-reply-to", MessageIDListHeader)  # type: ignore[arg-type]
    registry.map_to_type("references", MessageIDListHeader)  # type: ignore[arg-type]
    return registry


POLICY = email.policy.SMTP.clone(header_factory=_registry())
"""``SMTP`` (CRLF, RFC 5322 headers) with msg-id lists that are never encoded."""


def quotable_ids(ids: list[str]) -> list[str]:
    """The ids a threading header can quote, each once, as written.

    An id is left out when it is unusable (:func:`normalise_message_id`) or not printable ASCII (a
    header of ids is never encoded). Two ids with one key (the same id, its domain's case aside)
    are one: the one written differently from its key is kept (it is the customer's spelling; the
    other is our lower-cased key of it), at the first one's place.
    """
    kept: dict[str, str] = {}
    for raw in ids:
        written = message_id_as_written(raw) if isinstance(raw, str) else None
        if written is None or not written.isascii() or not written.isprintable():
            continue
        key = normalise_message_id(written) or written  # always an id: message_id_as_written checked it
        if key not in kept or kept[key] == key:
            kept[key] = written
    return list(kept.values())


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
        ValueError: an entry that is not an email, has no recipient, a ``From`` or recipient that is
            not an RFC 5322 address (issue 20 item 11), or a header the policy refuses.
    """
    if entry.kind != "email" or not entry.to:
        raise ValueError(f"outbox entry {entry.id} is not an email with a recipient")
    for role, address in (("From", sender), *(("recipient", a) for a in [*entry.to, *entry.cc])):
        if not usable_address(email.utils.parseaddr(address)[1]):
            raise ValueError(f"outbox entry {entry.id}: {role} {address!r} is not an RFC 5322 address")
    msg = EmailMessage(policy=POLICY)
    msg["From"] = sender
    msg["To"] = ", ".join(entry.to)
    if entry.cc:
        msg["Cc"] = ", ".join(entry.cc)
    if reply_to:
        msg["Reply-To"] = reply_to
    msg["Subject"] = entry.subject or "Re: your message"
    msg["Date"] = email.utils.format_datetime(date) if date else email.utils.formatdate(localtime=False)
    msg["Message-ID"] = f"<{message_id}>"
    chain = quotable_ids([*entry.references, *([entry.in_reply_to] if entry.in_reply_to else [])])
    parent_key = normalise_message_id(entry.in_reply_to) if entry.in_reply_to else None
    parent = [i for i in chain if normalise_message_id(i) == parent_key]
    if parent:
        msg["In-Reply-To"] = f"<{parent[0]}>"
        chain = [i for i in chain if i not in parent] + parent  # RFC 5322 §3.6.4: the parent ends the chain
    if len(chain) > MAX_REFERENCES:
        chain = chain[:1] + chain[-(MAX_REFERENCES - 1) :]
    if chain:
        msg["References"] = " ".join(f"<{i}>" for i in chain)
    msg["Auto-Submitted"] = "auto-replied"  # RFC 3834: other robots must not answer it
    msg.set_content(entry.text, charset="utf-8")
    return msg
