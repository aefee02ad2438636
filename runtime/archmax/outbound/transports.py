"""Where outbound mail and lifecycle events go: SMTP, ``.eml`` files, SES, EventBridge, event files.

Rule source: issue 12 items 2-4. Locally mail goes to an SMTP server when ``ARCHMAX_SMTP_URL`` is
set (standard ``smtplib``), else is written as ``.eml`` files to the session's ``outbox/`` folder;
on AWS it goes through SESv2 ``SendEmail`` (raw MIME). Lifecycle events go to EventBridge
(``source: archmax``) when a bus is configured, else to ``outbox/<id>.event.json`` beside the mail.

Every transport answers a :class:`Delivery`: the provider's id and where the message went. A
provider failure raises :class:`~archmax.errors.OutboundError` (retryable: nothing was recorded
as sent); AWS errors are mapped by ``archmax.stores.aws.errors.aws_call``, smtplib's stop here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from archmax.errors import OutboundError, PathExistsError, StoreError
from archmax.session.ids import portable_folder_name
from archmax.session.records import OutboxEntry

EVENT_SOURCE = "archmax"
"""The ``source`` of every lifecycle event."""

MAX_EVENT_TEXT = 32 * 1024
"""Characters of ``detail.text`` an event carries (EventBridge takes 256 KB per entry); the mail carries all."""


@dataclass(frozen=True)
class Delivery:
    """What a transport did with one message."""

    transport: str
    """``smtp``, ``file``, ``ses``, ``eventbridge``."""
    where: str
    """A path, ``smtp://host:port``, ``ses:<region>`` or the bus name."""
    provider_id: str | None = None
    """The provider's id of the message (SES ``MessageId``, EventBridge ``EventId``), if it has one."""
    aliases: list[str] = field(default_factory=list)
    """Further Message-IDs the message is known under (the ones SES assigns)."""


class Mailer(Protocol):
    """Sends one raw reply."""

    def send(self, msg: EmailMessage, session_id: str, entry: OutboxEntry) -> Delivery:
        """Send ``msg`` (the reply of ``entry``). Raises :class:`OutboundError` when it was not sent."""


class Publisher(Protocol):
    """Puts one lifecycle event."""

    def publish(self, session_id: str, entry: OutboxEntry) -> Delivery:
        """Put ``entry``'s event. Raises :class:`OutboundError` when it was not put."""


def event_of(entry: OutboxEntry) -> dict[str, Any]:
    """``{"source", "detail-type", "detail"}`` of an event entry; ``detail.text`` cut to ``MAX_EVENT_TEXT``."""
    detail = dict(entry.detail)
    text = detail.get("text")
    if isinstance(text, str) and len(text) > MAX_EVENT_TEXT:
        detail["text"] = text[:MAX_EVENT_TEXT]
        detail["text_truncated"] = True
    return {"source": EVENT_SOURCE, "detail-type": entry.detail_type, "detail": detail}


def session_path(store: Any, session_id: str, path: str) -> str:
    """How to show a session file: its absolute path on a filesystem store, else ``<session id>/<path>``."""
    root = store.location.root
    if root is not None:
        return str(root / portable_folder_name(session_id) / path)  # the folder FilesystemStore uses
    return f"{session_id}/{path}"


def _create(store: Any, session_id: str, path: str, data: bytes) -> None:
    """Write a session file create-only; an existing one means an earlier attempt wrote it: done."""
    try:
        store.seed(session_id, {path: data.decode("utf-8")}, create_only=True)
    except PathExistsError:
        pass


class FileMailer:
    """Writes each reply as ``outbox/<entry id>.eml`` in its session's folder (the local default)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def send(self, msg: EmailMessage, session_id: str, entry: OutboxEntry) -> Delivery:
        """See :class:`Mailer`; the file is the mail (create-only, so a retry writes it once)."""
        path = f"outbox/{entry.id}.eml"
        _create(self.store, session_id, path, bytes(msg))
        return Delivery("file", session_path(self.store, session_id, path))


class MailOff:
    """Sends no mail: each reply is recorded as not sent (``ARCHMAX_MAIL_TRANSPORT=off``, no SES identity)."""

    def send(self, msg: EmailMessage, session_id: str, entry: OutboxEntry) -> Delivery:
        """See :class:`Mailer`; records where it did not go, so the entry is settled, never retried."""
        return Delivery("off", "not sent: mail is off (ARCHMAX_MAIL_TRANSPORT=off)")


class SmtpMailer:
    """Sends through an SMTP server named by a URL (``ARCHMAX_SMTP_URL``).

    ``smtp://[user:password@]host[:port]`` (plain, port 25), ``smtp+starttls://...`` (STARTTLS,
    port 587) or ``smtps://...`` (TLS, port 465). User and password are percent-decoded.

    Raises:
        ValueError: an unusable URL.
    """

    def __init__(self, url: str, *, timeout_s: float = 30.0) -> None:
        parts = urlsplit(url)
        ports = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}
        if parts.scheme not in ports or not parts.hostname:
            raise ValueError(f"ARCHMAX_SMTP_URL must be smtp://, smtp+starttls:// or smtps://host[:port], not {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or ports[parts.scheme]
        self.user = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        self.timeout_s = timeout_s

    @property
    def where(self) -> str:
        """``smtp://host:port`` (never the credentials)."""
        return f"{self.scheme}://{self.host}:{self.port}"

    def send(self, msg: EmailMessage, session_id: str, entry: OutboxEntry) -> Delivery:
        """See :class:`Mailer`."""
        import smtplib  # imported by the one transport that uses it: a function that never mails loads neither
        import ssl

        recipients = [*entry.to, *entry.cc]
        try:
            if self.scheme == "smtps":
                client: smtplib.SMTP = smtplib.SMTP_SSL(
                    self.host, self.port, timeout=self.timeout_s, context=ssl.create_default_context()
                )
            else:
                client = smtplib.SMTP(self.host, self.port, timeout=self.timeout_s)
            with client:
                if self.scheme == "smtp+starttls":
                    client.starttls(context=ssl.create_default_context())
                if self.user:
                    client.login(self.user, self.password or "")
                client.send_message(msg, to_addrs=recipients)
        except (smtplib.SMTPException, OSError) as exc:
            raise OutboundError(f"SMTP {self.where} did not take the mail of outbox entry {entry.id}: {exc}") from exc
        return Delivery("smtp", self.where)


