"""The dispatcher: sends a committed record's outbox entries, each once, and records each result once.

Rule source: DESIGN.md §3 "The change stream" (sending starts from the commit, idempotently by
outbox id) and issue 12 item 1. One dispatcher serves both hosts: in-process after each operation
locally, and from the sessions table's stream on AWS (:mod:`archmax.handlers.outbound`).

Per entry, in order:

1. an entry whose result record ``outbox/<id>.sent.json`` exists was sent: skip it;
2. an email gets our Message-ID (stable across attempts) and it is recorded as an alias of the
   session *before* the send, so a reply that comes back at once threads;
3. the transport sends (mail) or puts (event);
4. the ids the provider sent under (SES's) are recorded as aliases, then the result record is
   written create-only: a send records its result once.

The one duplicate window: a crash after step 3 and before step 4's record. The next attempt sends
again, under the same Message-ID (mail clients show one message). The ``.eml`` file transport has
no such window: its file is its own create-only record.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from archmax.clock import Clock, SystemClock, format_instant
from archmax.errors import OutboundError, PathExistsError
from archmax.outbound.aliases import AliasIndex
from archmax.outbound.mime import build_reply, domain_of, our_message_id
from archmax.outbound.transports import Delivery, Mailer, Publisher, session_path
from archmax.session.records import Checkpoint, OutboxEntry

ReplyTo = Callable[[str, str], str | None]
"""``(our address, session id) -> Reply-To address or None`` (the signed ``<local>+<token>@<domain>``)."""


class Sent(BaseModel):
    """The result record of one outbox entry (``outbox/<entry id>.sent.json``), written once."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_id: str
    id: str
    """The entry id (``<version>-<index>``)."""
    kind: str
    """``email`` or ``event``."""
    detail_type: str
    transport: str
    """``smtp``, ``file``, ``ses``, ``eventbridge``."""
    where: str
    """Where it went: a file path, ``smtp://host:port``, ``ses:<region>``, the bus."""
    to: list[str] = Field(default_factory=list)
    message_id: str | None = None
    """Email: our Message-ID (no brackets)."""
    provider_id: str | None = None
    """SES ``MessageId`` or EventBridge ``EventId``."""
    sent_at: str


def sent_path(entry: OutboxEntry) -> str:
    """The result record's path in the session folder."""
    return f"outbox/{entry.id}.sent.json"


class Dispatcher:
    """Sends outbox entries through a mailer and a publisher.

    Args:
        store: The session store (result records are session files; ``.eml``/event files too).
        mailer: Where mail goes.
        publisher: Where lifecycle events go.
        aliases: Where the ids we send under are recorded.
        sender: Our ``From`` (``ARCHMAX_MAIL_FROM``); ``None`` answers from the address the person wrote to.
        reply_to: Builds the signed ``Reply-To``; ``None`` leaves the header out.
        clock: For ``Date`` and ``sent_at``.
    """

    def __init__(
        self,
        store: Any,
        *,
        mailer: Mailer,
        publisher: Publisher,
        aliases: AliasIndex,
        sender: str | None = None,
        reply_to: ReplyTo | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.mailer = mailer
        self.publisher = publisher
        self.aliases = aliases
        self.sender = sender
        self.reply_to = reply_to
        self.clock = clock or SystemClock()

    def sent(self, session_id: str, entry: OutboxEntry) -> Sent | None:
        """The result record of ``entry``, or ``None`` while it is unsent."""
        data = self.store.get(session_id, sent_path(entry))
        return Sent.model_validate_json(data) if data is not None else None

    def dispatch(self, record: Checkpoint, *, versions: Iterable[int] | None = None) -> list[Sent]:
        """Send every unsent entry of ``record.outbox`` (only those of ``versions`` when given), oldest first.

        Args:
            record: A committed record (the dispatcher never commits it).
            versions: The committed versions whose entries to send (a stream record names one).

        Returns:
            The results recorded by this call (entries sent before are skipped, not returned).

        Raises:
            OutboundError: a transport refused an entry; the ones before it stay sent, it and the
                ones after it stay unsent for the next attempt.
            StoreError: the store failed reading or recording a result.
        """
        wanted = set(versions) if versions is not None else None
        done: list[Sent] = []
        for entry in record.outbox:
            if wanted is not None and entry.version not in wanted:
                continue
            if self.sent(record.session_id, entry) is not None:
                continue
            delivery, message_id = self._send(record, entry)
            result = Sent(
                session_id=record.session_id,
                id=entry.id,
                kind=entry.kind,
                detail_type=entry.detail_type,
                transport=delivery.transport,
                where=delivery.where,
                to=[*entry.to, *entry.cc],
                message_id=message_id,
                provider_id=delivery.provider_id,
                sent_at=format_instant(self.clock.now()),
            )
            try:
                self.store.seed(
                    record.session_id, {sent_path(entry): result.model_dump_json(indent=2) + "\n"}, create_only=True
                )
            except PathExistsError:
                continue  # another dispatcher recorded it first: its record stands
            done.append(result)
        return done

    def _send(self, record: Checkpoint, entry: OutboxEntry) -> tuple[Delivery, str | None]:
        if entry.kind == "event":
            return self.publisher.publish(record.session_id, entry), None
        sender = self.sender or entry.inbox
        if not sender:
            raise OutboundError(
                f"outbox entry {entry.id} of session '{record.session_id}' has no From address: set ARCHMAX_MAIL_FROM",
                session_id=record.session_id,
            )
        sid = record.session_id
        message_id = our_message_id(sid, record.created_at, entry, domain_of(sender))
        self.aliases.put(message_id, sid)  # before the send: the reply may be back before we return
        address = email.utils.parseaddr(sender)[1]
        msg = build_reply(
            entry,
            sender=sender,
            message_id=message_id,
            reply_to=self.reply_to(address, sid) if self.reply_to else None,
            date=self.clock.now(),
        )
        delivery = self.mailer.send(msg, sid, entry)
        for alias in delivery.aliases:
            self.aliases.put(alias, sid)
        return delivery, message_id


def describe(sent: Sent, store: Any = None) -> str:
    """One line for a person: what was sent and where (``archmax run``/``email`` print these)."""
    if sent.kind == "email":
        what = f"mail to {', '.join(sent.to)} <{sent.message_id}>"
    else:
        what = f"event '{sent.detail_type}'"
    via = sent.where if sent.transport in ("file", "smtp") else f"{sent.transport} {sent.where}"
    if sent.provider_id:
        via += f" (id {sent.provider_id})"
    return f"sent: {what} -> {via}"


__all__ = ["Dispatcher", "ReplyTo", "Sent", "describe", "sent_path", "session_path"]
