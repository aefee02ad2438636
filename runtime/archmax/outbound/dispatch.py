"""The dispatcher: sends a committed record's outbox entries, each once, and records each result once.

Rule source: DESIGN.md §3 "The change stream" (sending starts from the commit, idempotently by
outbox id), issue 12 item 1 and issue 20 items 1-3 and 5. One dispatcher serves every host: in-process
after each operation locally, from the sessions table's stream on AWS (:mod:`archmax.handlers.outbound`),
and from the sweep for whatever neither sent (:func:`archmax.hosting.sweep.send_outbox`).

Per entry, in order (every fact kept by the store's outbox-state members, :class:`~archmax.stores.base.SessionStore`
``outbox_claim`` ...: create-only files under ``outbox/`` by default, one DynamoDB item per entry on AWS):

1. **claim** it (``store.outbox_claim``): one sender at a time. An entry already sent or failed for
   good is settled: skip it. Of two live senders (a ``reply`` whose SMTP server holds its DATA and a
   ``decide`` dispatching the same outbox) one gets the claim; the other skips the entry. A claim
   whose holder died is taken over once it expires (``CLAIM_TTL_S``);
2. an email gets our Message-ID (stable across attempts), recorded as an alias of the session before
   the send, so a reply that comes back at once threads;
3. the transport sends (mail) or puts (event);
4. the ids the provider sent under (SES's) are recorded as aliases, then the sent record, once
   (``store.outbox_record``). A send that failed releases its claim (a next claim at once) and the
   entries after it are still sent; one no retry can send (:class:`~archmax.errors.UnsendableError`)
   gets a failed record instead.

The one duplicate window: a crash after step 3 and before step 4's record. The entry's claim then
holds it for ``CLAIM_TTL_S``; after that the sweep takes it over and sends again, under the same
Message-ID (mail clients show one message). The ``.eml`` file transport has no such window: its file
is its own create-only record.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from archmax.clock import Clock, SystemClock, format_instant
from archmax.errors import ArchmaxError, OutboundError, UnsendableError
from archmax.outbound.aliases import AliasIndex
from archmax.outbound.mime import build_reply, domain_of, our_message_id
from archmax.outbound.outbox import failed_path, sent_path
from archmax.outbound.transports import Delivery, Mailer, Publisher, session_path
from archmax.session.records import Checkpoint, OutboxEntry
from archmax.stores.base import OutboxClaim, OutboxOutcome

log = logging.getLogger("archmax.outbound")

CLAIM_TTL_S = 300
"""Seconds a claim holds its entry (issue 20 item 3): well beyond a send's longest wait (the SMTP
timeout is 30 s), so a live sender is never overtaken; a claim whose holder died is taken over after it."""

SETTLED_SESSIONS = 1024
"""Sessions whose settled entries a dispatcher remembers (least recently dispatched forgotten first)."""

ReplyTo = Callable[[str, str, int | None], str | None]
"""``(our address, session id, park version) -> Reply-To address or None`` (the signed ``<local>+<token>@<domain>``;
the park version is the entry's ``park_version``: the park the mail asks its question at, signed in, §5.11)."""


class Sent(BaseModel):
    """The result record of one outbox entry, written once (``store.outbox_record``; read by ``store.outbox_result``)."""

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


class Failed(BaseModel):
    """The record that an outbox entry can never be sent (``outbox/<entry id>.failed.json``), written once."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_id: str
    id: str
    kind: str
    detail_type: str
    reason: str
    failed_at: str


class DispatchError(OutboundError):
    """Some entries of a dispatch were not sent; the others were (issue 20 item 5).

    Attributes:
        sent: The results recorded by this dispatch.
        errors: ``(entry id, error)`` for each entry not sent.
    """

    def __init__(self, session_id: str, sent: list[Sent], errors: list[tuple[str, ArchmaxError]]) -> None:
        self.sent = sent
        self.errors = errors
        what = "; ".join(f"{entry_id}: {exc}" for entry_id, exc in errors)
        super().__init__(f"outbox entries of session '{session_id}' not sent: {what}", session_id=session_id)

    @property
    def unsendable(self) -> bool:
        """Whether every entry not sent can never be sent (nothing a retry could change)."""
        return all(isinstance(exc, UnsendableError) for _, exc in self.errors)


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
        self._settled: OrderedDict[tuple[str, str], set[str]] = OrderedDict()
        self._settled_lock = threading.Lock()

    def sent(self, record: Checkpoint, entry: OutboxEntry) -> Sent | None:
        """The result record of ``entry`` (of ``record``'s session), or ``None`` while it is unsent."""
        data = self.store.outbox_result(record.session_id, entry.id, created_at=record.created_at)
        return Sent.model_validate_json(data) if data is not None else None

    def dispatch(self, record: Checkpoint, *, versions: Iterable[int] | None = None) -> list[Sent]:
        """Send every unsettled entry of ``record.outbox`` (only those of ``versions`` when given), oldest first.

        An entry another sender holds a live claim on is left to it. A failed entry does not stop
        the ones after it (a lifecycle event is put even when its mail cannot be sent).

        Args:
            record: A committed record (the dispatcher never commits it).
            versions: The committed versions whose entries to send (a stream record names one). An
                entry of these versions already recorded failed is reported again (raises), so the
                stream record is retried and reaches the DLQ as any failed send does.

        Returns:
            The results recorded by this call (entries sent before are skipped, not returned).

        Raises:
            DispatchError: some entries were not sent (``.sent`` holds those that were; entries that
                failed for a reason a retry can change stay unsettled for the next attempt).
            StoreError: the store failed claiming an entry, recording a result or answering which are settled.
        """
        if not record.outbox:
            return []
        wanted = set(versions) if versions is not None else None
        entries = [e for e in record.outbox if wanted is None or e.version in wanted]
        done: list[Sent] = []
        settled: set[str] = set()
        held = False
        errors: list[tuple[str, ArchmaxError]] = []
        for entry in entries:
            try:
                result = self._claimed_send(record, entry)
            except UnsendableError as exc:
                self._record_failed(record, entry, exc)
                errors.append((entry.id, exc))
                continue
            except OutboundError as exc:
                errors.append((entry.id, exc))
                continue
            if isinstance(result, Sent):
                done.append(result)
            elif result == OutboxClaim.HELD:
                held = True
                continue
            elif result == OutboxClaim.FAILED and wanted is not None:
                errors.append((entry.id, UnsendableError(f"outbox entry {entry.id} was recorded as unsendable")))
            settled.add(entry.id)
        if errors:
            raise DispatchError(record.session_id, done, errors)
        if not held:
            self._settle(record, settled)
        return done

    def _settle(self, record: Checkpoint, settled: set[str]) -> None:
        """Clear the session's outbox mark once every entry of ``record`` is known sent (or failed for good).

        ``settled``: the entries this dispatch found or made settled. The others are asked of the
        store (one read) unless this dispatcher saw them settled before (settled is for good, so
        what it learnt stays true: a warm outbound container asks only about entries it never saw
        settle); an entry not known settled keeps the mark for the sweep.
        """
        sid, life = record.session_id, (record.session_id, record.created_at)
        known = self._learn(life, settled)
        others = [entry.id for entry in record.outbox if entry.id not in known]
        if others:
            answered = self.store.outbox_outcomes(sid, others, created_at=record.created_at)
            self._learn(life, set(answered))
            if len(answered) < len(set(others)):
                return
        self.store.outbox_settled(sid, record.version, created_at=record.created_at)

    def _learn(self, life: tuple[str, str], settled: set[str]) -> set[str]:
        """Remember ``settled`` entries of one session's life (id, created_at); returns all it knows settled."""
        with self._settled_lock:
            known = self._settled.setdefault(life, set())
            known |= settled
            self._settled.move_to_end(life)
            while len(self._settled) > SETTLED_SESSIONS:
                self._settled.popitem(last=False)
            return set(known)

    def _claimed_send(self, record: Checkpoint, entry: OutboxEntry) -> Sent | OutboxClaim:
        """Claim, send and record one entry: its :class:`Sent`, or what the claim found (settled, or held).

        Raises:
            UnsendableError / OutboundError: the send failed (the claim was released).
            StoreError: the store failed.
        """
        sid = record.session_id
        owner = uuid.uuid4().hex
        now = self.clock.now()
        claimed = self.store.outbox_claim(
            sid,
            entry.id,
            created_at=record.created_at,
            owner=owner,
            now=format_instant(now),
            until=format_instant(now + timedelta(seconds=CLAIM_TTL_S)),
        )
        if claimed != OutboxClaim.CLAIMED:
            return OutboxClaim(claimed)
        try:
            delivery, message_id = self._send(record, entry)
        except OutboundError:
            self._release(record, entry, owner)
            raise
        except ValueError as exc:  # the mail format refuses a header: no retry changes that
            self._release(record, entry, owner)
            raise UnsendableError(f"outbox entry {entry.id} cannot be mailed: {exc}", session_id=sid) from exc
        result = Sent(
            session_id=sid,
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
        body = result.model_dump_json(indent=2) + "\n"
        if not self.store.outbox_record(sid, entry.id, OutboxOutcome.SENT, body, created_at=record.created_at):
            return OutboxClaim.SENT  # another dispatcher recorded it first: its record stands
        return result

    def _release(self, record: Checkpoint, entry: OutboxEntry, owner: str) -> None:
        """Let the entry go at once after a failed send; best effort: the claim's TTL frees it anyway."""
        now = format_instant(self.clock.now())
        try:
            self.store.outbox_release(record.session_id, entry.id, created_at=record.created_at, owner=owner, now=now)
        except Exception as exc:  # noqa: BLE001 - the claim expires on its own
            log.warning("claim on outbox entry %s of session %r not released: %s", entry.id, record.session_id, exc)

    def _record_failed(self, record: Checkpoint, entry: OutboxEntry, exc: UnsendableError) -> None:
        """Record the entry failed for good (once): no sender tries it again."""
        failed = Failed(
            session_id=record.session_id,
            id=entry.id,
            kind=entry.kind,
            detail_type=entry.detail_type,
            reason=str(exc),
            failed_at=format_instant(self.clock.now()),
        )
        body = failed.model_dump_json(indent=2) + "\n"
        self.store.outbox_record(record.session_id, entry.id, OutboxOutcome.FAILED, body, created_at=record.created_at)

    def _send(self, record: Checkpoint, entry: OutboxEntry) -> tuple[Delivery, str | None]:
        if entry.kind == "event":
            return self.publisher.publish(record.session_id, entry), None
        sender = self.sender or entry.inbox
        if not sender:
            raise UnsendableError(
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
            reply_to=self.reply_to(address, sid, entry.park_version) if self.reply_to else None,
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


__all__ = [
    "CLAIM_TTL_S",
    "DispatchError",
    "Dispatcher",
    "Failed",
    "ReplyTo",
    "Sent",
    "describe",
    "failed_path",
    "sent_path",
    "session_path",
]
