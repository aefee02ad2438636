"""The turn lease, one writer per session, and takeover after expiry (BEHAVIOUR.md §3.12, §3.2;
seed "Starting versus resuming": "mid-turn → SessionNotResumableError").

A live lease is observed from inside a host tool: while the tool runs, the turn is mid-flight and
its lease is held, so any other firing on the session must be refused. A takeover is a second
agent over the same store firing after the first one's lease has expired (FakeClock advance)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from archmax import HostTool, SessionNotResumableError
from archmax.clock import parse_instant

from ._support import CHAT, harness, results_of

INTERRUPTED = "interrupted: the process running this turn stopped before this call returned"
DOC = {"tools": {"allow_always": ["probe"]}, **CHAT}


def with_probe(action: Callable[[], Any], entries: list[dict], **kwargs):
    """A harness whose ``probe`` tool runs ``action`` mid-turn and records what it returned or raised."""
    seen: dict[str, Any] = {}

    def probe() -> str:
        try:
            seen["value"] = action()
        except Exception as exc:  # noqa: BLE001 - the test asserts on what was raised
            seen["error"] = exc
        return "probed"

    h = harness(DOC, entries, tools=[HostTool("probe", probe)], **kwargs)
    return h, seen


@pytest.mark.parametrize(
    "operation",
    ["send", "invoke", "resolve", "seed", "delete"],
)
def test_a_live_lease_refuses_every_other_writer_with_one_writer_per_session(operation):
    holder: dict[str, Any] = {}

    def act():
        agent = holder["h"].agent
        return {
            "send": lambda: agent.workflow.send("s1", "me too"),
            "invoke": lambda: agent.invoke("s1", message="me too"),
            "resolve": lambda: agent.workflow.resolve_session(session_id="s1"),
            "seed": lambda: agent.sessions.seed("s1", {"scratchpad/x.txt": "x"}),
            "delete": lambda: agent.sessions.delete("s1"),
        }[operation]()

    h, seen = with_probe(act, [{"call": {"probe": {}}}, {"say": "done"}])
    holder["h"] = h
    out = h.agent.workflow.send("s1", "Hi")
    err = seen.get("error")
    assert isinstance(err, SessionNotResumableError), seen
    assert "one writer per session" in str(err) and "'running'" in str(err) and err.session_id == "s1"
    assert out.kind == "completed"
    assert h.store.get("s1", "scratchpad/x.txt") is None


def test_while_running_the_summary_shows_the_lease_expiry_and_the_finish_lets_it_go():
    holder: dict[str, Any] = {}
    h, seen = with_probe(
        lambda: holder["h"].agent.sessions.get("s1"),
        [{"call": {"probe": {}}}, {"say": "done"}],
        lease_ttl_s=60,
    )
    holder["h"] = h
    h.agent.workflow.send("s1", "Hi")
    summary = seen["value"]
    assert summary.status == "running" and summary.classification == "open"
    assert summary.lease_expires_at == "2025-01-01T00:01:00.000Z"
    assert h.load("s1").lease is None
    assert h.agent.sessions.get("s1").lease_expires_at is None


def test_a_parked_session_holds_no_lease():
    h = harness(CHAT, [{"say": "Q?", "call": {"archmax_wait": {"reason": "r"}}}])
    h.agent.workflow.send("s1", "Hi")
    assert h.load("s1").lease is None


def test_after_the_lease_expires_a_new_firing_takes_over_and_answers_the_interrupted_call():
    holder: dict[str, Any] = {}

    def crash_and_take_over():
        first = holder["h"]
        first.clock.advance(timedelta(seconds=901))
        second = harness(
            DOC,
            [{"say": "Recovered and answered.", "expect_state": "chat"}],
            store=first.store,
            clock=first.clock,
            tools=[HostTool("probe", lambda: "x")],
        )
        holder["second"] = second
        assert second.agent.workflow.resolve_session(session_id="s1").recovered is True
        return second.agent.workflow.send("s1", "Are you still there?")

    h, seen = with_probe(crash_and_take_over, [{"call": {"probe": {}}}, {"say": "never reached"}])
    holder["h"] = h
    # the first process comes back from its tool after the takeover: its commit must not land
    with pytest.raises(SessionNotResumableError):
        h.agent.workflow.send("s1", "Hi")
    out = seen["value"]
    assert (out.kind, out.disposition, out.recovered) == ("completed", "turn", True)
    rec = h.load("s1")
    answers = [m for m in results_of(rec.messages) if m.tool_call_id == "call_1"]
    assert [(a.status, a.content) for a in answers] == [("error", INTERRUPTED)]
    assert rec.messages[-1].content == "Recovered and answered."
    assert rec.lease is None and rec.status == "completed"
    second = holder["second"]
    assert [e["scope"] for e in second.events_of("warning")] == ["lease"]


def test_an_expired_lease_is_taken_over_by_invoke_too():
    holder: dict[str, Any] = {}

    def take_over():
        first = holder["h"]
        first.clock.advance(timedelta(seconds=901))
        second = harness(DOC, [{"say": "Back."}], store=first.store, clock=first.clock)
        return second.agent.invoke("s1", message="again")

    h, seen = with_probe(take_over, [{"call": {"probe": {}}}, {"say": "never"}])
    holder["h"] = h
    with pytest.raises(SessionNotResumableError):
        h.agent.workflow.send("s1", "Hi")
    assert seen["value"].recovered is True and seen["value"].kind == "completed"


def test_the_lease_is_taken_at_claim_with_the_configured_ttl_and_extended_by_later_commits():
    holder: dict[str, Any] = {}

    def advance_then_read():
        first = holder["h"]
        first.clock.advance(timedelta(seconds=30))
        return first.load("s1").lease

    h, seen = with_probe(
        advance_then_read,
        [{"call": {"probe": {}}}, {"call": {"probe": {}}}, {"say": "done"}],
        lease_ttl_s=100,
    )
    holder["h"] = h
    h.agent.workflow.send("s1", "Hi")
    # the probe ran twice; at the second run the lease had been extended by the commit after the first batch
    lease = seen["value"]
    assert parse_instant(lease.expires_at) == parse_instant("2025-01-01T00:00:30.000Z") + timedelta(seconds=100)


def test_a_lease_that_expires_while_a_handoff_is_owed_leaves_the_session_parked_without_a_message():
    holder: dict[str, Any] = {}

    class StallingHandoff:
        """Answers the silent wait, then 'crashes' during the handoff call: the lease runs out and
        another process delivers into the park before this call returns."""

        def __init__(self) -> None:
            self.n = 0

        def complete(self, request):
            from archmax.models.base import ModelResponse
            from archmax.session.records import ToolCall

            self.n += 1
            if self.n == 1:
                return ModelResponse(tool_calls=[ToolCall(id="w1", name="archmax_wait", args={"reason": "r"})])
            first = holder["h"]
            first.clock.advance(timedelta(seconds=901))
            second = harness(CHAT, [{"say": "Resumed."}], store=first.store, clock=first.clock)
            holder["out"] = second.agent.workflow.deliver("s1", trigger="timer")
            return ModelResponse(text="A park message too late to land.")

    h = harness(CHAT, model=StallingHandoff())
    holder["h"] = h
    with pytest.raises(SessionNotResumableError):
        h.agent.workflow.send("s1", "Hi")
    assert holder["out"].kind == "completed"
    rec = h.load("s1")
    assert all("too late" not in m.content for m in rec.messages)
    assert rec.messages[-1].content == "Resumed."
