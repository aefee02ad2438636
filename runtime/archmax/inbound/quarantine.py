"""Per-session mail quarantine: mail that may not speak into its session is kept, not delivered, until released.

Rule source: issue 13 item 1 (a mail failing authentication or the participant check is kept in
a per-session quarantine with the reason, visible in the session summary and the logs; an
operator releases it with ``archmax quarantine release`` or the HTTP route; a released mail is
applied once).

Layout, in the session's own files (outside ``scratchpad/``, so the session's tools never see it)::

    quarantine/<delivery id>.json           the record: reason, sender, subject, trigger, when
    quarantine/<delivery id>.eml            the raw mail, exactly as received
    quarantine/<delivery id>.released.json  written once the mail was handed to the inbox

On a store with a hint of possibly-held mail (``Capability.HELD_MAIL_HINT``; ``AwsStore``: the
session item's ``quarantine_hint``),
the id is added to the hint before the record is written and taken out after the release stamp,
so the hint is a superset of the held mail (a crash in between leaves an id the listing then
filters out) and a summary whose hint is empty lists nothing (issue 10 "summary: 1 call").

The delivery id is SES's message id (``[A-Za-z0-9._-]``, checked before it becomes a path).
Release hands the mail to :meth:`archmax.hosting.host.Host.accept` under the mail's own delivery
id (its Message-ID), so a release repeated (or raced) is de-duplicated by the inbox and the
session: applied once.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from archmax.clock import format_instant
from archmax.errors import PathExistsError, UnknownQuarantineError
from archmax.session.ids import validate_session_id
from archmax.stores.base import Capability, SessionStore

log = logging.getLogger("archmax.inbound.quarantine")

QUARANTINE_DIR = "quarantine"
_MAIL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class QuarantinedMail(BaseModel):
    """One held mail (``quarantine/<delivery_id>.json``)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    session_id: str
    delivery_id: str
    """SES's message id."""
    reason: str
    """Why it was held (the authentication verdicts, or the sender not being a participant)."""
    sender: str | None = None
    subject: str = ""
    trigger: str | None = None
    quarantined_at: str
    released_at: str | None = None
    """When an operator released it; ``None`` while held."""
    park_id: str | None = None
    """The park its reply token named (§5.11, issue 21 item 6): a release answers that park or is refused."""

    @classmethod
    def of(cls, firing: Any, *, session_id: str, delivery_id: str, reason: str, at: str) -> QuarantinedMail:
        """The record of ``firing`` (a parsed mail) held for ``session_id`` at instant ``at``, for ``reason``."""
        return cls(
            session_id=session_id,
            delivery_id=delivery_id,
            reason=reason,
            sender=firing.variables.get("from"),
            subject=firing.variables.get("subject") or "",
            trigger=firing.trigger,
            quarantined_at=at,
            park_id=firing.park_id,
        )


def _check_id(session_id: str, delivery_id: Any) -> str:
    if not isinstance(delivery_id, str) or not _MAIL_ID.fullmatch(delivery_id) or delivery_id.endswith(".released"):
        raise UnknownQuarantineError(session_id, str(delivery_id))
    return delivery_id


def _hint(store: SessionStore, session_id: str, delivery_id: str, *, held: bool) -> None:
    if Capability.HELD_MAIL_HINT in store.capabilities:  # only stores that keep a hint (AwsStore)
        store.note_held_mail(session_id, delivery_id, held=held)


def hold(store: Any, mail: QuarantinedMail, raw: bytes) -> bool:
    """Keep a mail in its session's quarantine; False when it was held already (an SES retry).

    The id joins the store's hint first (see the module docstring), then the raw mail is written
    before the record, so a listed record always has its mail and its id in the hint.

    Raises:
        InvalidSessionIdError, StoreError, SessionStoreCapabilityError (a store without ``upload_files``).
    """
    sid = validate_session_id(mail.session_id)
    base = f"{QUARANTINE_DIR}/{_check_id(sid, mail.delivery_id)}"
    _hint(store, sid, mail.delivery_id, held=True)
    try:
        store.upload_files(sid, {f"{base}.eml": raw}, create_only=True)
    except PathExistsError:
        pass
    try:
        store.seed(sid, {f"{base}.json": mail.model_dump_json(indent=2) + "\n"}, create_only=True)
    except PathExistsError:
        if store.get(sid, f"{base}.released.json") is not None:
            _hint(store, sid, mail.delivery_id, held=False)  # a retry of a mail released since: not held
        return False
    log.warning(
        "mail %s quarantined for session %r: %s", mail.delivery_id, sid, mail.reason,
        extra={"session_id": sid, "delivery_id": mail.delivery_id, "reason": mail.reason},
    )  # fmt: skip
    return True


