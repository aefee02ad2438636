"""Issue 9, scenario 1: an inboxed event that loses a park race is applied once after the turn that beat it.

A session is parked; a message waits in the host inbox (``d-2``); between the drain's load and its claim
a direct delivery (``d-3``) resumes the same park. The drain's claim loses. Losing a race is not a
refusal: the item stays pending (never ``failed``), and the sweep applies it once, after ``d-3``'s turn.
The same at a human-state park, where a decision beats an inboxed reply.
Rule source: DESIGN.md §3 "Inbox" (an accepted event is never lost), BEHAVIOUR.md §3.5-§3.7, issue 9
item 1. Every store kind, each with its own inbox (memory, filesystem, DynamoInbox on moto).
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax import SessionNotAwaitingInputError, create_agent
from archmax.errors import SessionNotParkedError, is_retryable
from archmax.hosting.host import Host
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import Firing
from archmax.spec import workflow_from_dict
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import REVIEW_WORKFLOW, SUPPORT_INBOX, Env, LoadsThen

REVIEW = workflow_from_dict(REVIEW_WORKFLOW, "review-demo")


def _user_texts(env: Env, sid: str) -> list[str]:
    return [m.content for m in env.other_store().load(sid).messages if m.role == "user"]


def _racing_host(env: Env, workflow: Any, entries: list[dict[str, Any]]) -> tuple[Host, LoadsThen]:
    """A host whose drains wait to be woken (no drain inside ``accept``), over a store that can race.

    Its store instance never saw the session (another container's on AWS), so the drain reads the
    session from the table and the race lands between that read and the claim; a drain acting on a
    view it remembers from its own accept is re-run on a fresh read instead (tests/hosting).
    """
    racing = LoadsThen(env.other_store())
    agent = create_agent(workflow, racing, ScriptedModel(entries), clock=env.clock)
    return Host(agent, env.inbox, waker=lambda sid: None), racing


def _accept(env: Env, workflow: Any, firing: Firing, session_id: str) -> None:
    """Accept ``firing`` through another container's host (its drain waits to be woken)."""
    agent = create_agent(workflow, env.other_store(), ScriptedModel([]), clock=env.clock)
    Host(agent, env.inbox, waker=lambda sid: None).accept(firing, session_id=session_id)


def test_an_inboxed_message_that_loses_an_input_park_race_is_applied_once_after_the_winning_turn(env: Env) -> None:
    vars_ = {"conversation_id": "s1"}
    env.agent(
        [{"say": "Checking.", "call": {"archmax_wait": {"reason": "the transfer", "until": "1h"}}}]
    ).workflow.send("s1", "Has my transfer arrived?", trigger="email_received", variables=vars_)
    host, racing = _racing_host(env, SUPPORT_INBOX, [{"say": "Thanks, it arrived today."}])
    _accept(
        env, SUPPORT_INBOX, Firing(trigger="email_reply", message="Any news?", variables=vars_, delivery_id="d-2"), "s1"
    )
    direct = env.agent([{"say": "Still waiting.", "call": {"archmax_wait": {"reason": "a reply"}}}])
    racing.arm(lambda: direct.workflow.deliver("s1", trigger="timer", variables={"now": "t"}, delivery_id="d-3"))

    [lost] = host.drain("s1")

    assert racing.fired == 1
    assert isinstance(lost, SessionNotAwaitingInputError) and lost.lost_race and is_retryable(lost)
    assert [i.delivery_id for i in env.inbox.pending("s1")] == ["d-2"]  # pending, never failed

    report = host.sweep()

    assert [r.results for r in report.redriven] == [["completed"]]
    assert env.inbox.pending("s1") == [] and env.inbox.get("s1", "d-2").status == "done"
    assert _user_texts(env, "s1") == ["Has my transfer arrived?", "Any news?"]  # once, after d-3's turn
    assert env.other_store().load("s1").delivery_ids[-2:] == ["d-3", "d-2"]


def test_an_inboxed_reply_that_loses_a_decision_park_race_is_applied_once_after_the_decided_turn(env: Env) -> None:
    env.agent(
        [{"call": {"archmax_advance": {"to": "review", "reason": "ready"}}}, {"say": "Please review."}], REVIEW
    ).workflow.send("r1", "Refund my order", trigger="manual")
    host, racing = _racing_host(env, REVIEW, [{"say": "Your refund is on its way."}])
    _accept(env, REVIEW, Firing(message="Is it approved yet?", delivery_id="d-2"), "r1")
    decider = env.agent([{"say": "Approved."}], REVIEW)
    racing.arm(lambda: decider.workflow.decide("r1", to="approved"))

    [lost] = host.drain("r1")

    assert isinstance(lost, SessionNotParkedError) and lost.lost_race and is_retryable(lost)
    assert [i.delivery_id for i in env.inbox.pending("r1")] == ["d-2"]

    report = host.sweep()

    assert [r.results for r in report.redriven] == [["completed"]]
    assert env.inbox.get("r1", "d-2").status == "done"
    assert _user_texts(env, "r1") == ["Refund my order", "Is it approved yet?"]


def test_a_direct_delivery_that_loses_the_race_is_still_refused_to_its_caller(env: Env) -> None:
    env.agent([{"say": "Checking.", "call": {"archmax_wait": {"reason": "the transfer"}}}]).workflow.send(
        "s2", "Has it arrived?", trigger="email_received", variables={"conversation_id": "s2"}
    )
    # another container's instance: it reads the table, and the race lands between that read and the
    # claim (one acting on a view it remembers decides again on a fresh read: tests/hosting/test_claim_is_read.py)
    racing = LoadsThen(env.other_store())
    loser = create_agent(SUPPORT_INBOX, racing, ScriptedModel([]), clock=env.clock)
    winner = env.agent([{"say": "It arrived."}])
    racing.arm(lambda: winner.workflow.deliver("s2", trigger="timer"))

    with pytest.raises(SessionNotAwaitingInputError) as refused:
        loser.workflow.deliver("s2", trigger="timer")

    assert refused.value.lost_race
    assert [m.content for m in env.other_store().load("s2").messages if m.role == "assistant" and m.content][
        -1
    ] == "It arrived."


def test_a_refusal_that_is_not_a_race_is_not_retryable() -> None:
    assert not is_retryable(SessionNotAwaitingInputError("s", "completed"))
    assert not is_retryable(SessionNotParkedError("s", "running"))
