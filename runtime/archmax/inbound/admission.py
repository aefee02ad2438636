"""Who may speak into a session by mail: ONE admission rule for the SES function, ``archmax email`` and ``serve``.

Rule source: issue 13 item 1 (authentication policy, participants, quarantine), issue 21 items 1, 3,
4 and 6 (a duplicate admits nobody; mail opens sessions only in its own namespace; a first mail is
authenticated too; an answer lands only on the question it answers), issue 23 item 5 (admission lives in ``inbound/``). For one parsed mail,
:func:`admit` decides, in this order:

1. **Where it goes.** A valid signed reply token names its session; else a reply to a mail we sent
   goes to the session that sent it (the host's ``thread`` step: our Message-IDs as aliases); else
   the id the trigger's ``session:`` path yields from the mail, in the mail namespace:
   ``mail:<id>`` (:func:`mail_session_id`). A mail never opens a session outside that namespace,
   so a stranger's ``Message-ID: <order-1234>`` cannot claim the id ``order-1234`` that an
   IAM-authorised ``POST /sessions/order-1234/messages`` addresses.
   **A reply token's park must be current.** A token of that session that names a park (its mail
   asked a question there, BEHAVIOUR.md §5.11, issue 21 item 6) is checked at once: unless that
   park is the session's current park, :func:`admit` raises ``SessionNotAwaitingInputError``
   naming both parks, before anything is written (no quarantine, no inbox item, no delivery id,
   no participant), as any delivery naming a stale ``park_id`` is refused, whoever sent it. A late
   answer to question A cannot land on question B. A token that names no park (a mail that asked
   nothing, or one sent before parks were named) is not checked. The routed firing carries that
   ``park_id`` on (to the inbox, the session, a quarantine record), so the session refuses it
   again if the park changed before the apply (an inboxed mail waits for a running turn; a held
   mail for its release).
2. **Authentication.** The trigger's ``mail_auth`` policy (:mod:`archmax.inbound.mail_auth`) on the
   receipt's verdicts, for every mail, the first one of a conversation included. A failing mail to
   an existing session is quarantined; a failing first mail gets the trigger's
   ``unauthenticated_first_mail`` (``quarantine``, the default; ``refuse``: answered nothing;
   ``open``). A local file (``archmax email``) has no verdicts: the operator vouches for it.
3. **Who.** A session that exists (a checkpoint, or firings waiting in its inbox) hears only its
   participants or the holder of its reply token; anyone else is quarantined. A duplicate
   delivery id is no exception: the only mail let through that fails step 2 or 3 is a
   re-delivery of the mail the session's inbox took under that id, from that mail's own sender
   (an SES retry): the no-op it is, since the inbox then de-duplicates it.
4. **De-duplication** is the inbox's and the session's, after admission (a duplicate admits nobody).
5. **Participants** are recorded by :func:`applied`, called once the session took the mail (not a
   duplicate of another sender's): only a mail the session applies makes its sender a participant.

Nothing here writes except :func:`hold` (the quarantine) and :func:`applied` (the participant ledger).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from archmax.engine.deliveries import was_applied
from archmax.engine.firing_rule import refuse_stale_park
from archmax.errors import SessionNotResumableError, UnknownSessionTriggerError
from archmax.hosting.inbox_base import queue_id
from archmax.inbound.mail_auth import (
    DEFAULT_POLICY,
    Verdicts,
    authentication_failure,
    normal_address,
    record_participant,
    reply_token_of,
    speaker_refusal,
)
from archmax.inbound.quarantine import QuarantinedMail
from archmax.inbound.quarantine import hold as hold_in_quarantine
from archmax.inbound.reply_token import ReplyToken
from archmax.session.firing import Firing
from archmax.session.records import park_id_at

MAIL_NAMESPACE = "mail:"
"""The prefix of every session id a mail opens (issue 21 item 3); other channels' ids never start with it."""
FIRST_MAIL_CHOICES = ("quarantine", "refuse", "open")
"""A trigger's ``unauthenticated_first_mail``: what a first mail failing ``mail_auth`` gets."""
DEFAULT_FIRST_MAIL = "quarantine"

Decision = Literal["admit", "quarantine", "refuse"]


def mail_session_id(conversation_id: str) -> str:
    """The id of the session a mail opens: ``mail:`` + the id its trigger's session path yields (kept if already there)."""
    return conversation_id if conversation_id.startswith(MAIL_NAMESPACE) else MAIL_NAMESPACE + conversation_id


def _thread_id(session_id: str) -> str:
    """A session's id without the mail namespace: the thread root a mail session is named after."""
    return session_id.removeprefix(MAIL_NAMESPACE)


