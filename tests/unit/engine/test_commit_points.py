"""When a turn commits: one claim, one commit per turn, and a forced commit around side effects.

Rule source: BEHAVIOUR.md §9.3 as issue 10 narrows it ("one claim, one commit per turn; mid-turn
commits only after a host tool with side effects ran, never for control tools"), §3.12 (a host
call interrupted by a crash is answered ``interrupted``, never run again), §3.1 (a park owing a
handoff call is on record before that call). Each test counts the versions a real MemoryStore
recorded, and reads the stored record from inside a tool or a model call.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax import HostTool, SessionStatus
from archmax.errors import SessionNotResumableError
from archmax.models.base import ModelResponse
from archmax.models.scripted import ScriptedModel

from ._support import CHAT, harness

WAIT = {"call": {"archmax_wait": {"reason": "the order number"}}, "say": "Which order?"}


def test_a_turn_that_parks_through_control_tools_commits_twice_claim_and_park():
    h = harness(CHAT, [WAIT, {"call": {"archmax_set_variables": {"values": {"x": "1"}}}}, WAIT])
    assert h.agent.workflow.send("s1", "Hi").kind == "parked"
    first = h.load("s1").version
    assert first == 2  # the claim, then the park that lets the lease go

    out = h.agent.workflow.deliver("s1", trigger="manual", message="ORD-1")

    assert out.kind == "parked"
    # Two model calls and two control-tool batches in between, and still one claim and one commit.
    assert h.load("s1").version == first + 2


def test_a_host_tool_call_is_on_record_before_it_runs_and_its_result_before_the_next_model_call():
    seen: dict[str, Any] = {}

    def lookup(order: str) -> str:
        rec = h.store.load("s1")
        seen["during"] = (rec.status, rec.messages[-1].tool_calls[0].name, rec.lease is not None)
        return "shipped"

    class Peek:
        """Answers from a script; on the call after the tool, reads what the store holds."""

        def __init__(self) -> None:
            self.script = ScriptedModel([{"call": {"lookup": {"order": "ORD-1"}}}, {"say": "It shipped."}])
            self.n = 0

        def complete(self, request: Any) -> ModelResponse:
            self.n += 1
            if self.n == 2:
                seen["after"] = [m.role for m in h.store.load("s1").messages[-2:]]
            return self.script.complete(request)

    doc = {"tools": {"allow_always": ["lookup"]}, **CHAT}
    h = harness(doc, model=Peek(), tools=[HostTool("lookup", lookup)])
    out = h.agent.workflow.send("s1", "Where is ORD-1?")

    assert out.kind == "completed"
    assert seen["during"] == (SessionStatus.RUNNING, "lookup", True)
    assert seen["after"] == ["assistant", "tool"]
    assert h.load("s1").version == 4  # claim, the call, its result, the completion


def test_a_long_turn_renews_its_lease_so_no_one_takes_it_over_while_it_runs():
    lease_s = 60.0
    outcomes: dict[str, Any] = {}

    class SlowModel:
        """Each call takes 40 s of the injected clock (two of them outlast the 60 s lease)."""

        def __init__(self) -> None:
            self.script = ScriptedModel(
                [{"call": {"archmax_set_variables": {"values": {"x": str(n)}}}} for n in range(3)] + [{"say": "Done."}]
            )

        def complete(self, request: Any) -> ModelResponse:
            h.clock.advance(seconds=40)
            try:  # a sweep in another process, mid-call: the lease must still be live
                recovered = h.agent.workflow.recover("s1")
                outcomes.setdefault("recover", []).append(recovered)
            except SessionNotResumableError as exc:
                outcomes.setdefault("refused", []).append(exc)
            return self.script.complete(request)

    h = harness(CHAT, model=SlowModel(), lease_ttl_s=lease_s)
    out = h.agent.workflow.send("s1", "Go")

    assert out.kind == "completed" and not out.recovered
    assert "recover" not in outcomes and len(outcomes["refused"]) == 4
    # 4 calls of 40 s: a renewal after each step that found half the lease (30 s) gone, so more
    # than the two commits of a quick turn, and the session was never taken over.
    assert h.load("s1").version > 2
    assert h.load("s1").lease is None


@pytest.mark.parametrize("spoke", [True, False])
def test_a_park_owing_a_handoff_call_is_on_record_before_that_call(spoke: bool):
    seen: list[Any] = []
    wait: dict[str, Any] = {"call": {"archmax_wait": {"reason": "r"}}}
    if spoke:
        wait["say"] = "One moment."

    class Peek:
        def __init__(self) -> None:
            self.script = ScriptedModel([wait, {"say": "We are waiting for you."}])

        def complete(self, request: Any) -> ModelResponse:
            if request.handoff:
                rec = h.store.load("s1")
                seen.append((rec.status, rec.park_phase))
            return self.script.complete(request)

    h = harness(CHAT, model=Peek())
    assert h.agent.workflow.send("s1", "Hi").kind == "parked"

    if spoke:  # the agent's words are the park message: no handoff call, and no commit for one
        assert seen == [] and h.load("s1").version == 2
    else:
        assert seen == [(SessionStatus.AWAITING_INPUT, "closing")] and h.load("s1").version == 3
