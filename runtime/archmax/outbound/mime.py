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
are); :class:`ReplyPolicy` keeps them as raw msg-id lists instead, through public ``email.policy``
hooks only (no private stdlib module).
"""

from __future__ import annotations

import email.policy
import email.utils
import hashlib
from datetime import datetime
from email.message import EmailMessage
from typing import Any

from archmax.inbound.addresses import usable_address
from archmax.inbound.email_ids import message_id_as_written, normalise_message_id
from archmax.session.records import OutboxEntry

MAX_REFERENCES = 20
"""References keeps the thread root and the newest ids (RFC 5322 §3.6.4 lets a long chain be cut)."""


MSG_ID_LISTS = frozenset({"in-reply-to", "references"})
"""The headers that are 1*msg-id (RFC 5322 §3.6.4) and so are kept as raw text by :data:`POLICY`."""


def fold_msg_ids(name: str, value: str, *, max_line_length: int | None, linesep: str) -> str | None:
    """``name: <id> <id> ...`` folded only at the whitespace between ids, or None for a non-ASCII value.

    Each id stays whole on one physical line (the first one on the header name's line, however long:
    RFC 5322 §2.1.1 allows up to 998 characters and ids are at most 512 bytes); a new line starts
    before an id that would take the line past ``max_line_length`` (``None`` or 0: never). Nothing is
    RFC 2047-encoded. Unfolding the result gives back ``value``'s words joined by single spaces.

    Args:
        name: The header name as it is to be written.
        value: The header's text (``<id>`` words separated by whitespace, as stored or parsed).
        max_line_length: The policy's line limit in characters.
        linesep: The policy's line separator (CRLF for SMTP).

    Returns:
        The folded header ending in ``linesep``; None when ``value`` is not printable ASCII text.
    """
    words = value.split()
    if not all(w.isascii() and w.isprintable() for w in words):
        return None
    limit = max_line_length or None
    lines = [f"{name}:"]
    for n, word in enumerate(words):
        if n and limit is not None and len(lines[-1]) + 1 + len(word) > limit:
            lines.append("")
        lines[-1] += f" {word}"
    return linesep.join(lines) + linesep


class ReplyPolicy(email.policy.EmailPolicy):
    """``EmailPolicy`` that keeps In-Reply-To and References as raw msg-id lists (issue 20 items 6, 7).

    The stdlib registers both as unstructured text, which decodes an encoded-word written inside an
    id when the header is set and RFC 2047-encodes an id longer than a line when it is written. Here
    they are stored and read back verbatim (a plain ``str``, as ``compat32`` does; CR and LF are
    refused, as for every other header) and written by :func:`fold_msg_ids`. Every other header is
    ``EmailPolicy``'s. Only the documented ``email.policy.Policy`` methods are overridden: the stdlib
    has no public msg-id-list header class (``email.headerregistry`` builds its headers on the
    private ``email._header_value_parser``).
    """

    def header_max_count(self, name: str) -> int | None:
        """1 for a msg-id list (RFC 5322 §3.6: at most one of each), else ``EmailPolicy``'s."""
        return 1 if name.lower() in MSG_ID_LISTS else super().header_max_count(name)

    def header_store_parse(self, name: str, value: Any) -> tuple[str, Any]:
        """``(name, value)`` with a msg-id list's value kept as given text.

        Raises:
            ValueError: a value holding CR, LF or another line boundary (it could add a header).
        """
        if name.lower() not in MSG_ID_LISTS:
            return super().header_store_parse(name, value)
        text = str(value)
        if text != "".join(text.splitlines()):
            raise ValueError("Header values may not contain linefeed or carriage return characters")
        return name, text

    def header_fetch_parse(self, name: str, value: str) -> Any:
        """A msg-id list's stored text, unfolded (a header read from source may span lines)."""
        if name.lower() not in MSG_ID_LISTS:
            return super().header_fetch_parse(name, value)
        return "".join(str(value).splitlines())

    def fold(self, name: str, value: str) -> str:
        """A msg-id list folded by :func:`fold_msg_ids`; other headers (and non-ASCII lists) as ``EmailPolicy``."""
        folded = self._fold_ids(name, value)
        return folded if folded is not None else super().fold(name, value)

    def fold_binary(self, name: str, value: str) -> bytes:
        """:meth:`fold` as ASCII bytes for a msg-id list; other headers as ``EmailPolicy``."""
        folded = self._fold_ids(name, value)
        return folded.encode("ascii") if folded is not None else super().fold_binary(name, value)

    def _fold_ids(self, name: str, value: str) -> str | None:
        if name.lower() not in MSG_ID_LISTS:
            return None
        return fold_msg_ids(name, str(value), max_line_length=self.max_line_length, linesep=self.linesep)


POLICY = ReplyPolicy(linesep="\r\n")
"""``email.policy.SMTP`` (CRLF, RFC 5322 headers) whose msg-id lists are never encoded nor split."""


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
