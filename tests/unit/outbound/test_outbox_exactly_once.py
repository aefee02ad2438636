"""Every committed outbox entry is sent exactly once, locally (issue 20 items 1-5).

Real parts: the filesystem store, an aiosmtpd server on 127.0.0.1 (one that can hold a DATA
command open, as a slow server does), the SMTP and event-file transports and the host's sweep.
SMTP is "down" while the dispatcher points at a port nothing listens on.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.hosting.host import Host
from archmax.hosting.inbox import FilesystemInbox
from archmax.models.scripted import ScriptedModel
from archmax.outbound.aliases import FileAliases
from archmax.outbound.dispatch import Dispatcher, failed_path, sent_path
from archmax.outbound.transports import FileEventWriter, SmtpMailer
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore

from ._mail import parse_raw

CLOCK = "2025-01-14T10:00:00.000Z"
FROM = "Example Shop Support <support@example.com>"
DOWN = "smtp://127.0.0.1:9"  # nothing listens: connection refused
SID = "m-1@example.org"

ASKING = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "asking")
REVIEWED_DOC = {
    "states": {
        "chat": {
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "A person approves."}],
        },
        "review": {"type": "human", "transitions": [{"to": "done", "description": "Approved.", "type": "approve"}]},
        "done": None,
    }
}
REVIEWED = workflow_from_dict(REVIEWED_DOC, "reviewed")


def mail_variables(n: int = 1, *, to: list[str] | None = None) -> dict[str, Any]:
    """What ``archmax email`` seeds for Dana's n-th mail of the conversation."""
    return {
        "from": "dana.rivers@example.org",
        "message_id": f"m-{n}@example.org",
        "to": ["support@example.com"] if to is None else to,
        "subject": "My order",
        "conversation_id": SID,
    }


@pytest.fixture
def store(tmp_path: Path) -> FilesystemStore:
    return FilesystemStore(tmp_path / "sessions")


def dispatcher(
    store: FilesystemStore, url: str, *, sender: str | None = FROM, clock: FakeClock | None = None
) -> Dispatcher:
    return Dispatcher(
        store,
        mailer=SmtpMailer(url, timeout_s=5),
        publisher=FileEventWriter(store),
        aliases=FileAliases(store.root),
        sender=sender,
        clock=clock or FakeClock(CLOCK),
    )


def agent_of(store, workflow, script, outbound, clock=None):
    return create_agent(workflow, store, ScriptedModel(script), outbound=outbound, clock=clock or FakeClock(CLOCK))


def events_of(store, sid: str) -> list[str]:
    return [p for p in store.list_files(sid, "outbox") if p.endswith(".event.json")]


def message_ids(sink) -> list[str]:
    return [parse_raw(raw)["Message-ID"] for _, _, raw in sink.messages]


# ---------------------------------------------------------------- item 1: a burst or an outage drops nothing


def test_an_smtp_outage_over_seven_questions_loses_none_of_the_eight_questions_or_events(store, smtp_server):
    script = [{"say": f"Question {i}?", "call": {"archmax_wait": {"reason": f"answer {i}"}}} for i in range(8)]
    down = agent_of(store, ASKING, script, dispatcher(store, DOWN))
    down.workflow.send(SID, "Hello", variables=mail_variables(1))
    for i in range(1, 7):
        assert (
            down.workflow.deliver(SID, trigger="reply", message=f"Reply {i}", variables=mail_variables(i + 1)).kind
            == "parked"
        )
    assert smtp_server.messages == []
    up = agent_of(store, ASKING, script[7:], dispatcher(store, smtp_server.url))
    assert up.workflow.deliver(SID, trigger="reply", message="Reply 7", variables=mail_variables(8)).kind == "parked"
    bodies = [parse_raw(raw).get_content() for _, _, raw in smtp_server.messages]
    assert sorted(b.strip() for b in bodies) == sorted(f"Question {i}?" for i in range(8))
    assert len(set(message_ids(smtp_server))) == 8
    assert len(events_of(store, SID)) == 8  # every `Session Parked` event too


# ---------------------------------------------------------------- item 2: the sweep sends what nobody sent


