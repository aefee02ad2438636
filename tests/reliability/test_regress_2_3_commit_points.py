"""Issue 9, scenarios 2 and 3: what a process killed right after a commit leaves is finished, never redone.

2. A turn advances into a human state and dies right after the commit that parks it: that commit must
   carry the advance's tool result, so the transcript stays valid for ``decide`` (every tool call answered
   right after its message).
3. A turn dies right after a commit holding its final answer, before letting the lease go: ``recover``
   (and the sweep) finish the turn from the record, with no model call and nothing added. A turn's
   final answer normally lands in the commit that completes it (issue 10: one claim, one commit per
   turn); a slow model makes the answer reach a lease renewal first, which is this crash's window.

Rule source: BEHAVIOUR.md §3.12 (takeover), §9.3 (commit points; a crash loses at most one step), issue 9
items 2-3. Every store kind: memory, filesystem, AWS on moto.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax import SessionStatus, create_agent
from archmax.engine.loop import final_answer_committed
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.spec import workflow_from_dict
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import SUPPORT_INBOX, DieAfterCommitWhere, Env, ProcessDied, calls_answered_in_place

LEASE_S = 900

REVIEW = workflow_from_dict(
    {
        "states": {
            "start": {
                "triggers": {"manual": None},
                "transitions": [{"to": "review", "description": "Ready for a person."}],
            },
            "review": {
                "type": "human",
                "transitions": [{"to": "approved", "description": "Refund approved."}],
            },
            "approved": {"instructions": "Tell the customer the refund is approved."},
        }
    },
    "review-demo",
)


class Recording:
    """A scripted model that keeps every transcript it was sent."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.script = ScriptedModel(entries)
        self.transcripts: list[list[Any]] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.transcripts.append(list(request.messages))
        return self.script.complete(request)


class Slow:
    """A scripted model whose every call takes ``seconds`` of the injected clock."""

    def __init__(self, entries: list[dict[str, Any]], env: Env, seconds: float) -> None:
        self.script, self.env, self.seconds = ScriptedModel(entries), env, seconds

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.env.clock.advance(seconds=self.seconds)
        return self.script.complete(request)


def _killed_agent(env: Env, entries: list[dict[str, Any]], where: Any, workflow: Any, model: Any = None) -> Any:
    """An agent whose store dies right after the first commit satisfying ``where``."""
    model = model or ScriptedModel(entries)
    return create_agent(workflow, DieAfterCommitWhere(env.store, where), model, clock=env.clock)


def test_a_park_at_a_human_state_is_committed_with_the_advance_result_that_made_it(env: Env) -> None:
    parked = lambda rec: rec.status == SessionStatus.AWAITING_DECISION  # noqa: E731
    dying = _killed_agent(
        env,
        [{"call": {"archmax_advance": {"to": "review", "reason": "the refund is ready"}}}, {"say": "Please review."}],
        parked,
        REVIEW,
    )
    with pytest.raises(ProcessDied):
        dying.workflow.send("r-1", "Refund my order", trigger="manual")

    stored = env.other_store().load("r-1")
    assert stored.status == SessionStatus.AWAITING_DECISION
    assert calls_answered_in_place(stored.messages) == []
    advance = [m for m in stored.messages if m.role == "tool" and m.name == "archmax_advance"]
    assert [m.status for m in advance] == ["success"]  # the advance succeeded: never "interrupted"

    env.clock.advance(seconds=LEASE_S + 1)
    model = Recording([{"say": "Your refund is approved."}])
    outcome = env.agent(model, REVIEW).workflow.decide("r-1", to="approved")

    assert outcome.kind == "completed"
    assert len(model.transcripts) == 1 and calls_answered_in_place(model.transcripts[0]) == []
    final = env.other_store().load("r-1").messages
    assert calls_answered_in_place(final) == []
    assert not [m for m in final if m.role == "tool" and "interrupted" in m.content]


ANSWER = "ORD-1001 ships today."
ANSWERING = [
    {"call": {"archmax_advance": {"to": "answer", "reason": "names the order"}}},
    {"say": ANSWER},
]


def _send_and_die(env: Env) -> None:
    answered = lambda rec: rec.status == SessionStatus.RUNNING and final_answer_committed(rec.messages)  # noqa: E731
    # Each call outlasts half the lease, so the turn renews its lease right after the answer.
    slow = Slow(ANSWERING, env, seconds=LEASE_S / 2 + 1)
    dying = _killed_agent(env, ANSWERING, answered, SUPPORT_INBOX, model=slow)
    with pytest.raises(ProcessDied):
        dying.workflow.send("c-3", "Where is ORD-1001?", trigger="email_received", variables={"conversation_id": "c-3"})
    stored = env.other_store().load("c-3")
    assert stored.status == SessionStatus.RUNNING and stored.messages[-1].content == ANSWER
    env.clock.advance(seconds=LEASE_S + 1)


def _answers(env: Env) -> list[str]:
    return [m.content for m in env.other_store().load("c-3").messages if m.role == "assistant" and m.content == ANSWER]


def test_recover_finishes_a_turn_whose_final_answer_is_committed_without_calling_a_model(env: Env) -> None:
    _send_and_die(env)
    model = Recording([])  # any model call would exhaust the script and fail the recovery

    outcome = env.agent(model).workflow.recover("c-3")

    assert outcome is not None and outcome.kind == "completed" and outcome.recovered
    assert model.transcripts == []
    assert _answers(env) == [ANSWER]
    assert env.other_store().head("c-3").lease is None


def test_the_sweep_finishes_a_dead_turn_whose_final_answer_is_committed_once(env: Env) -> None:
    _send_and_die(env)
    model = Recording([])

    first = env.host(model).sweep()
    second = env.host(model).sweep()

    assert first.stale == [("c-3", "completed")] and second.stale == []
    assert model.transcripts == []
    assert _answers(env) == [ANSWER]
