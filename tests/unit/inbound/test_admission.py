"""archmax.inbound.admission directly: issue 21 items 1, 3 and 4 over the memory store and inbox.

Each test asserts the attacker's side (quarantined or refused, not a participant, the session
unchanged) and Dana's (her mail is admitted and she becomes a participant once it was taken).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax import create_agent
from archmax.hosting.host import Host
from archmax.hosting.inbox import MemoryInbox
from archmax.inbound.admission import Admission, MailDoor, admit, applied, hold, mail_session_id
from archmax.inbound.email import parse_email
from archmax.inbound.mail_auth import Verdicts, is_participant
from archmax.inbound.quarantine import listing
from archmax.inbound.reply_token import reply_address
from archmax.models.scripted import ScriptedModel
from archmax.stores.memory import MemoryStore

SUPPORT_INBOX = Path(__file__).resolve().parents[3] / "examples" / "workflows" / "support-inbox"
SECRET = b"reply-token-secret-for-tests-0001"
FIRST = "first-1@example.org"
DANA_SID = f"mail:{FIRST}"
PARK = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
]
PASS = Verdicts(spf="PASS", dkim="PASS", dmarc="PASS")
FAIL = Verdicts(spf="FAIL", dkim="FAIL", dmarc="FAIL")


def mail(sender: str, *, msg_id: str, thread: str | None = None, to: str = "support@example.com",
         body: str = "Where is my order?") -> bytes:  # fmt: skip
    lines = [f"From: {sender}", f"To: {to}", "Subject: Order", f"Message-ID: <{msg_id}>"]
    if thread:
        lines += [f"In-Reply-To: <{thread}>", f"References: <{thread}>"]
    return ("\r\n".join([*lines, "Content-Type: text/plain; charset=utf-8", "", body, ""])).encode()


class Desk:
    """One support inbox over memory: the host, and the admission door as the SES handler builds it."""

    def __init__(self, script: list[dict[str, Any]], *, drain: bool = True) -> None:
        self.agent = create_agent(SUPPORT_INBOX, MemoryStore(), ScriptedModel(script))
        self.store = self.agent.store
        self.host = Host(self.agent, MemoryInbox(), waker=None if drain else (lambda sid: None))
        self.door = MailDoor(store=self.store, workflow=self.agent.workflow, spec=self.agent.spec,
                             reply_secret=SECRET, inbox=self.host.inbox)  # fmt: skip

    def admit(self, raw: bytes, verdicts: Verdicts | None = PASS, recipients: tuple[str, ...] = ()) -> Admission:
        return admit(self.door, parse_email(raw), raw, recipients=recipients, verdicts=verdicts)

    def take(self, admission: Admission, *, note: bool = True) -> Any:
        """What the SES handler does with an admitted mail: inbox it, then (``note``) record its sender."""
        assert admission.decision == "admit", admission.reason
        accepted = self.host.accept(admission.firing, session_id=admission.session_id)
        if note:
            applied(self.store, admission, duplicate=accepted.duplicate)
        return accepted

    def participant(self, sid: str, address: str) -> bool:
        return is_participant(self.store, sid, None, address)


@pytest.fixture
def desk() -> Desk:
    """Dana's authenticated first mail opened ``mail:first-1@example.org``, which parked."""
    d = Desk(PARK * 3)
    d.take(d.admit(mail("Dana <dana@customer.example>", msg_id=FIRST)))
    assert d.agent.sessions.get(DANA_SID).status == "awaiting_input"
    assert d.participant(DANA_SID, "dana@customer.example")
    return d


# ---- item 1


def test_a_stranger_with_the_threads_first_message_id_is_quarantined_before_any_de_duplication(desk: Desk) -> None:
    copycat = desk.admit(mail("mallory@evil.example", msg_id=FIRST))
    assert copycat.decision == "quarantine" and copycat.session_id == DANA_SID
    assert "not a participant" in (copycat.reason or "") and not copycat.redelivery
    assert not applied(desk.store, copycat, duplicate=True) and not desk.participant(DANA_SID, "mallory@evil.example")
    assert desk.admit(mail("dana@customer.example", msg_id="r1@customer.example", thread=FIRST)).decision == "admit"


def test_a_duplicate_the_session_already_had_makes_nobody_a_participant(desk: Desk) -> None:
    address = reply_address("support@example.com", DANA_SID, SECRET)  # Carol holds a valid reply token
    carol = desk.admit(mail("carol@partner.example", msg_id=FIRST, to=address))
    assert carol.decision == "admit"
    version = desk.store.load(DANA_SID).version
    assert desk.take(carol).duplicate is True
    assert desk.store.load(DANA_SID).version == version and not desk.participant(DANA_SID, "carol@partner.example")


def test_the_redelivery_of_danas_mail_whose_participant_note_was_lost_is_admitted_and_notes_her() -> None:
    d = Desk(PARK, drain=False)  # inboxed, not applied yet: the session has not mailed her either
    d.take(d.admit(mail("Dana <dana@customer.example>", msg_id=FIRST)), note=False)  # stopped before the note
    assert not d.participant(DANA_SID, "dana@customer.example")
    forged = d.admit(mail("mallory@evil.example", msg_id=FIRST))
    assert forged.decision == "quarantine" and not forged.redelivery
    retry = d.admit(mail("Dana <dana@customer.example>", msg_id=FIRST))
    assert retry.decision == "admit" and retry.redelivery
    assert d.take(retry).duplicate is True and d.participant(DANA_SID, "dana@customer.example")