def _park_at_review(store, outbound) -> Any:
    script = [
        {"call": {"archmax_advance": {"to": "review", "reason": "needs approval"}}},
        {"say": "Please approve the refund."},
        {"say": "Approved: your refund is on its way."},
    ]
    agent = agent_of(store, REVIEWED, script, outbound)
    assert agent.workflow.send(SID, "Refund, please", variables=mail_variables()).parked_channel == "decision"
    return agent


def test_an_answer_committed_while_smtp_was_down_is_mailed_once_by_the_sweep_even_for_a_finished_session(
    store, smtp_server, tmp_path
):
    agent = _park_at_review(store, dispatcher(store, smtp_server.url))
    agent.runtime.outbound = dispatcher(store, DOWN)
    assert agent.workflow.decide(SID, to="done").kind == "completed"
    assert len(smtp_server.messages) == 1  # the handoff only; the answer waits
    agent.runtime.outbound = dispatcher(store, smtp_server.url)  # SMTP is back
    host = Host(agent, FilesystemInbox(tmp_path / "inbox"))
    host.sweep()
    host.sweep()
    assert len(smtp_server.messages) == 2
    assert "refund is on its way" in parse_raw(smtp_server.messages[1][2]).get_content()
    assert len(events_of(store, SID)) == 2


def test_entries_of_a_process_that_died_right_after_its_commit_are_sent_by_the_sweep(store, smtp_server, tmp_path):
    _park_at_review(store, False)  # committed; the process died before sending anything
    host = Host(agent_of(store, REVIEWED, [], dispatcher(store, smtp_server.url)), FilesystemInbox(tmp_path / "inbox"))
    host.sweep()
    host.sweep()
    (message,) = smtp_server.messages
    assert "Please approve the refund." in parse_raw(message[2]).get_content()
    assert len(events_of(store, SID)) == 1


def test_archmax_sweep_mails_the_answer_smtp_refused_once_smtp_is_back(
    store, smtp_server, tmp_path, monkeypatch, capsys
):
    import yaml

    from archmax.cli.main import main

    folder = tmp_path / "workspace" / "workflows" / "reviewed"
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_text(yaml.safe_dump(REVIEWED_DOC))
    agent = _park_at_review(store, dispatcher(store, smtp_server.url))
    agent.runtime.outbound = dispatcher(store, DOWN)
    assert agent.workflow.decide(SID, to="done").kind == "completed"
    assert len(smtp_server.messages) == 1
    monkeypatch.setenv("ARCHMAX_SMTP_URL", smtp_server.url)
    monkeypatch.setenv("ARCHMAX_MAIL_FROM", FROM)
    flags = ["--root", str(tmp_path / "workspace"), "--store", str(store.root)]
    assert main([*flags, "sweep"]) == 0
    assert f"outbox: {SID}  sent" in capsys.readouterr().err  # stdout stays §11's wake-up lines
    assert main([*flags, "sweep"]) == 0
    assert len(smtp_server.messages) == 2
    assert "refund is on its way" in parse_raw(smtp_server.messages[1][2]).get_content()


# ---------------------------------------------------------------- item 3: two live operations, one send


