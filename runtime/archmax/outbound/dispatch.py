"""The dispatcher: sends a committed record's outbox entries, each once, and records each result once.

Rule source: DESIGN.md §3 "The change stream" (sending starts from the commit, idempotently by
outbox id), issue 12 item 1 and issue 20 items 1-3 and 5. One dispatcher serves every host: in-process
after each operation locally, from the sessions table's stream on AWS (:mod:`archmax.handlers.outbound`),
and from the sweep for whatever neither sent (:func:`archmax.hosting.sweep.send_outbox`).

Per entry, in order (every fact a create-only file under ``outbox/``, :mod:`archmax.outbound.settled`):

1. an entry with a sent or failed record is settled: skip it;
2. **claim** it: create ``outbox/<id>.claim-<n>.json`` (``n`` one past the last claim, which must
   be released or expired). Of two live senders (a ``reply`` whose SMTP server holds its DATA and a
   ``decide`` dispatching the same outbox) one creates the claim; the other skips the entry;
3. an email gets our Message-ID (stable across attempts), recorded as an alias of the session before
   the send, so a reply that comes back at once threads;
4. the transport sends (mail) or puts (event);
5. the ids the provider sent under (SES's) are recorded as aliases, then the sent record is written
   create-only. A send that failed releases its claim (a next claim at once) and the entries after
   it are still sent; one no retry can send (:class:`~archmax.errors.UnsendableError`) gets a failed
   record instead.

The one duplicate window: a crash after step 4 and before step 5's record. The entry's claim then
holds it for ``CLAIM_TTL_S``; after that the sweep takes it over and sends again, under the same
Message-ID (mail clients show one message). The ``.eml`` file transport has no such window: its file
is its own create-only record.
"""

from __future__ import annotations

import email.utils
import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from archmax.clock import Clock, SystemClock, format_instant
from archmax.errors import ArchmaxError, OutboundError, PathExistsError, UnsendableError
from archmax.outbound.aliases import AliasIndex
from archmax.outbound.mime import build_reply, domain_of, our_message_id
from archmax.outbound.outbox import failed_path, sent_path
from archmax.outbound.settled import OutboxFiles, claim_path
from archmax.outbound.transports import Delivery, Mailer, Publisher, session_path
from archmax.session.records import Checkpoint, OutboxEntry

log = logging.getLogger("archmax.outbound")

CLAIM_TTL_S = 300
"""Seconds a claim holds its entry (issue 20 item 3): well beyond a send's longest wait (the SMTP
timeout is 30 s), so a live sender is never overtaken; a claim whose holder died is taken over after it."""

ReplyTo = Callable[[str, str, int | None], str | None]
"""``(our address, session id, park version) -> Reply-To address or None`` (the signed ``<local>+<token>@<domain>``;
the park version is the entry's ``park_version``: the park the mail asks its question at, signed in, §5.11)."""


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