def held_ids(store: Any, session_id: str) -> list[str]:
    """Delivery ids of the session's quarantined mails not yet released, sorted (one ``list_files``)."""
    names = {p.rsplit("/", 1)[-1] for p in store.list_files(session_id, QUARANTINE_DIR)}
    held = {n[: -len(".json")] for n in names if n.endswith(".json") and not n.endswith(".released.json")}
    return sorted(i for i in held if f"{i}.released.json" not in names)


def held_in_summary(store: Any, session_id: str, version: int) -> list[str]:
    """:func:`held_ids` for a summary of the checkpoint at ``version`` the caller just loaded.

    No listing when the store's hint (``Capability.HELD_MAIL_HINT``, AwsStore) says nothing may be
    held: the summary then costs the one item read (issue 10). Stores without a hint list the folder.
    """
    has_hint = Capability.HELD_MAIL_HINT in store.capabilities
    maybe = store.held_mail_hint(session_id, version) if has_hint else None
    if maybe is not None and not maybe:
        return []
    return held_ids(store, session_id)


def listing(store: Any, session_id: str) -> list[QuarantinedMail]:
    """Every quarantined mail of the session, released ones included (``released_at`` set), by delivery id."""
    names = {p.rsplit("/", 1)[-1] for p in store.list_files(session_id, QUARANTINE_DIR)}
    out = []
    for name in sorted(names):
        if not name.endswith(".json") or name.endswith(".released.json"):
            continue
        data = store.get(session_id, f"{QUARANTINE_DIR}/{name}")
        if data is None:
            continue
        mail = QuarantinedMail.model_validate_json(data)
        released = store.get(session_id, f"{QUARANTINE_DIR}/{mail.delivery_id}.released.json")
        if released is not None:
            mail = mail.model_copy(update={"released_at": json.loads(released).get("released_at")})
        out.append(mail)
    return out


def release(host: Any, session_id: str, delivery_id: str, *, parse: Any) -> dict[str, Any]:
    """Hand a quarantined mail to the session's inbox, once.

    Args:
        host: The :class:`~archmax.hosting.host.Host` (its ``accept`` inboxes and wakes the session).
        session_id: The session the mail was held for.
        delivery_id: The held mail's id (untrusted: checked before it becomes a path).
        parse: ``(raw, trigger) -> Firing``: how the host reads mail (caps included).

    Returns:
        ``{session_id, delivery_id, released: True, duplicate, disposition}``; ``duplicate`` is True
        when this mail was released before (nothing new is applied).

    Raises:
        InvalidSessionIdError; UnknownQuarantineError (no such held mail); whatever ``accept`` raises.
    """
    store = host.agent.store
    sid = validate_session_id(session_id)
    base = f"{QUARANTINE_DIR}/{_check_id(sid, delivery_id)}"
    record, raw = store.get(sid, f"{base}.json"), store.get(sid, f"{base}.eml")
    if record is None or raw is None:
        raise UnknownQuarantineError(sid, delivery_id)
    mail = QuarantinedMail.model_validate_json(record)
    answer = {"session_id": sid, "delivery_id": delivery_id, "released": True}
    if store.get(sid, f"{base}.released.json") is not None:
        _hint(store, sid, delivery_id, held=False)  # a release that stopped after its stamp: tidy the hint
        return {**answer, "duplicate": True, "disposition": None}  # released before: nothing else is written
    firing = parse(
        raw, mail.trigger
    )  # the mail's own delivery id (its Message-ID): the inbox and session apply it once
    if mail.park_id is not None:  # its reply token named a park: the session refuses it if that park is gone
        firing = firing.model_copy(update={"park_id": mail.park_id})
    accepted = host.accept(firing, session_id=sid)
    from archmax.inbound.mail_auth import record_participant

    record_participant(store, sid, mail.sender)  # an operator vouched for this sender
    stamp = {"released_at": format_instant(host.clock.now()), "delivery_id": delivery_id}
    try:
        store.seed(sid, {f"{base}.released.json": json.dumps(stamp) + "\n"}, create_only=True)
    except PathExistsError:
        pass  # a racing release stamped it; the inbox de-duplicated the mail
    _hint(store, sid, delivery_id, held=False)  # after the stamp: the hint stays a superset of the held mail
    log.warning("quarantined mail %s released into session %r", delivery_id, sid)
    return {**answer, "duplicate": accepted.duplicate, "disposition": accepted.disposition}
