"""Issue 20 with 22: what a child committed to send goes out even when its caller's part of the operation raised.

One operation drives a caller and its child (§5.10). When the child's turn ends (it finishes, or
parks) its commit records its outbox entries; the caller then continues in the same operation. If
the caller's next model call meets an outage (a throttle: a retryable ``ModelError``, §5.7), the
operation raises and the caller is left ``running`` for a retry. The child's entries were committed
all the same, yet the in-process dispatch ran only for an operation that returned: the child's
lifecycle event waited for ``archmax sweep`` even after the retry finished the pair, since the retry
never lets the (finished) child go again. The same held for a refusal raised after commits: a
delivery refused because the child moved on after the caller was claimed lets the caller catch up
and finish, and its final answer to the customer waited for the sweep too.

Rule source: DESIGN.md §3 (sending starts from the commit; locally the dispatcher runs in-process
after each operation), README "Outbound messages" (for every session the operation committed
messages for), issue 20 (every committed entry sent, once), BEHAVIOUR.md §5.10.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from archmax import MemoryStore, create_agent
from archmax.agent import Agent
from archmax.cli.sent import Sends, sent_lines
from archmax.clock import FakeClock
from archmax.engine.door import apply, run_child
from archmax.errors import ModelThrottledError, SessionNotAwaitingInputError
from archmax.hosting.sweep import ERROR, SENT, send_outbox, sweep
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.outbound.aliases import MemoryAliases
from archmax.outbound.dispatch import Dispatcher
from archmax.outbound.transports import Delivery, MailOff
from archmax.session.firing import Deliver
from archmax.session.ids import SessionId
from archmax.session.records import SessionStatus
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore

from ._chain import GRANDCHILD, REVIEWED, TO_THE_DECISION, calling

T0 = "2025-01-01T00:00:00.000Z"
CALLER, CHILD = "s", "s~work:b:1"
CALLING = {"states": {"work": {"triggers": {"manual": None}, "tools": {"allow": ["archmax_workflow_b"]}}}}
CALLED = {"states": {"work": {"triggers": {"manual": None}}}}


class Provider:
    """Where events go (EventBridge's place): every ``<session>/<entry id>`` taken, in order."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def publish(self, session_id: str, entry: Any) -> Delivery:
        self.sent.append(f"{session_id}/{entry.id}")
        return Delivery("sink", "sink")


class ProcessDied(BaseException):
    """The process was killed here: not an error any code handles."""


class Outage:
    """The scripted model, whose ``n``-th call (1-based) raises ``error`` instead (default: a throttle)."""

    def __init__(self, script: list[dict[str, Any]], at: int, error: BaseException | None = None) -> None:
        self._inner, self._at, self.calls = ScriptedModel(script), at, 0
        self._error = error or ModelThrottledError("injected: the provider is throttling")

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == self._at:
            raise self._error
        return self._inner.complete(request)


@pytest.fixture(params=["memory", "filesystem"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return MemoryStore() if request.param == "memory" else FilesystemStore(tmp_path / "sessions")


def _agent(store: Any, model: Any) -> tuple[Any, Provider]:
    clock = FakeClock(T0)
    provider = Provider()
    outbound = Dispatcher(store, mailer=MailOff(), publisher=provider, aliases=MemoryAliases(), clock=clock)
    workflows = {"b": workflow_from_dict(CALLED, "b")}
    agent = create_agent(
        workflow_from_dict(CALLING, "a"), store, model, clock=clock, workflows=workflows, outbound=outbound
    )
    return agent, provider


def _committed(store: Any) -> list[str]:
    """``<session>/<entry id>`` of every entry in every stored record's outbox."""
    return [f"{sid}/{e.id}" for sid in store.list() for e in store.load(sid).outbox]


def test_a_childs_completion_is_sent_by_the_operation_that_raised_after_committing_it(store: Any) -> None:
    """The call runs the child to completion; the caller's next model call is throttled: the child's event goes out."""
    script = [{"call": {"archmax_workflow_b": {}}}, {"say": "b done"}, {"say": "a done"}]
    agent, provider = _agent(store, Outage(script, at=3))  # the caller's call after the child's answer
    with pytest.raises(ModelThrottledError):
        agent.workflow.send(CALLER, "go")
    child = store.load(CHILD)
    assert child.status == SessionStatus.COMPLETED and store.load(CALLER).status == SessionStatus.RUNNING
    finished = [f"{CHILD}/{e.id}" for e in child.outbox if e.version == child.version]
    assert finished, "the child's completion recorded its lifecycle event"
    assert set(finished) <= set(provider.sent)  # sent by the operation that committed it


def test_after_the_retry_every_committed_entry_of_the_pair_is_sent_once(store: Any) -> None:
    """The retry (recover) finishes the caller; nothing is left for a sweep, nothing is sent twice."""
    script = [{"call": {"archmax_workflow_b": {}}}, {"say": "b done"}, {"say": "a done"}]
    agent, provider = _agent(store, Outage(script, at=3))
    with pytest.raises(ModelThrottledError):
        agent.workflow.send(CALLER, "go")
    outcome = agent.workflow.recover(CALLER)
    assert outcome is not None and outcome.kind == "completed"
    assert Counter(provider.sent) == Counter(_committed(store))  # each committed entry exactly once


def test_a_forwarded_delivery_that_finishes_the_child_sends_its_event_though_the_caller_raised(store: Any) -> None:
    """The child waits; a delivery to the caller finishes it (§5.10); the caller's next call is throttled."""
    script = [
        {"call": {"archmax_workflow_b": {}}},
        {"call": {"archmax_wait": {"reason": "the order id"}}},  # the child parks: the pair waits
        {"say": "Which order?"},  # the child's park message
        {"say": "b done"},  # the delivery finishes the child
        {"say": "a done"},
    ]
    agent, provider = _agent(store, Outage(script, at=5))
    assert agent.workflow.send(CALLER, "go").kind == "parked"
    assert Counter(provider.sent) == Counter(_committed(store))  # the parks' events went with their operation
    with pytest.raises(ModelThrottledError):
        agent.workflow.deliver(CALLER, trigger="manual", message="ORD-1")
    child = store.load(CHILD)
    assert child.status == SessionStatus.COMPLETED
    assert {f"{CHILD}/{e.id}" for e in child.outbox} <= set(provider.sent)


def test_the_sweeps_wake_of_a_childs_timer_sends_its_completion_though_the_caller_raised(store: Any) -> None:
    """The child waits on a timer; the sweep wakes it through its caller, it finishes, the caller is throttled."""
    script = [
        {"call": {"archmax_workflow_b": {}}},
        {"call": {"archmax_wait": {"reason": "the warehouse", "until": "5m"}}},
        {"say": "I will check back."},  # the child's park message
        {"say": "b done"},  # the timer's turn finishes the child
        {"say": "a done"},
    ]
    agent, provider = _agent(store, Outage(script, at=5))
    assert agent.workflow.send(CALLER, "go").kind == "parked"
    agent.runtime.clock.advance(timedelta(minutes=6))
    errors: list[str] = []
    assert sweep(agent, on_error=lambda sid, exc: errors.append(f"{sid}: {type(exc).__name__}")) == [(CALLER, ERROR)]
    assert errors == [f"{CALLER}: ModelThrottledError"]
    child = store.load(CHILD)
    assert child.status == SessionStatus.COMPLETED
    assert {f"{CHILD}/{e.id}" for e in child.outbox} <= set(provider.sent)  # this sweep sent it: none left over


def test_a_process_that_dies_after_the_childs_commit_sends_nothing(store: Any) -> None:
    """A killed process runs no consequences (a ``BaseException``): the child's event waits for the sweep's outbox pass."""
    script = [{"call": {"archmax_workflow_b": {}}}, {"say": "b done"}, {"say": "a done"}]
    agent, provider = _agent(store, Outage(script, at=3, error=ProcessDied()))
    with pytest.raises(ProcessDied):
        agent.workflow.send(CALLER, "go")
    child = store.load(CHILD)
    assert child.status == SessionStatus.COMPLETED and child.outbox
    assert provider.sent == []
    assert send_outbox(store, agent.runtime.outbound, workflow="a") == [(CHILD, SENT)]  # the sweep's outbox pass
    assert provider.sent == [f"{CHILD}/{e.id}" for e in child.outbox]


def test_three_levels_a_reply_and_a_decision_at_the_grandchilds_id_send_every_entry_once(store: Any) -> None:
    """One operation lets three sessions go (a reply forwarded down the chain, then its decision): all sent, once each."""
    script = [*TO_THE_DECISION, {"say": "Noted."}, {"say": "c done"}, {"say": "b done"}, {"say": "a done"}]
    clock = FakeClock(T0)
    provider = Provider()
    outbound = Dispatcher(store, mailer=MailOff(), publisher=provider, aliases=MemoryAliases(), clock=clock)
    workflows = {"b": calling("b", "c"), "c": workflow_from_dict(REVIEWED, "c")}
    agent = create_agent(
        calling("a", "b"), store, ScriptedModel(script), clock=clock, workflows=workflows, outbound=outbound
    )
    agent.workflow.send(CALLER, "Go.")
    assert agent.workflow.reply(GRANDCHILD, "One more thing.").reply == "Noted."  # each level records the answer
    assert {sid: len(store.load(sid).outbox) for sid in store.list()} == {CALLER: 2, CHILD: 2, GRANDCHILD: 2}
    assert Counter(provider.sent) == Counter(_committed(store))
    assert agent.workflow.decide(GRANDCHILD, to="approved").kind == "completed"
    assert all(store.load(sid).status == SessionStatus.COMPLETED for sid in (CALLER, CHILD, GRANDCHILD))
    assert Counter(provider.sent) == Counter(_committed(store))


class Mails:
    """Where mail goes (SMTP's place): ``(session, entry id, To, body)`` of every mail taken."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str, str]] = []

    def send(self, msg: Any, session_id: str, entry: Any) -> Delivery:
        self.sent.append((session_id, entry.id, str(msg["To"]), msg.get_content().strip()))
        return Delivery("sink", "sink")


class BeforeCommitWhere:
    """A store whose first commit satisfying ``where`` lets ``interloper`` run first, as another process would."""

    def __init__(self, inner: Any, where: Any, interloper: Any) -> None:
        self._inner, self._where, self._interloper = inner, where, interloper

    def commit(self, session_id: str, record: Any, *args: Any, **kwargs: Any) -> Any:
        if self._interloper is not None and self._where(record):
            run, self._interloper = self._interloper, None
            contextvars.Context().run(run)  # another process: none of this operation's context
        return self._inner.commit(session_id, record, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_refused_delivery_whose_caller_caught_up_and_finished_mails_the_final_answer(store: Any) -> None:
    """The caller is claimed for a delivery; the child finishes meanwhile; the caller catches up (issue 22 item 1).

    The delivery is refused (``SessionNotAwaitingInputError``: the child moved on), but the caller's
    turn ran on with the child's result and finished: its final answer to the customer was committed,
    and is mailed by that operation (it waited for ``archmax sweep``).
    """
    script = [
        {"call": {"archmax_workflow_b": {}}},
        {"call": {"archmax_wait": {"reason": "the order id"}}},
        {"say": "Which order?"},  # the child's park message: the caller mails it
        {"say": "b done"},  # another process's delivery to the child finishes it
        {"say": "Refunded."},  # the caller catches up with the child's result
    ]
    clock, mails, agents = FakeClock(T0), Mails(), []

    def interloper() -> None:
        child_rt = agents[0].runtime.workflows.runtime("b", agents[0].runtime.workflow)
        run_child(child_rt, Deliver(SessionId(CHILD), trigger="webhook", message="ORD-2"))

    def claimed_for_the_child(record: Any) -> bool:
        return record.session_id == CALLER and record.delegation is not None and record.delegation.forward is not None

    outbound = Dispatcher(store, mailer=mails, publisher=Provider(), aliases=MemoryAliases(), clock=clock)
    racing = BeforeCommitWhere(store, claimed_for_the_child, interloper)
    workflows = {"b": workflow_from_dict(CALLED, "b")}
    agents.append(
        create_agent(
            workflow_from_dict(CALLING, "a"), racing, ScriptedModel(script), clock=clock, workflows=workflows,
            outbound=outbound,
        )
    )  # fmt: skip
    by_email = {"from": "dana@example.org", "message_id": "m1@example.org", "to": ["support@example.com"]}
    assert agents[0].workflow.send(CALLER, "Refund please.", variables=by_email).kind == "parked"
    assert [body for *_, body in mails.sent] == ["Which order?"]
    with pytest.raises(SessionNotAwaitingInputError):
        agents[0].workflow.deliver(CALLER, trigger="manual", message="ORD-1")
    assert store.load(CALLER).status == SessionStatus.COMPLETED
    assert [(to, body) for _sid, _id, to, body in mails.sent] == [
        ("dana@example.org", "Which order?"),
        ("dana@example.org", "Refunded."),
    ]


class Bus(Provider):
    """An event bus (EventBridge's place): its sends are messages the CLI lists, not local event files."""

    def publish(self, session_id: str, entry: Any) -> Delivery:
        super().publish(session_id, entry)
        return Delivery("eventbridge", "bus:archmax", f"evt-{len(self.sent)}")


def test_the_cli_lists_the_childs_events_the_command_sent_to_the_bus(store: Any) -> None:
    """``archmax run`` of a pair whose child finishes in the call: both sessions' events went to the bus.

    The CLI's door (:class:`~archmax.cli.sent.Sends`) keeps what the operation committed to send, the
    caller's first (README: one ``sent:`` line per lifecycle event that went to a bus; attack31).
    """
    clock, bus = FakeClock(T0), Bus()
    outbound = Dispatcher(store, mailer=MailOff(), publisher=bus, aliases=MemoryAliases(), clock=clock)
    script = [{"call": {"archmax_workflow_b": {}}}, {"say": "b done"}, {"say": "a done"}]
    workflows = {"b": workflow_from_dict(CALLED, "b")}
    agent = create_agent(
        workflow_from_dict(CALLING, "a"), store, ScriptedModel(script), clock=clock, workflows=workflows,
        outbound=outbound,
    )  # fmt: skip
    sends = Sends()
    outcome = Agent(agent.runtime, sends.door(apply)).workflow.send(CALLER, "go")
    assert outcome.kind == "completed"
    assert sorted(s.split("/")[0] for s in bus.sent) == [CALLER, CHILD]  # both went to the bus
    assert [c.session_id for c in sends.of(outcome)] == [CALLER, CHILD]  # the answered session first
    lines = sent_lines(store, sends.of(outcome))
    assert lines == [
        f"sent: event 'Session Completed' -> eventbridge bus:archmax (id evt-{n})" for n in (1, 2)
    ]  # as sent