class Failed(BaseModel):
    """The record that an outbox entry can never be sent (``outbox/<entry id>.failed.json``), written once."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_id: str
    id: str
    kind: str
    detail_type: str
    reason: str
    failed_at: str


class Claim(BaseModel):
    """A sender's claim on an entry (``outbox/<entry id>.claim-<n>.json``): it alone sends until ``expires_at``."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    owner: str
    expires_at: str
    released: bool = False
    """A sender that failed lets the entry go at once: the next claim may be made now."""


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

    def sent(self, session_id: str, entry: OutboxEntry) -> Sent | None:
        """The result record of ``entry``, or ``None`` while it is unsent."""
        data = self.store.get(session_id, sent_path(entry))
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
            StoreError: the store failed listing the outbox folder or recording a result.
        """
        if not record.outbox:
            return []
        wanted = set(versions) if versions is not None else None
        entries = [e for e in record.outbox if wanted is None or e.version in wanted]
        files = OutboxFiles.of(self.store, record.session_id)
        done: list[Sent] = []
        errors: list[tuple[str, ArchmaxError]] = []
        for entry in entries:
            if entry.id in files.failed:
                if wanted is not None:
                    errors.append((entry.id, UnsendableError(f"outbox entry {entry.id} was recorded as unsendable")))
                continue
            if entry.id in files.sent:
                continue
            try:
                result = self._claimed_send(record, entry, files.claims.get(entry.id, 0))
            except UnsendableError as exc:
                self._record_failed(record, entry, exc)
                errors.append((entry.id, exc))
            except OutboundError as exc:
                errors.append((entry.id, exc))
            else:
                if result is not None:
                    done.append(result)
        if errors:
            raise DispatchError(record.session_id, done, errors)
        self._settle(record, files, done)
        return done

    def _settle(self, record: Checkpoint, files: OutboxFiles, done: list[Sent]) -> None:
        """Clear the session's outbox mark once every entry of ``record`` is known sent (or failed for good).

        An entry another sender holds (a live claim) is not known sent: the mark stays for the sweep.
        """
        sent = {result.id for result in done} | files.sent | files.failed
        if all(entry.id in sent for entry in record.outbox):
            self.store.outbox_settled(record.session_id, record.version)

    def _claimed_send(self, record: Checkpoint, entry: OutboxEntry, last_claim: int) -> Sent | None:
        """Claim, send and record one entry; ``None`` when another sender has it (or had it).

        Raises:
            UnsendableError / OutboundError: the send failed (the claim was released).
            StoreError: the store failed.
        """
        sid = record.session_id
        if last_claim and not self._claim_over(sid, entry, last_claim):
            return None  # a live sender holds it: it sends and records, or its claim expires for the sweep
        n = last_claim + 1
        now = self.clock.now()
        claim = Claim(owner=uuid.uuid4().hex, expires_at=format_instant(now + timedelta(seconds=CLAIM_TTL_S)))
        try:
            self.store.seed(sid, {claim_path(entry, n): claim.model_dump_json() + "\n"}, create_only=True)
        except PathExistsError:
            return None  # another sender claimed it first
        if last_claim and self._settled_since(sid, entry):
            return None  # the sender we took over from finished after all
        try:
            delivery, message_id = self._send(record, entry)
        except OutboundError:
            self._release(sid, entry, n + 1, claim.owner)
            raise
        except ValueError as exc:  # the mail format refuses a header: no retry changes that
            self._release(sid, entry, n + 1, claim.owner)
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
        try:
            self.store.seed(sid, {sent_path(entry): result.model_dump_json(indent=2) + "\n"}, create_only=True)
        except PathExistsError:
            return None  # another dispatcher recorded it first: its record stands
        return result

    def _claim_over(self, session_id: str, entry: OutboxEntry, n: int) -> bool:
        """Whether claim ``n`` on ``entry`` no longer holds it (released, expired, or unreadable)."""
        data = self.store.get(session_id, claim_path(entry, n))
        if data is None:
            return True
        try:
            claim = Claim.model_validate_json(data)
        except ValueError:
            return True  # a torn claim file holds nothing
        return claim.released or claim.expires_at <= format_instant(self.clock.now())

    def _settled_since(self, session_id: str, entry: OutboxEntry) -> bool:
        """Whether a sent or failed record of ``entry`` appeared after the folder was listed."""
        return any(self.store.get(session_id, path) is not None for path in (sent_path(entry), failed_path(entry)))

    def _release(self, session_id: str, entry: OutboxEntry, n: int, owner: str) -> None:
        """Let the entry go at once after a failed send (claim ``n``, released); best effort: the TTL frees it anyway."""
        released = Claim(owner=owner, expires_at=format_instant(self.clock.now()), released=True)
        try:
            self.store.seed(session_id, {claim_path(entry, n): released.model_dump_json() + "\n"}, create_only=True)
        except Exception as exc:  # noqa: BLE001 - the claim expires on its own
            log.warning("claim on outbox entry %s of session %r not released: %s", entry.id, session_id, exc)

    def _record_failed(self, record: Checkpoint, entry: OutboxEntry, exc: UnsendableError) -> None:
        """Write the entry's failed record (create-only): no sender tries it again."""
        failed = Failed(
            session_id=record.session_id,
            id=entry.id,
            kind=entry.kind,
            detail_type=entry.detail_type,
            reason=str(exc),
            failed_at=format_instant(self.clock.now()),
        )
        try:
            self.store.seed(
                record.session_id, {failed_path(entry): failed.model_dump_json(indent=2) + "\n"}, create_only=True
            )
        except PathExistsError:
            pass

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
    "Claim",
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
