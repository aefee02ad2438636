"""The outbound configuration: which dispatcher a host builds from its environment.

Rule source: issue 12 item 4 and README "Outbound messages". Settings (environment variables):

==============================  ==================================================================
``ARCHMAX_OUTBOUND``            ``inline`` (default: send in-process after each operation),
                                ``stream`` (the AWS outbound function sends from the table's
                                stream; nothing in-process) or ``off``
``ARCHMAX_MAIL_FROM``           our ``From``, the inbox address (``Support <support@example.com>``);
                                default: the address the person wrote to
``ARCHMAX_MAIL_TRANSPORT``      ``ses``, ``smtp``, ``file`` or ``off``; default ``smtp`` when
                                ``ARCHMAX_SMTP_URL`` is set, else ``file``
``ARCHMAX_SMTP_URL``            ``smtp://[user:pw@]host[:port]``, ``smtp+starttls://...``, ``smtps://...``
``ARCHMAX_SES_CONFIGURATION_SET``  an SES configuration set to send under (optional)
``ARCHMAX_EVENT_BUS``           the EventBridge bus for lifecycle events; unset: event files
``ARCHMAX_REPLY_SECRET`` /      the reply-token secret (or the SSM parameter / ``secretsmanager:``
``ARCHMAX_REPLY_SECRET_PARAM``  secret holding it); unset: no ``Reply-To``
==============================  ==================================================================
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from archmax.errors import OutboundError
from archmax.outbound.aliases import aliases_for
from archmax.outbound.replies import thread_reply
from archmax.session.firing import Firing

if TYPE_CHECKING:  # the dispatcher and its transports (email, smtplib) load only where one is built
    from archmax.clock import Clock
    from archmax.outbound.dispatch import Dispatcher, ReplyTo
    from archmax.outbound.replies import TokenSession
    from archmax.session.records import Checkpoint

log = logging.getLogger("archmax.outbound")


def reply_to_from_env(env: Mapping[str, str]) -> ReplyTo | None:
    """The signed ``Reply-To`` builder of the configured reply secret, or ``None`` when none is configured.

    Uses the shared reply-token module (:mod:`archmax.inbound.reply_token`: ``<local>+<token>@<domain>``); the
    token of a mail that asks a question names its park (the entry's ``park_version``, BEHAVIOUR.md §5.11).
    """
    if not (env.get("ARCHMAX_REPLY_SECRET") or env.get("ARCHMAX_REPLY_SECRET_PARAM")):
        return None
    from archmax.inbound import reply_token

    secret = reply_token.configured_secret(env)
    if secret is None:
        return None

    def reply_to(address: str, session_id: str, park_version: int | None = None) -> str | None:
        return reply_token.reply_address(address, session_id, secret, park_version)

    return reply_to


def token_session_from_env(env: Mapping[str, str]) -> TokenSession | None:
    """Reads a signed reply token out of recipient addresses, or ``None`` when no reply secret is configured."""
    if not (env.get("ARCHMAX_REPLY_SECRET") or env.get("ARCHMAX_REPLY_SECRET_PARAM")):
        return None
    from archmax.inbound import reply_token

    secret = reply_token.configured_secret(env)
    if secret is None:
        return None
    return lambda addresses: reply_token.session_from_addresses(addresses, secret)


def reply_threader(
    store: Any,
    env: Mapping[str, str] | None = None,
    *,
    s3_client: Any = None,
    s3_prefix: str | None = None,
) -> Callable[[Firing, Iterable[str]], Firing]:
    """``(parsed mail's firing, envelope recipients) -> firing`` threaded onto the session it answers.

    :func:`archmax.outbound.replies.thread_reply` over the store's alias index and the configured reply
    secret; what ``archmax email`` and the SES path of the send function apply to every mail.
    """
    env = os.environ if env is None else env
    aliases = aliases_for(store, s3_client=s3_client, prefix=s3_prefix)
    token_session = token_session_from_env(env)

    def thread(firing: Firing, recipients: Iterable[str] = ()) -> Firing:
        return thread_reply(firing, aliases=aliases, token_session=token_session, recipients=recipients)

    return thread


def dispatcher_from_env(
    store: Any,
    env: Mapping[str, str] | None = None,
    *,
    clock: Clock | None = None,
    clients: Mapping[str, Any] | None = None,
    s3_prefix: str | None = None,
) -> Dispatcher | None:
    """The dispatcher the settings (module docstring) describe, or ``None`` for ``ARCHMAX_OUTBOUND=off|stream``.

    Args:
        store: The session store the dispatcher reads and records results in.
        env: Where settings are read (default ``os.environ``).
        clock: For ``Date`` and ``sent_at``.
        clients: Prebuilt boto3 clients by service name (``sesv2``, ``events``, ``s3``).
        s3_prefix: An ``AwsStore``'s key prefix, for its alias index.

    Raises:
        OutboundError: an unknown ``ARCHMAX_OUTBOUND`` or ``ARCHMAX_MAIL_TRANSPORT``, or a bad SMTP URL.
    """
    env = os.environ if env is None else env
    mode = env.get("ARCHMAX_OUTBOUND", "inline") or "inline"
    if mode in ("off", "stream"):
        return None
    if mode != "inline":
        raise OutboundError(f"ARCHMAX_OUTBOUND must be inline, stream or off, not {mode!r}")
    from archmax.outbound.dispatch import Dispatcher
    from archmax.outbound.transports import (
        EventBridgePublisher,
        FileEventWriter,
        FileMailer,
        Mailer,
        MailOff,
        Publisher,
        SesMailer,
        SmtpMailer,
    )

    made = dict(clients or {})

    def client(service: str) -> Any:
        if service not in made:
            from archmax.stores.aws.clients import LazyClient  # built on first use: boto3 loads only then

            made[service] = LazyClient(service)
        return made[service]

    smtp_url = env.get("ARCHMAX_SMTP_URL")
    transport = env.get("ARCHMAX_MAIL_TRANSPORT") or ("smtp" if smtp_url else "file")
    mailer: Mailer
    if transport == "file":
        mailer = FileMailer(store)
    elif transport == "smtp":
        if not smtp_url:
            raise OutboundError("ARCHMAX_MAIL_TRANSPORT=smtp needs ARCHMAX_SMTP_URL")
        try:
            mailer = SmtpMailer(smtp_url)
        except ValueError as exc:
            raise OutboundError(str(exc)) from None
    elif transport == "off":
        mailer = MailOff()
    elif transport == "ses":
        mailer = SesMailer(client("sesv2"), configuration_set=env.get("ARCHMAX_SES_CONFIGURATION_SET") or None)
    else:
        raise OutboundError(f"ARCHMAX_MAIL_TRANSPORT must be ses, smtp, file or off, not {transport!r}")
    bus = env.get("ARCHMAX_EVENT_BUS")
    publisher: Publisher = EventBridgePublisher(client("events"), bus) if bus else FileEventWriter(store)
    in_bucket = store.location.bucket is not None  # an AwsStore: aliases beside it in S3
    aliases = aliases_for(store, s3_client=client("s3") if in_bucket else None, prefix=s3_prefix)
    return Dispatcher(
        store,
        mailer=mailer,
        publisher=publisher,
        aliases=aliases,
        sender=env.get("ARCHMAX_MAIL_FROM") or None,
        reply_to=reply_to_from_env(env),
        clock=clock,
    )


def dispatch_after_operation(dispatcher: Dispatcher | None, record: Checkpoint, warn: Any) -> None:
    """Send what a finished operation's commits recorded (the local, in-process dispatcher).

    Never fails the operation (DESIGN.md §3: nothing on this path can fail a turn): an error is
    reported through ``warn(record, "outbound", message)`` and the entries stay unsent, to be sent by
    the session's next operation (every kept unsent entry is retried) or ``archmax sweep``.
    """
    if dispatcher is None or not record.outbox:
        return
    try:
        dispatcher.dispatch(record)
    except Exception as exc:  # noqa: BLE001 - a send is a consequence, never a reason to fail the turn
        log.warning("outbound messages of session %r not sent: %s", record.session_id, exc)
        warn(record, "outbound", f"outbound messages not sent yet (they stay in the outbox): {exc}")
