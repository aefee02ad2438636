"""Who may speak into a session by email: an authentication policy and the conversation's participants.

Rule source: issue 13 item 1. An inbound mail addressed to a session that already exists is
delivered only when both hold:

1. it passes the authentication policy, read from SES's receipt verdicts (``spfVerdict``,
   ``dkimVerdict``, ``dmarcVerdict``) and the mail's ``DKIM-Signature`` ``d=`` domains;
2. its sender is a participant of the conversation (an address the session received mail from or
   sent mail to), or it is addressed to a valid signed reply token of that session
   (:mod:`archmax.inbound.reply_token`).

Otherwise it is quarantined (:mod:`archmax.inbound.quarantine`). A mail that starts a new
conversation (its session has no checkpoint yet) has no participants to check and is accepted;
its sender becomes the first participant.

Policies (trigger declaration key ``mail_auth``, per workflow on the triggers mail fires):

==========================  =====================================================================
``dmarc_or_aligned_dkim``   the default: DMARC PASS, or DKIM PASS with a signature whose ``d=``
                            aligns (relaxed) with the From domain
``dmarc``                   DMARC PASS
``aligned_dkim``            DKIM PASS with an aligned signature
``spf``                     SPF PASS (weak: SPF checks the envelope sender, not From)
``none``                    no authentication (a test inbox, a relay that strips verdicts)
==========================  =====================================================================

Relaxed alignment: the signing domain equals the From domain or one is a subdomain of the other.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from archmax.errors import PathExistsError

if TYPE_CHECKING:
    from archmax.inbound.reply_token import ReplyToken

POLICIES = ("dmarc_or_aligned_dkim", "dmarc", "aligned_dkim", "spf", "none")
DEFAULT_POLICY = "dmarc_or_aligned_dkim"
PARTICIPANTS_DIR = "mail/participants"
"""Where a session's received-from addresses are kept: one create-only file per address."""

_D_TAG = re.compile(r"(?:^|;)\s*d\s*=\s*([A-Za-z0-9.-]+)\s*(?:;|$)")