def test_a_session_whose_first_mail_still_waits_in_the_inbox_already_hears_only_participants() -> None:
    d = Desk(PARK * 2, drain=False)
    d.take(d.admit(mail("dana@customer.example", msg_id=FIRST)))
    assert d.store.head(DANA_SID) is None and d.host.inbox.pending(DANA_SID)  # not applied yet
    early = d.admit(mail("mallory@evil.example", msg_id="m1@evil.example", thread=FIRST))
    assert early.decision == "quarantine" and not early.opens
    assert d.admit(mail("dana@customer.example", msg_id="r1@customer.example", thread=FIRST)).decision == "admit"


# ---- item 3


def test_mail_minted_ids_live_in_their_own_namespace(desk: Desk) -> None:
    desk.agent.workflow.send("order-1234", "Where is my order?", trigger="email_received")  # another channel's id
    version = desk.store.load("order-1234").version
    claim = desk.admit(mail("mallory@evil.example", msg_id="order-1234"))
    assert claim.session_id == "mail:order-1234" and claim.opens and claim.decision == "admit"
    assert claim.firing.session_id == "mail:order-1234" and claim.firing.variables["conversation_id"] == "order-1234"
    reply = desk.admit(mail("mallory@evil.example", msg_id="m2@evil.example", thread="order-1234"))
    assert reply.session_id == "mail:order-1234"
    assert desk.store.load("order-1234").version == version
    assert not desk.participant("order-1234", "mallory@evil.example")
    # the reply token order-1234 signed is how a mail reaches it
    address = reply_address("support@example.com", "order-1234", SECRET)
    dana = desk.admit(mail("dana@customer.example", msg_id="d1@customer.example", to=address))
    assert dana.session_id == "order-1234" and dana.decision == "admit" and not dana.opens
    assert mail_session_id("mail:x@y") == "mail:x@y" and mail_session_id("x@y") == "mail:x@y"


def test_a_token_for_a_session_that_does_not_exist_opens_only_a_mail_session(desk: Desk) -> None:
    address = reply_address("support@example.com", "order-77", SECRET)
    admission = desk.admit(mail("dana@customer.example", msg_id="n1@customer.example", to=address))
    assert admission.session_id == "mail:n1@customer.example" and admission.opens


# ---- item 4


def test_an_unauthenticated_first_mail_is_quarantined_and_held_where_its_session_would_be() -> None:
    d = Desk(PARK)
    raw = mail("ceo@bank.example", msg_id="ceo-1@bank.example")
    forged = d.admit(raw, FAIL)
    assert forged.decision == "quarantine" and forged.opens
    assert "unauthenticated_first_mail: quarantine" in (forged.reason or "")
    assert hold(d.store, forged, raw, delivery_id="ses-ceo", at="2026-01-01T00:00:00.000Z")
    assert [m.sender for m in listing(d.store, forged.session_id)] == ["ceo@bank.example"]
    assert d.store.head(forged.session_id) is None and not d.participant(forged.session_id, "ceo@bank.example")
    assert not applied(d.store, forged, duplicate=False)
    dana = d.admit(mail("dana@customer.example", msg_id=FIRST), PASS)
    assert dana.decision == "admit" and dana.opens


def test_a_local_file_has_no_verdicts_and_the_operator_vouches_for_it() -> None:
    d = Desk(PARK)
    assert d.admit(mail("ceo@bank.example", msg_id="ceo-2@bank.example"), None).decision == "admit"


def test_a_reply_under_a_trigger_no_state_declares_still_reaches_its_mail_session() -> None:
    d = Desk(PARK)
    d.agent = create_agent(SUPPORT_INBOX, d.store, ScriptedModel(PARK), session_path="conversation_id")
    d.host = Host(d.agent, d.host.inbox)
    d.door = MailDoor(store=d.store, workflow=d.agent.workflow, spec=d.agent.spec, inbox=d.host.inbox)
    d.take(d.admit(mail("dana@customer.example", msg_id=FIRST)))
    raw = mail("dana@customer.example", msg_id="r2@customer.example", thread=FIRST, body="It's ORD-1001.")
    admission = admit(d.door, parse_email(raw, trigger="webmail_reply"), raw, verdicts=PASS)
    assert admission.session_id == DANA_SID and admission.decision == "admit"
    assert d.take(admission).disposition == "resume"  # a delivery into the park matches no trigger


def test_unauthenticated_first_mail_is_declared_on_a_trigger_and_checked() -> None:
    from archmax.errors import WorkflowSpecError
    from archmax.spec import workflow_from_dict

    def load(decl: dict[str, Any]) -> Any:
        return workflow_from_dict({"states": {"a": {"triggers": {"mail": decl}}}}, "wf")

    wf = load({"mail_auth": "dmarc", "unauthenticated_first_mail": "refuse"})
    assert wf.trigger_decl("mail").unauthenticated_first_mail == "refuse" and not wf.warnings
    assert load({}).trigger_decl("mail").unauthenticated_first_mail is None  # the default: quarantine
    with pytest.raises(WorkflowSpecError) as info:
        load({"unauthenticated_first_mail": "bounce"})
    assert "states.a.triggers.mail.unauthenticated_first_mail" in str(info.value)
