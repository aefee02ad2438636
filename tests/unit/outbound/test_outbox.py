"""The outbox a turn-ending commit records (issue 12 item 1; DESIGN.md §3 "The change stream")."""

from __future__ import annotations

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.inbound.email import parse_email
from archmax.models.scripted import ScriptedModel
from archmax.outbound.outbox import record_outbox
from archmax.session.records import OUTBOX_KEPT, Checkpoint, Message, OutboxEntry, SessionStatus, Variable
from archmax.spec import workflow_from_dict

from ._mail import CUSTOMER_ID, first_mail, reply_mail, send_mail, support_agent

CHAT = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "chat")


def test_a_park_on_an_email_records_the_threaded_question_and_a_parked_event_in_the_same_commit():
    store = MemoryStore()
    outcome = send_mail(support_agent(store), first_mail())
    assert outcome.kind == "parked"
    record = store.load(CUSTOMER_ID)
    mail, event = record.outbox
    assert (mail.version, mail.index, mail.id) == (record.version, 0, f"{record.version:010d}-0")
    assert mail.kind == "email" and mail.detail_type == "Session Parked"
    assert mail.to == ["dana.rivers@example.org"] and mail.inbox == "support@example.com"
    assert mail.subject == "Re: Question about the café grinder"
    assert mail.in_reply_to == CUSTOMER_ID and mail.references == [CUSTOMER_ID]
    assert mail.text == outcome.reply and "Which order is this about?" in mail.text
    assert (event.kind, event.index, event.version) == ("event", 1, record.version)
    assert event.detail == {
        "session_id": CUSTOMER_ID,
        "workflow": "support-inbox",
        "status": "awaiting_input",
        "state": "clarify",
        "channel": "input",
        "reason": "the customer's order number",
        "resume_at": None,
        "text": outcome.reply,
        "exit": None,
        "version": record.version,
        "park_id": outcome.park_id,  # the park a late answer may name (BEHAVIOUR.md §5.11)
    }
    assert outcome.park_id == record.park_id


def test_the_answer_after_a_reply_threads_on_the_reply_and_keeps_the_question_entries():
    store = MemoryStore()
    agent = support_agent(store)
    send_mail(agent, first_mail())
    parked = store.load(CUSTOMER_ID)
    reply = parse_email(reply_mail(In_Reply_To="<q-1@example.com>", References=f"<{CUSTOMER_ID}> <q-1@example.com>"))
    outcome = send_mail(agent, reply)
    assert outcome.kind == "completed"
    record = store.load(CUSTOMER_ID)
    assert record.outbox[:2] == parked.outbox  # the question's entries stay until they age out
    mail, event = record.outbox[2:]
    assert mail.version == record.version and mail.in_reply_to == "dana-reply-1@example.org"
    assert mail.references == [CUSTOMER_ID, "q-1@example.com", "dana-reply-1@example.org"]
    assert "ORD-1001" in mail.text
    assert event.detail_type == "Session Completed" and event.detail["exit"] == {"success": True}
    assert event.detail["state"] == "answer" and event.detail["channel"] is None


def test_a_session_not_started_by_mail_records_only_the_lifecycle_event():
    store = MemoryStore()
    agent = create_agent(CHAT, store, ScriptedModel([{"say": "Hello!"}]), outbound=False, clock=FakeClock())
    agent.workflow.send("chat-1", "hi")
    (event,) = store.load("chat-1").outbox
    assert event.kind == "event" and event.detail_type == "Session Completed" and event.text == "Hello!"


def test_a_failure_mails_its_reason_and_its_event_carries_the_exit():
    store = MemoryStore()
    raising = ScriptedModel(
        [{"call": {"archmax_raise": {"code": "orders-down", "reason": "Our order system is down."}}}]
    )
    agent = create_agent(CHAT, store, raising, outbound=False, clock=FakeClock())
    firing = first_mail()
    agent.workflow.send("m-1", firing.message, variables=firing.variables)
    mail, event = store.load("m-1").outbox
    assert mail.kind == "email" and mail.detail_type == "Session Failed" and mail.text == "Our order system is down."
    assert event.detail["exit"] == {"success": False, "code": "orders-down", "reason": "Our order system is down."}
    assert event.detail["reason"] == "Our order system is down."


def test_a_rejection_mails_nothing_and_its_event_names_the_reason():
    store = MemoryStore()
    doc = {"states": {"chat": {"triggers": {"manual": None}, "budget": {"maxTurns": 1}}}}
    looping = ScriptedModel([{"call": {"archmax_get_variables": {}}}])
    agent = create_agent(workflow_from_dict(doc, "chat"), store, looping, outbound=False, clock=FakeClock())
    firing = first_mail()
    outcome = agent.workflow.send("m-2", firing.message, variables=firing.variables)
    assert outcome.kind == "rejected"
    (event,) = store.load("m-2").outbox
    assert event.kind == "event" and event.detail_type == "Session Rejected"
    assert event.detail["reason"] == outcome.rejected and "maxTurns" in outcome.rejected