class HeldSmtp:
    """An SMTP sink whose first DATA is held open until ``release`` (a slow server), the others taken at once."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.messages: list[tuple[str, list[str], bytes]] = []
        self.holding = threading.Event()
        self._release = threading.Event()

    @property
    def url(self) -> str:
        return f"smtp://{self.host}:{self.port}"

    def release(self) -> None:
        self._release.set()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if not self.holding.is_set():
            self.holding.set()
            await asyncio.to_thread(self._release.wait, 10)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content)))
        return "250 OK"


@pytest.fixture
def held_smtp():
    from aiosmtpd.controller import Controller

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = HeldSmtp("127.0.0.1", port)
    controller = Controller(sink, hostname=sink.host, port=sink.port)
    controller.start()
    try:
        yield sink
    finally:
        sink.release()
        controller.stop()


def test_a_reply_held_in_smtp_data_while_decide_dispatches_the_outbox_goes_out_once(store, held_smtp):
    script = [
        {"call": {"archmax_advance": {"to": "review", "reason": "needs approval"}}},
        {"say": "Please approve the refund."},
        {"say": "A person is looking at it now."},  # the answer to the message at the decision park
        {"say": "Approved: your refund is on its way."},
    ]
    agent = agent_of(store, REVIEWED, script, False)
    agent.workflow.send(SID, "Refund, please", variables=mail_variables())
    agent.runtime.outbound = dispatcher(store, held_smtp.url)
    replying = threading.Thread(target=agent.workflow.reply, args=(SID, "Any news?"))
    replying.start()
    assert held_smtp.holding.wait(10), "the reply's mail never reached DATA"
    assert agent.workflow.decide(SID, to="done").kind == "completed"
    held_smtp.release()
    replying.join(10)
    ids = message_ids(held_smtp)
    assert len(ids) == len(set(ids)) == 3  # the handoff, the reply, the answer: each once
    assert len(events_of(store, SID)) == 3


# ---------------------------------------------------------------- item 4: an answer through a child is mailed

LOOKUP = {
    "states": {
        "find": {"triggers": {"manual": None}, "transitions": [{"to": "review", "description": "Approve."}]},
        "review": {"type": "human", "transitions": [{"to": "approved", "description": "Approved.", "type": "approve"}]},
        "approved": None,
    }
}


def test_a_message_to_a_caller_parked_at_its_childs_decision_is_answered_by_mail(store, smtp_server, tmp_path):
    script = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"call": {"archmax_advance": {"to": "review", "reason": "a refund of 40 EUR"}}},  # the child
        {"say": "Please approve the 40 EUR refund."},  # the child's handoff
        {"say": "Your refund is waiting for approval."},  # the child's answer to the person's message
    ]
    agent = _caller_agent(tmp_path, store, script, dispatcher(store, smtp_server.url))
    parked = agent.workflow.send(SID, "Refund ORD-7, please.", variables=mail_variables())
    assert parked.parked_channel == "decision"
    before = len(smtp_server.messages)
    outcome = agent.workflow.reply(SID, "Is it approved yet?")
    assert outcome.disposition == "reply" and outcome.reply == "Your refund is waiting for approval."
    assert len(smtp_server.messages) == before + 1
    mail = parse_raw(smtp_server.messages[-1][2])
    assert mail["To"] == "dana.rivers@example.org" and "waiting for approval" in mail.get_content()


def _caller_agent(tmp_path: Path, store, script, outbound) -> Any:
    import yaml

    caller = {
        "states": {
            "ask": {
                "triggers": {"manual": None},
                "tools": {"allow": ["archmax_workflow_lookup"]},
                "transitions": [{"to": "done", "description": "Answered."}],
            },
            "done": None,
        }
    }
    for slug, doc in (("caller", caller), ("lookup", LOOKUP)):
        folder = tmp_path / "workflows" / slug
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workflow.yaml").write_text(yaml.safe_dump(doc))
    return create_agent(
        tmp_path / "workflows" / "caller", store, ScriptedModel(script), outbound=outbound, clock=FakeClock(CLOCK)
    )


# ---------------------------------------------------------------- item 5: one unsendable entry holds back nothing


def test_a_mail_with_no_from_address_is_recorded_failed_and_its_event_and_later_entries_still_go_out(
    store, smtp_server
):
    script = [
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order"}}},
        {"say": "Thanks, noted."},
    ]
    bcc = mail_variables(to=[])  # `To: undisclosed-recipients:;`: no inbox address to answer from
    agent = agent_of(store, ASKING, script, dispatcher(store, smtp_server.url, sender=None))
    agent.workflow.send(SID, "Hello", variables=bcc)
    question, event = store.load(SID).outbox
    assert store.get(SID, failed_path(question)) is not None and store.get(SID, sent_path(question)) is None
    assert store.get(SID, sent_path(event)) is not None  # the `Session Parked` event was put all the same
    agent.runtime.outbound = dispatcher(store, smtp_server.url)  # ARCHMAX_MAIL_FROM configured since
    agent.workflow.deliver(SID, trigger="reply", message="ORD-1", variables=mail_variables(2))
    record = store.load(SID)
    answer = record.outbox[-2]
    assert store.get(SID, sent_path(answer)) is not None and store.get(SID, sent_path(record.outbox[-1])) is not None
    assert [parse_raw(raw).get_content().strip() for _, _, raw in smtp_server.messages] == ["Thanks, noted."]
    assert store.get(SID, sent_path(question)) is None  # recorded failed: never retried, never sent
