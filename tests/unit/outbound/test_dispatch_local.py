"""The local dispatcher: ``.eml`` files or SMTP, each entry sent once, its result recorded once (issue 12 items 1, 2, 4).

Real parts: the filesystem store, an aiosmtpd server on 127.0.0.1, the demo's workflow and script.
A crash is a store that fails the write of the result record once, or a dispatcher that never ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from archmax.clock import FakeClock
from archmax.errors import StoreError
from archmax.inbound.email import parse_email
from archmax.outbound.aliases import FileAliases
from archmax.outbound.config import dispatcher_from_env, reply_threader
from archmax.outbound.dispatch import CLAIM_TTL_S, Dispatcher, sent_path
from archmax.outbound.mime import our_message_id
from archmax.outbound.transports import FileEventWriter, FileMailer, SmtpMailer
from archmax.stores.filesystem import FilesystemStore

from ._mail import CUSTOMER_ID, first_mail, parse_raw, reply_mail, send_mail, support_agent

CLOCK = "2025-01-14T10:00:00.000Z"


class CrashOnRecord:
    """A filesystem store whose next ``crashes`` writes of a result record fail, as a power cut would."""

    def __init__(self, store: FilesystemStore, crashes: int = 1) -> None:
        self._store = store
        self.crashes = crashes

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def outbox_record(self, session_id: str, entry_id: str, outcome: Any, body: str, **kw: Any) -> bool:
        if self.crashes and outcome == "sent":
            self.crashes -= 1
            raise StoreError("the process died before recording the send")
        return self._store.outbox_record(session_id, entry_id, outcome, body, **kw)


@pytest.fixture
def store(tmp_path: Path) -> FilesystemStore:
    return FilesystemStore(tmp_path / "sessions")


def smtp_dispatcher(store, url: str, *, recorder=None) -> Dispatcher:
    return Dispatcher(
        recorder or store,
        mailer=SmtpMailer(url),
        publisher=FileEventWriter(store),
        aliases=FileAliases(store.root),
        sender="Example Shop Support <support@example.com>",
        clock=FakeClock(CLOCK),
    )


def test_the_question_is_written_as_a_threaded_eml_with_our_message_id_recorded_as_an_alias(store):
    clock = FakeClock(CLOCK)
    agent = support_agent(store, outbound=dispatcher_from_env(store, {}, clock=clock), clock=clock)
    send_mail(agent, first_mail())
    record = store.load(CUSTOMER_ID)
    mail, event = record.outbox
    ours = our_message_id(CUSTOMER_ID, record.created_at, mail, "example.com")
    msg = parse_raw(store.get(CUSTOMER_ID, f"outbox/{mail.id}.eml"))
    assert msg["From"] == "support@example.com" and msg["To"] == "dana.rivers@example.org"
    assert msg["Subject"] == "Re: Question about the café grinder"
    assert msg["In-Reply-To"] == f"<{CUSTOMER_ID}>" and msg["References"] == f"<{CUSTOMER_ID}>"
    assert msg["Message-ID"] == f"<{ours}>" and msg["Reply-To"] is None  # no reply secret configured
    assert "Which order is this about?" in msg.get_content()
    assert FileAliases(store.root).get(ours) == CUSTOMER_ID
    sent = json.loads(store.get(CUSTOMER_ID, sent_path(mail)))
    assert sent["transport"] == "file" and sent["message_id"] == ours
    assert Path(sent["where"]).read_bytes() == store.get(CUSTOMER_ID, f"outbox/{mail.id}.eml")  # where it says
    assert store.get(CUSTOMER_ID, f"outbox/{event.id}.event.json") is not None


def test_smtp_gets_the_question_once_with_every_threading_header(store, smtp_server):
    env = {"ARCHMAX_SMTP_URL": smtp_server.url, "ARCHMAX_MAIL_FROM": "Example Shop Support <support@example.com>"}
    clock = FakeClock(CLOCK)
    agent = support_agent(store, outbound=dispatcher_from_env(store, env, clock=clock), clock=clock)
    send_mail(agent, first_mail())
    ((mail_from, rcpt, raw),) = smtp_server.messages
    assert mail_from == "support@example.com" and rcpt == ["dana.rivers@example.org"]
    msg = parse_raw(raw)
    assert msg["From"] == "Example Shop Support <support@example.com>"
    assert msg["In-Reply-To"] == f"<{CUSTOMER_ID}>" and msg["Subject"].startswith("Re: ")
    record = store.load(CUSTOMER_ID)
    assert store.get(CUSTOMER_ID, f"outbox/{record.outbox[0].id}.eml") is None  # SMTP, not a file
    assert b'"transport": "smtp"' in store.get(CUSTOMER_ID, sent_path(record.outbox[0]))


def test_a_crash_between_commit_and_send_is_sent_once_by_the_next_dispatch(store, smtp_server):
    send_mail(support_agent(store, outbound=False), first_mail())  # committed; the process died before sending
    assert smtp_server.messages == []
    dispatcher = smtp_dispatcher(store, smtp_server.url)
    record = store.load(CUSTOMER_ID)
    assert [s.kind for s in dispatcher.dispatch(record)] == ["email", "event"]
    assert dispatcher.dispatch(record) == []  # a redelivery (a second sweep, a retried batch) sends nothing
    assert len(smtp_server.messages) == 1


def test_a_send_that_failed_during_the_operation_does_not_fail_it_and_is_retried(store, smtp_server):
    events: list[dict] = []
    down = smtp_dispatcher(store, "smtp://127.0.0.1:9")  # nothing listens: connection refused
    outcome = send_mail(support_agent(store, outbound=down, on_event=events.append), first_mail())
    assert outcome.kind == "parked"
    assert any(e["type"] == "warning" and e["scope"] == "outbound" for e in events)
    record = store.load(CUSTOMER_ID)
    assert store.get(CUSTOMER_ID, sent_path(record.outbox[0])) is None
    smtp_dispatcher(store, smtp_server.url).dispatch(record)
    assert len(smtp_server.messages) == 1


def test_a_crash_between_send_and_record_resends_once_under_the_same_message_id_after_the_claim_expires(
    store, smtp_server
):
    send_mail(support_agent(store, outbound=False), first_mail())
    record = store.load(CUSTOMER_ID)
    crashing = smtp_dispatcher(store, smtp_server.url, recorder=CrashOnRecord(store))
    with pytest.raises(StoreError):
        crashing.dispatch(record)
    assert len(smtp_server.messages) == 1 and store.get(CUSTOMER_ID, sent_path(record.outbox[0])) is None
    smtp_dispatcher(store, smtp_server.url).dispatch(record)  # the dead sender's claim still holds the mail
    assert len(smtp_server.messages) == 1
    later = smtp_dispatcher(store, smtp_server.url)
    later.clock = FakeClock(CLOCK)
    later.clock.advance(seconds=CLAIM_TTL_S + 1)
    later.dispatch(record)
    later.dispatch(record)
    assert len(smtp_server.messages) == 2  # the documented window: at most two ...
    first, second = (parse_raw(raw) for _, _, raw in smtp_server.messages)
    assert first["Message-ID"] == second["Message-ID"]  # ... carrying one Message-ID, shown once


def test_the_eml_transport_has_no_duplicate_window(store):
    send_mail(support_agent(store, outbound=False), first_mail())
    record = store.load(CUSTOMER_ID)
    recorder = CrashOnRecord(store)
    crashing = Dispatcher(
        recorder,
        mailer=FileMailer(store),
        publisher=FileEventWriter(store),
        aliases=FileAliases(store.root),
        clock=FakeClock(CLOCK),
    )
    with pytest.raises(StoreError):
        crashing.dispatch(record)
    dispatcher_from_env(store, {}).dispatch(record)
    assert [p for p in store.list_files(CUSTOMER_ID, "outbox") if p.endswith(".eml")] == [
        f"outbox/{record.outbox[0].id}.eml"
    ]


def test_a_reply_threaded_only_to_our_message_id_resumes_the_session(store):
    clock = FakeClock(CLOCK)
    agent = support_agent(store, outbound=dispatcher_from_env(store, {}, clock=clock), clock=clock)
    send_mail(agent, first_mail())
    record = store.load(CUSTOMER_ID)
    ours = parse_raw(store.get(CUSTOMER_ID, f"outbox/{record.outbox[0].id}.eml"))["Message-ID"]
    reply = parse_email(reply_mail(In_Reply_To=ours))  # no References: the client kept only In-Reply-To
    assert reply.variables["conversation_id"] == ours.strip("<>")  # headers alone: a new conversation
    threaded = reply_threader(store, {})(reply, ())
    assert threaded.variables["conversation_id"] == CUSTOMER_ID
    outcome = send_mail(agent, threaded)
    assert (outcome.session_id, outcome.disposition, outcome.kind) == (CUSTOMER_ID, "deliver", "completed")
    answer = store.load(CUSTOMER_ID).outbox[-2]
    assert answer.in_reply_to == "dana-reply-1@example.org" and ours.strip("<>") in answer.references


def test_a_reply_to_an_id_we_never_sent_under_is_not_rethreaded(store):
    send_mail(support_agent(store, outbound=dispatcher_from_env(store, {})), first_mail())
    reply = parse_email(reply_mail(In_Reply_To="<1.0.guessed@example.com>"))
    assert reply_threader(store, {})(reply, ()) == reply


SECRET = {"ARCHMAX_REPLY_SECRET": "a-reply-secret-of-32-characters!"}


def _parked_with_reply_to(store):
    clock = FakeClock(CLOCK)
    agent = support_agent(store, outbound=dispatcher_from_env(store, SECRET, clock=clock), clock=clock)
    send_mail(agent, first_mail())
    record = store.load(CUSTOMER_ID)
    return agent, parse_raw(store.get(CUSTOMER_ID, f"outbox/{record.outbox[0].id}.eml"))["Reply-To"]


def test_with_a_reply_secret_the_mail_carries_a_signed_reply_to_of_the_inbox_address(store):
    from archmax.inbound.reply_token import verify

    _, reply_to = _parked_with_reply_to(store)
    local, _, domain = reply_to.partition("@")
    base, _, token = local.partition("+")
    assert (base, domain) == ("support", "example.com")
    assert verify(token, SECRET["ARCHMAX_REPLY_SECRET"].encode()) == CUSTOMER_ID


def test_a_reply_with_no_threading_headers_finds_the_session_through_the_signed_reply_to_alone(store):
    agent, reply_to = _parked_with_reply_to(store)
    reply = parse_email(reply_mail(to=reply_to))  # the client dropped In-Reply-To and References
    assert reply.variables["conversation_id"] == "dana-reply-1@example.org"
    threaded = reply_threader(store, SECRET)(reply, ())
    assert threaded.variables["conversation_id"] == CUSTOMER_ID
    outcome = send_mail(agent, threaded)
    assert (outcome.session_id, outcome.disposition, outcome.kind) == (CUSTOMER_ID, "deliver", "completed")


def test_a_forged_or_foreign_token_threads_nothing_and_the_session_stays_parked(store):
    from archmax.inbound.reply_token import sign

    agent, reply_to = _parked_with_reply_to(store)
    local, _, domain = reply_to.partition("@")
    tampered = local[:-1] + ("a" if local[-1] != "a" else "b")
    foreign = "support+" + sign(CUSTOMER_ID, b"someone-else's-secret-32-bytes!!")
    threader = reply_threader(store, SECRET)
    for address in (f"{tampered}@{domain}", f"{foreign}@{domain}"):
        reply = threader(parse_email(reply_mail(to=address)), ())
        assert reply.variables["conversation_id"] == "dana-reply-1@example.org"  # its own, new conversation
    assert store.load(CUSTOMER_ID).status == "awaiting_input"
    # and the envelope recipients of an SES receipt are read the same way
    assert threader(parse_email(reply_mail()), [reply_to]).variables["conversation_id"] == CUSTOMER_ID