class SesMailer:
    """Sends through SESv2 ``SendEmail`` with the raw MIME (the AWS transport).

    Args:
        client: A boto3 ``sesv2`` client.
        configuration_set: An SES configuration set to send under, or ``None``.
    """

    def __init__(self, client: Any, *, configuration_set: str | None = None) -> None:
        self._ses = client
        self.configuration_set = configuration_set

    def send(self, msg: EmailMessage, session_id: str, entry: OutboxEntry) -> Delivery:
        """See :class:`Mailer`. SES's ``MessageId`` is returned, and the ids it sends the mail under as aliases."""
        from archmax.stores.aws.errors import aws_call

        request: dict[str, Any] = {
            "FromEmailAddress": str(msg["From"]),
            "Destination": {"ToAddresses": list(entry.to), "CcAddresses": list(entry.cc)},
            "Content": {"Raw": {"Data": bytes(msg)}},
        }
        if self.configuration_set:
            request["ConfigurationSetName"] = self.configuration_set
        try:
            answer = aws_call(self._ses.send_email, operation="SES SendEmail", **request)
        except StoreError as exc:
            raise OutboundError(f"SES did not send the mail of outbox entry {entry.id}: {exc}") from exc
        ses_id = answer["MessageId"]
        region = self._ses.meta.region_name
        # SES sends under <MessageId@email.amazonses.com> (or the regional form) when it replaces our id.
        aliases = [f"{ses_id}@email.amazonses.com", f"{ses_id}@{region}.amazonses.com"]
        return Delivery("ses", f"ses:{region}", ses_id, aliases)


class FileEventWriter:
    """Writes each lifecycle event as ``outbox/<entry id>.event.json`` (the local default without a bus)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def publish(self, session_id: str, entry: OutboxEntry) -> Delivery:
        """See :class:`Publisher`."""
        path = f"outbox/{entry.id}.event.json"
        _create(
            self.store, session_id, path, (json.dumps(event_of(entry), indent=2, ensure_ascii=False) + "\n").encode()
        )
        return Delivery("file", session_path(self.store, session_id, path))


class EventBridgePublisher:
    """Puts lifecycle events on an EventBridge bus (``source: archmax``).

    Args:
        client: A boto3 ``events`` client.
        bus: The bus name or ARN (``ARCHMAX_EVENT_BUS``).
    """

    def __init__(self, client: Any, bus: str) -> None:
        self._events = client
        self.bus = bus

    def publish(self, session_id: str, entry: OutboxEntry) -> Delivery:
        """See :class:`Publisher`; a failed entry (``FailedEntryCount``) raises like a failed call."""
        from archmax.stores.aws.errors import aws_call

        event = event_of(entry)
        try:
            answer = aws_call(
                self._events.put_events,
                operation="EventBridge PutEvents",
                Entries=[
                    {
                        "Source": event["source"],
                        "DetailType": event["detail-type"],
                        "Detail": json.dumps(event["detail"], ensure_ascii=False),
                        "EventBusName": self.bus,
                    }
                ],
            )
        except StoreError as exc:
            raise OutboundError(f"EventBridge did not take the event of outbox entry {entry.id}: {exc}") from exc
        result = (answer.get("Entries") or [{}])[0]
        if answer.get("FailedEntryCount") or "EventId" not in result:
            raise OutboundError(
                f"EventBridge refused the event of outbox entry {entry.id}: "
                f"{result.get('ErrorCode')}: {result.get('ErrorMessage')}"
            )
        return Delivery("eventbridge", self.bus, result["EventId"])
