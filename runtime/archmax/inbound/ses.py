"""SES receipt events (the Lambda action of a receipt rule) -> where the raw mail is, and a firing.

Rule source: DESIGN.md §4 "Email" (SES stores the raw message in S3 and invokes ``send``;
spam/virus verdicts of FAIL are refused, recorded, not delivered) and §3 "Inbox" (a duplicate is a
no-op). The delivery id of an email is the mail's own identity, its RFC 5322 ``Message-ID`` (else the
sha256 of the raw bytes), never the SES message id: SES gives one mail a new id per receipt (two
receipt rules, a retry after a partial failure, a forward), and each must be the same event (issue 9).

SES never puts the message body in a Lambda-action event: the rule's S3 action, which runs first,
wrote it to the bucket. Where: an ``S3`` action in the record names ``bucketName``/``objectKey``
itself; for any other action (``Lambda``, ``SNS``) the template's convention applies, the rule's
``ObjectKeyPrefix`` followed by the SES message id (``inbound/<messageId>``), in the configured
bucket.

The envelope is read through Powertools' ``SESEvent`` data class. Its parser model
(``SesModel``) is not used: it refuses real receipts that lack ``dmarcVerdict`` or carry an ``S3``
action, both of which SES sends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes import SESEvent
from pydantic import BaseModel, ConfigDict, Field

from archmax.errors import InvalidEventError
from archmax.inbound.addresses import usable_address
from archmax.inbound.caps import AttachmentCaps
from archmax.inbound.email import parse_email
from archmax.inbound.mail_auth import Verdicts, verdicts_of
from archmax.session.firing import Firing

INBOUND_PREFIX = "inbound/"
"""The receipt rule's S3 ``ObjectKeyPrefix`` in template.yaml; the bucket's lifecycle expires it."""

SES_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class SesMail(BaseModel):
    """One received message of an SES receipt event."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    message_id: str
    """SES's own id of the message (``mail.messageId``): where the raw MIME is, and what a handler
    reports; the transport's id, not the event's (see :func:`ses_firing`)."""
    bucket: str | None
    """Where the raw MIME is; ``None`` when the event names no bucket and none is configured."""
    key: str
    """The object key of the raw MIME."""
    recipients: list[str]
    """The receipt's recipients (the addresses this rule matched)."""
    refused: str | None = None
    """Why the message must not be delivered (a spam or virus verdict of FAIL), else ``None``."""
    verdicts: Verdicts = Field(default_factory=Verdicts)
    """SES's SPF, DKIM and DMARC verdicts (issue 13: the mail authentication policy reads them)."""