class Verdicts(BaseModel):
    """SES's authentication verdicts for one mail (``PASS``, ``FAIL``, ``GRAY``, ``PROCESSING_FAILED``; ``None`` when absent)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    spf: str | None = None
    dkim: str | None = None
    dmarc: str | None = None


def verdicts_of(receipt: Mapping[str, Any]) -> Verdicts:
    """The verdicts of an SES ``receipt`` object (status strings upper-cased)."""

    def status(name: str) -> str | None:
        verdict = receipt.get(name)
        value = verdict.get("status") if isinstance(verdict, Mapping) else None
        return value.upper() if isinstance(value, str) else None

    return Verdicts(spf=status("spfVerdict"), dkim=status("dkimVerdict"), dmarc=status("dmarcVerdict"))


def dkim_domains(raw: bytes) -> list[str]:
    """The ``d=`` domains of every ``DKIM-Signature`` header of a raw mail, lowercased, in order."""
    headers = BytesHeaderParser(policy=compat32).parsebytes(raw)
    found = []
    for value in headers.get_all("DKIM-Signature") or []:
        match = _D_TAG.search(re.sub(r"\s+", " ", str(value)))
        if match and match.group(1).lower() not in found:
            found.append(match.group(1).lower().strip("."))
    return found


def aligned(signing_domain: str, from_domain: str) -> bool:
    """Relaxed alignment: equal, or one a subdomain of the other (case-insensitive)."""
    d, f = signing_domain.lower().strip("."), from_domain.lower().strip(".")
    return bool(d and f) and (d == f or f.endswith("." + d) or d.endswith("." + f))


def authentication_failure(policy: str, verdicts: Verdicts, sender: str | None, raw: bytes) -> str | None:
    """Why a mail fails ``policy``, or ``None`` when it passes.

    Args:
        policy: One of :data:`POLICIES`.
        verdicts: SES's verdicts.
        sender: The From address (``local@domain``), or ``None``.
        raw: The raw mail (for the DKIM ``d=`` domains).

    Returns:
        A sentence naming the verdicts that fell short, for the quarantine record and the logs.
    """
    if policy == "none":
        return None
    from_domain = sender.rpartition("@")[2] if sender and "@" in sender else ""
    dmarc_ok = verdicts.dmarc == "PASS"
    dkim_ok = verdicts.dkim == "PASS" and any(aligned(d, from_domain) for d in dkim_domains(raw))
    passed = {
        "dmarc_or_aligned_dkim": dmarc_ok or dkim_ok,
        "dmarc": dmarc_ok,
        "aligned_dkim": dkim_ok,
        "spf": verdicts.spf == "PASS",
    }[policy]
    if passed:
        return None
    return (
        f"mail authentication policy '{policy}' not met for From {sender!r}: "
        f"SPF {verdicts.spf or 'absent'}, DKIM {verdicts.dkim or 'absent'}, DMARC {verdicts.dmarc or 'absent'}"
    )


def normal_address(address: str) -> str:
    """The form participants are compared in: trimmed and lowercased (mail systems treat case as one)."""
    return address.strip().lower()


def participant_path(address: str) -> str:
    """The session file recording that ``address`` is a participant (its sha256, so any address is a safe name)."""
    return f"{PARTICIPANTS_DIR}/{hashlib.sha256(normal_address(address).encode('utf-8')).hexdigest()[:32]}"


def record_participant(store: Any, session_id: str, address: str | None) -> None:
    """Note that the session received mail from ``address`` (create-only; already noted is fine)."""
    if not address:
        return
    try:
        store.seed(session_id, {participant_path(address): normal_address(address) + "\n"}, create_only=True)
    except PathExistsError:
        pass


def sent_to(record: Any) -> set[str]:
    """Addresses the session sent mail to: ``to`` and ``cc`` of the record's outbox entries (issue 12)."""
    out: set[str] = set()
    for entry in getattr(record, "outbox", None) or []:
        for address in [*(getattr(entry, "to", None) or []), *(getattr(entry, "cc", None) or [])]:
            if isinstance(address, str):
                out.add(normal_address(address))
    return out


def is_participant(store: Any, session_id: str, record: Any, address: str | None) -> bool:
    """Whether ``address`` is one the session received mail from, or sent mail to per ``record`` (may be None).

    One store read for the received-from ledger; ``record`` (the checkpoint) answers sent-to.
    """
    if not address:
        return False
    if normal_address(address) in sent_to(record):
        return True
    return store.get(session_id, participant_path(address)) is not None


def speaker_refusal(store: Any, session_id: str, sender: str | None, *, token_session_id: str | None) -> str | None:
    """Why ``sender`` may not speak into the existing session ``session_id``, or ``None`` when it may (rule 2 above).

    It may when the mail carries a valid reply token of this session (``token_session_id``), or its
    sender is a participant: an address the session received mail from (one file read) or sent
    mail to (the checkpoint, read only when the first two do not answer).
    """
    if token_session_id == session_id or is_participant(store, session_id, None, sender):
        return None
    if sender and normal_address(sender) in sent_to(store.load(session_id)):  # the checkpoint, only when needed
        return None
    who = (
        f"sender {sender!r} is not a participant of session {session_id!r} (no mail was received from or sent to it)"
        if sender
        else f"the mail names no single sender (From) to find among the participants of session {session_id!r}"
    )
    return f"{who}, and the mail carries no valid reply token"


def reply_token_of(recipients: Iterable[str], secret: bytes | None) -> ReplyToken | None:
    """The valid reply token among ``recipients`` (its session and the park it names), or ``None`` (no secret: no tokens)."""
    if not secret:
        return None
    from archmax.inbound.reply_token import token_from_addresses

    return token_from_addresses(recipients, secret)