class Admission(BaseModel):
    """What :func:`admit` decided for one mail."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    decision: Decision
    """``admit``: hand ``firing`` to the session; ``quarantine``: :func:`hold` it; ``refuse``: answer nothing."""
    session_id: str
    """The session the mail addresses (held there when quarantined)."""
    firing: Firing
    """The mail's firing for that session: ``session_id`` set, ``conversation_id`` the thread's root."""
    reason: str | None = None
    """Why it was not admitted (the verdicts, or who the sender is not); ``None`` when admitted."""
    opens: bool = False
    """True when the session does not exist yet: this mail would open it."""
    redelivery: bool = False
    """True when the session already took this delivery id from this same sender (an SES retry)."""


@dataclass(frozen=True)
class MailDoor:
    """What admission reads: the store, the workflow's routing and triggers, and the host's mail records.

    Attributes:
        store: The session store (``head``, ``get``, ``load``, ``seed``).
        workflow: The agent's ``workflow`` (its ``resolve_session`` applies the trigger's ``session:`` path).
        spec: The workflow spec (``trigger_decl`` gives ``mail_auth`` and ``unauthenticated_first_mail``).
        thread: ``(firing, envelope recipients) -> firing``: a reply to what we sent, pointed at its session
            (:func:`archmax.outbound.config.reply_threader`); identity by default.
        reply_secret: The reply-token secret, or ``None`` (no tokens).
        inbox: The host's inbox, or ``None`` (``archmax email`` applies mail directly): its waiting firings
            make a session exist, and its item under a delivery id tells a re-delivery.
    """

    store: Any
    workflow: Any
    spec: Any
    thread: Callable[[Firing, list[str]], Firing] = field(default=lambda firing, recipients: firing)
    reply_secret: bytes | None = None
    inbox: Any = None


def admit(door: MailDoor, firing: Firing, raw: bytes, *, recipients: Iterable[str] = (),
          verdicts: Verdicts | None = None) -> Admission:  # fmt: skip
    """Decide for one parsed mail: admit, quarantine (with reason) or refuse (module docstring).

    Args:
        door: The collaborators admission reads.
        firing: :func:`~archmax.inbound.email.parse_email`'s firing of the mail (untrusted).
        raw: The raw mail (its ``DKIM-Signature`` domains).
        recipients: The envelope recipients (an SES receipt's), besides the mail's ``To``.
        verdicts: SES's SPF/DKIM/DMARC verdicts; ``None`` for a local file (authentication not checked).

    Returns:
        An :class:`Admission`. Nothing is written.

    Raises:
        InvalidSessionIdError, InvalidSessionPathError, UnknownSessionTriggerError (caller errors: the
        mail names no usable session); SessionNotAwaitingInputError (its reply token names a park that
        is no longer the session's current park, §5.11; nothing written); StoreError (retryable).
    """
    recipients = [r for r in recipients if isinstance(r, str)]
    sender = firing.variables.get("from")
    token = reply_token_of([*recipients, *(firing.variables.get("to") or [])], door.reply_secret)
    token_sid = token.session_id if token is not None else None
    sid, routed, opens = _route(door, firing, recipients, token_sid)
    routed = _answering(door, sid, routed, token)

    def decided(decision: Decision, reason: str | None = None, *, redelivery: bool = False) -> Admission:
        return Admission(decision=decision, session_id=sid, firing=routed, reason=reason, opens=opens,
                         redelivery=redelivery)  # fmt: skip

    decl = door.spec.trigger_decl(firing.trigger or "")
    failure = None
    if verdicts is not None:
        policy = (decl.mail_auth if decl is not None else None) or DEFAULT_POLICY
        failure = authentication_failure(policy, verdicts, sender, raw)
    if opens:
        choice = (decl.unauthenticated_first_mail if decl is not None else None) or DEFAULT_FIRST_MAIL
        if failure is None or choice == "open":
            return decided("admit")
        why = f"{failure}; a first mail must pass it too (the trigger's unauthenticated_first_mail: {choice})"
        return decided("refuse" if choice == "refuse" else "quarantine", why)
    refusal = failure or speaker_refusal(door.store, sid, sender, token_session_id=token_sid)
    if refusal is None:
        return decided("admit")
    if _redelivered(door, sid, firing.delivery_id, sender):  # the no-op it is: the inbox de-duplicates it
        return decided("admit", redelivery=True)
    return decided("quarantine", refusal)


def _route(door: MailDoor, firing: Firing, recipients: list[str], token_sid: str | None) -> tuple[str, Firing, bool]:
    """``(session id, the firing routed there, whether it would open it)`` (step 1 of the module docstring).

    The routed firing keeps the thread's root as ``conversation_id`` (never the namespaced id: the
    outbound reply threads on it) and carries the session id explicitly.
    """
    threaded = door.thread(firing, recipients)
    known = token_sid
    if known is None and threaded.variables.get("conversation_id") != firing.variables.get("conversation_id"):
        known = _routed(door, threaded)  # a reply to a mail we sent
    if known is not None and _exists(door, known):
        sid, source, opens = known, threaded, False
    else:  # a mail opens sessions only in its own namespace
        sid, source = mail_session_id(_routed(door, firing)), firing
        opens = not _exists(door, sid)
    conversation = _thread_id(source.variables.get("conversation_id") or sid)
    variables = {**source.variables, "conversation_id": conversation}
    return sid, source.model_copy(update={"session_id": sid, "variables": variables}), opens


def _answering(door: MailDoor, session_id: str, routed: Firing, token: ReplyToken | None) -> Firing:
    """``routed`` naming the park its reply token names, once that park is the session's current one.

    The stale-park rule of the module docstring (step 1): a token of this session that names a park
    is checked on the session's checkpoint; a token naming no park, or another session, changes nothing.
    A mail whose delivery id the session already applied is a redelivery (an SES retry, the same
    ``.eml`` again), not a late answer: it passes on, naming its park, and the inbox or the session
    answers it ``DuplicateDeliveryError``, as the engine orders the two checks (a duplicate first).

    Raises:
        SessionNotAwaitingInputError: the park is no longer current (the session moved on, finished,
            or is mid-turn); nothing was written.
        StoreError: the checkpoint or a delivery-id marker could not be read.
    """
    if token is None or token.park_version is None or token.session_id != session_id:
        return routed
    park_id = park_id_at(session_id, token.park_version)
    rec = door.store.load(session_id)
    if not (rec is not None and routed.delivery_id and was_applied(door.store, rec, routed.delivery_id)):
        refuse_stale_park(rec, park_id, unparked=True)
    return routed.model_copy(update={"park_id": park_id})


def _routed(door: MailDoor, firing: Firing) -> str:
    """The id the trigger's ``session:`` path (or the assembly's) yields for ``firing``; nothing is written."""
    try:
        return str(door.workflow.resolve_session(trigger=firing.trigger, variables=firing.variables).session_id)
    except SessionNotResumableError as exc:  # mid-turn: it exists
        return str(exc.session_id)
    except UnknownSessionTriggerError as exc:  # about the un-namespaced id: the target session's own check decides
        if exc.session_id is None:
            raise
        return str(exc.session_id)


def _exists(door: MailDoor, session_id: str) -> bool:
    """A checkpoint, or firings already waiting in the inbox to open it (a first mail not yet applied)."""
    if door.store.head(session_id) is not None:
        return True
    if door.inbox is None:
        return False
    return any(i.firing.session_id in (None, session_id) for i in door.inbox.pending(queue_id(session_id)))


def _redelivered(door: MailDoor, session_id: str, delivery_id: str | None, sender: str | None) -> bool:
    """Whether the inbox already took ``delivery_id`` for the session from this very sender (a receipt retried)."""
    if door.inbox is None or not delivery_id or not sender:
        return False
    item = door.inbox.get(queue_id(session_id), delivery_id)
    taken_from = item.firing.variables.get("from") if item is not None else None
    return isinstance(taken_from, str) and normal_address(taken_from) == normal_address(sender)


def hold(store: Any, admission: Admission, raw: bytes, *, delivery_id: str, at: str) -> bool:
    """Keep a quarantined mail in its session's quarantine (:func:`archmax.inbound.quarantine.hold`).

    Args:
        store: The session store.
        admission: A ``quarantine`` decision.
        raw: The raw mail, kept exactly as received.
        delivery_id: A safe file name for it (SES's message id; a local file's hash).
        at: The instant (``YYYY-MM-DDTHH:MM:SS.mmmZ``).

    Returns:
        False when it was held already (a retry).
    """
    held = QuarantinedMail.of(
        admission.firing, session_id=admission.session_id, delivery_id=delivery_id,
        reason=admission.reason or "quarantined", at=at,
    )  # fmt: skip
    return hold_in_quarantine(store, held, raw)


def applied(store: Any, admission: Admission, *, duplicate: bool) -> bool:
    """Record the sender as a participant once the session took the mail; True when recorded.

    Args:
        store: The session store.
        admission: An ``admit`` decision.
        duplicate: Whether the session (or its inbox) answered that it had this delivery id already.
            A duplicate records nobody, unless it is the re-delivery of the sender's own mail.
    """
    sender = admission.firing.variables.get("from")
    if admission.decision != "admit" or not sender or (duplicate and not admission.redelivery):
        return False
    record_participant(store, admission.session_id, sender)
    return True