def test_a_record_still_running_records_nothing_and_a_retried_commit_replaces_its_own_version():
    record = Checkpoint(session_id="s", workflow="w", version=3, created_at="x", updated_at="x")
    assert record_outbox(record, 0) == [] and record.outbox == []
    record.status = SessionStatus.COMPLETED
    first = record_outbox(record, 0)
    again = record_outbox(record, 0)
    assert [e.id for e in record.outbox] == [e.id for e in again] == [e.id for e in first] == ["0000000003-0"]


def test_no_count_pushes_an_unsent_entry_out_of_the_outbox():
    store = MemoryStore()
    agent = create_agent(
        CHAT,
        store,
        ScriptedModel([{"say": f"answer {i}"} for i in range(OUTBOX_KEPT + 3)]),
        outbound=False,
        clock=FakeClock(),
    )
    for i in range(OUTBOX_KEPT + 3):
        agent.workflow.send("chat-2", f"question {i}")
    outbox = store.load("chat-2").outbox
    assert [e.text for e in outbox] == [f"answer {i}" for i in range(OUTBOX_KEPT + 3)]  # nothing sent: all stay


def test_entries_sent_after_each_turn_leave_the_outbox_once_it_grows_past_the_count():
    from archmax.outbound.config import dispatcher_from_env

    store = MemoryStore()
    agent = create_agent(
        CHAT,
        store,
        ScriptedModel([{"say": f"answer {i}"} for i in range(OUTBOX_KEPT + 3)]),
        outbound=dispatcher_from_env(store, {}),
        clock=FakeClock(),
    )
    for i in range(OUTBOX_KEPT + 3):
        agent.workflow.send("chat-3", f"question {i}")
    outbox = store.load("chat-3").outbox
    # the 11th entry's commit found the first ten sent and dropped them all; two more followed
    assert [e.text for e in outbox] == [f"answer {i}" for i in range(OUTBOX_KEPT, OUTBOX_KEPT + 3)]


def _completed(version: int) -> Checkpoint:
    record = Checkpoint(
        session_id="s", workflow="w", version=version, created_at="x", updated_at="x", status=SessionStatus.COMPLETED
    )
    record.messages = [Message(role="assistant", content=f"answer {version}")]
    return record


def test_only_entries_known_sent_leave_the_outbox():
    record = _completed(1)
    last = OUTBOX_KEPT + 6
    for version in range(1, last):
        record.version = version
        record_outbox(record, 0, settled=lambda e: e.version % 2 == 0)  # even versions were sent
    versions = [e.version for e in record.outbox]
    assert {v for v in range(1, last) if v % 2} <= set(versions)  # every unsent entry stays
    assert versions == sorted(versions) and versions[-1] == last - 1
    assert len(versions) < last - 1  # sent ones left


def test_the_settled_question_is_asked_once_per_outbox_kept_entries_when_the_sender_keeps_up():
    """Dropping every settled entry at once keeps the listing rare: one per OUTBOX_KEPT turns, not one per turn."""
    record = _completed(1)
    asked: set[int] = set()

    def settled(entry: OutboxEntry) -> bool:
        asked.add(record.version)  # the commit that asked
        return entry.version < record.version  # the sender sent every earlier commit's entries

    turns = 5 * OUTBOX_KEPT
    for version in range(1, turns + 1):
        record.version = version
        record_outbox(record, 0, settled=settled)
        assert len(record.outbox) <= OUTBOX_KEPT
    assert 0 < len(asked) <= turns // OUTBOX_KEPT


def test_a_commit_that_knows_nothing_sent_drops_nothing():
    record = _completed(1)
    for version in range(1, 3 * OUTBOX_KEPT):
        record.version = version
        record_outbox(record, 0)
    assert [e.version for e in record.outbox] == list(range(1, 3 * OUTBOX_KEPT))


def test_a_subject_with_line_breaks_cannot_break_the_reply_headers():
    record = Checkpoint(
        session_id="s", workflow="w", version=2, created_at="x", updated_at="x", status=SessionStatus.COMPLETED
    )
    record.variables = {
        "from": Variable(value="a@example.org"),
        "message_id": Variable(value="m@example.org"),
        "subject": Variable(value="Hi\r\nBcc: victim@example.net"),
    }
    record.messages = [Message(role="assistant", content="Done.")]
    mail = record_outbox(record, 0)[0]
    assert mail.subject == "Re: Hi Bcc: victim@example.net"