def is_ses_event(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` looks like an SES receipt event (``Records[0].eventSource == "aws:ses"``)."""
    records = event.get("Records") if isinstance(event, Mapping) else None
    return (
        isinstance(records, list)
        and bool(records)
        and isinstance(records[0], Mapping)
        and records[0].get("eventSource") == "aws:ses"
    )


def _status(receipt: Mapping[str, Any], name: str) -> str | None:
    verdict = receipt.get(name)
    status = verdict.get("status") if isinstance(verdict, Mapping) else None
    return status.upper() if isinstance(status, str) else None


def ses_mails(event: Mapping[str, Any], *, bucket: str | None, prefix: str = INBOUND_PREFIX) -> list[SesMail]:
    """Read every record of an SES receipt event.

    Args:
        event: The Lambda event (``{"Records": [{"eventSource": "aws:ses", "ses": {...}}]}``).
        bucket: The bucket the rule's S3 action writes to (``SESSIONS_BUCKET``), used unless the
            record's own action is an ``S3`` action naming one.
        prefix: The rule's ``ObjectKeyPrefix``; the key is ``prefix + messageId``.

    Returns:
        One :class:`SesMail` per record, in record order. A spam or virus verdict of ``FAIL`` sets
        ``refused`` (the caller records the refusal and does not deliver).

    Raises:
        InvalidEventError: no records, a record that is not from ``aws:ses``, a missing or unsafe
            ``mail.messageId``, an S3 action without bucket and key, an S3 action naming any bucket
            but ``bucket`` (a forged receipt must not make the function read another bucket; with no
            bucket configured there is nothing to read), or one naming ``bucket`` with a key outside
            ``prefix`` (the sessions bucket also holds every session's files, which a forged receipt
            must not read as mail).
    """
    if not is_ses_event(event):
        raise InvalidEventError("not an SES receipt event: expected Records[0].eventSource 'aws:ses'")
    return [
        _ses_mail(f"Records.{index}", record, bucket=bucket, prefix=prefix)
        for index, record in enumerate(SESEvent(dict(event)).raw_event["Records"])
    ]


def _ses_mail(where: str, record: Any, *, bucket: str | None, prefix: str) -> SesMail:
    """One record (``where``: its place in the event, for errors) as a :class:`SesMail`; see :func:`ses_mails`."""
    mail, receipt = _mail_and_receipt(where, record)
    message_id = mail.get("messageId")
    if not isinstance(message_id, str) or not SES_ID.fullmatch(message_id):
        raise InvalidEventError(f"{where}.ses.mail.messageId {message_id!r} is not an SES message id")
    action = receipt.get("action")
    if not isinstance(action, Mapping):
        action = {}
    where_bucket, key = bucket, prefix + message_id
    if action.get("type") == "S3":
        where_bucket, key = _s3_location(where, action, bucket=bucket, prefix=prefix)
    failed = [name for name in ("spamVerdict", "virusVerdict") if _status(receipt, name) == "FAIL"]
    recipients = receipt.get("recipients")
    return SesMail(
        message_id=message_id,
        bucket=where_bucket,
        key=key,
        recipients=[r for r in recipients if isinstance(r, str)] if isinstance(recipients, list) else [],
        refused=f"SES {' and '.join(failed)} is FAIL: not delivered" if failed else None,
        verdicts=verdicts_of(receipt),
    )


def _mail_and_receipt(where: str, record: Any) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The record's ``ses.mail`` and ``ses.receipt`` objects; InvalidEventError when it is no SES record."""
    if not isinstance(record, Mapping) or record.get("eventSource") != "aws:ses":
        raise InvalidEventError(f"{where} is not an SES record")
    ses = record.get("ses")
    mail = ses.get("mail") if isinstance(ses, Mapping) else None
    receipt = ses.get("receipt") if isinstance(ses, Mapping) else None
    if not isinstance(mail, Mapping) or not isinstance(receipt, Mapping):
        raise InvalidEventError(f"{where}.ses needs 'mail' and 'receipt' objects")
    return mail, receipt


def _s3_location(where: str, action: Mapping[str, Any], *, bucket: str | None, prefix: str) -> tuple[str, str]:
    """``(bucket, key)`` an S3 action names, checked: the configured bucket, a key inside ``prefix``."""
    where_bucket, key = action.get("bucketName"), action.get("objectKey")
    if not isinstance(where_bucket, str) or not where_bucket or not isinstance(key, str) or not key:
        raise InvalidEventError(f"{where}.ses.receipt.action is an S3 action without bucketName/objectKey")
    if where_bucket != bucket:
        raise InvalidEventError(
            f"{where}.ses.receipt.action.bucketName {where_bucket!r} is not the configured mail bucket"
            + ("" if bucket else " (none is configured: set SESSIONS_BUCKET)")
        )
    inside = key.startswith(prefix) and len(key) > len(prefix)
    if not inside or {".", ".."} & set(key.split("/")):
        # the sessions bucket holds every session's files: only the rule's mail folder is mail
        raise InvalidEventError(
            f"{where}.ses.receipt.action.objectKey {key!r} is not under '{prefix}' of the sessions bucket"
        )
    return where_bucket, key


def ses_firing(mail: SesMail, raw: bytes, *, trigger: str | None = None, caps: AttachmentCaps | None = None) -> Firing:
    """The firing of one received message: the email adapter's reading of the raw MIME.

    Args:
        mail: The record (its SES message id only says where the raw mail was).
        raw: The raw message as the S3 action stored it.
        trigger: Overrides the adapter's ``email_received`` / ``email_reply`` choice.
        caps: Attachment caps (see :func:`~archmax.inbound.email.parse_email`).

    Returns:
        :func:`archmax.inbound.email.parse_email`'s firing, its ``to`` led by the address SES
        received the mail for (:func:`received_for`). Its ``delivery_id`` is the mail's normalised
        RFC 5322 ``Message-ID`` (else the sha256 of ``raw``), never the SES message id, so one mail
        that reaches SES twice, under two SES message ids, is one event and its second delivery a no-op.
    """
    return received_for(parse_email(raw, trigger=trigger, caps=caps), mail.recipients)


def received_for(firing: Firing, recipients: list[str]) -> Firing:
    """The firing with the address the mail was received for first in its ``to`` variable.

    Our reply's ``From`` is the address the person wrote to (``to[0]``, unless ``ARCHMAX_MAIL_FROM``
    says otherwise). A Bcc'd mail (``To: undisclosed-recipients:;``), or one that copies us next
    to someone else, names no such address first; SES's ``receipt.recipients`` does (issue 20 item
    5). A ``to`` address among the recipients moves to the front; when the headers name none of
    them, the first usable recipient is put in front, with a warning.

    Args:
        firing: :func:`~archmax.inbound.email.parse_email`'s firing.
        recipients: ``receipt.recipients`` of the SES record (the addresses this rule matched).

    Returns:
        The same firing when ``to`` already starts with a recipient (or there is none), else a copy.
    """
    ours = [r for r in recipients if usable_address(r)]
    to = [a for a in firing.variables.get("to") or [] if isinstance(a, str)]
    if not ours or (to and to[0].lower() in {r.lower() for r in ours}):
        return firing
    named = [a for a in to if a.lower() in {r.lower() for r in ours}]
    first = named[0] if named else ours[0]
    warnings = list(firing.warnings)
    if not named:
        warnings.append(
            f"the headers name none of the addresses SES received the mail for; {first} "
            "(receipt.recipients) leads the to variable, so the reply is sent from it"
        )
    variables = {**firing.variables, "to": [first, *(a for a in to if a != first)]}
    return firing.model_copy(update={"variables": variables, "warnings": warnings})
