"""The engine's one door: ``archmax.engine.apply(runtime, firing)`` (issue 23 "The door").

Rule source: issue 23 (one entry; a firing value names its kind; the caller gets the committed
record for what follows a commit; a wrapper of the door sees every firing; a session id is parsed
once at the edge into a type the engine trusts), BEHAVIOUR.md §3.4–§3.7, §4.1.
"""

from __future__ import annotations

import pytest

from archmax import InvalidSessionIdError, SessionNotAwaitingInputError
from archmax.agent import Agent
from archmax.engine import apply
from archmax.session.firing import Deliver, Recover, Send
from archmax.session.ids import SessionId, parse_session_id
from archmax.session.records import SessionStatus

from ._support import HUMAN, TWO, harness, wait_then


def test_a_send_through_the_door_answers_the_outcome_and_the_record_its_last_commit_left():
    h = harness(TWO, [wait_then()])
    applied = apply(h.agent.runtime, Send(parse_session_id("s1"), "Hello"))
    assert applied.outcome is not None and applied.outcome.kind == "parked"
    stored = h.load("s1")
    assert applied.record is not None
    assert (applied.record.version, applied.record.status) == (stored.version, SessionStatus.AWAITING_INPUT)


def test_a_recover_of_a_session_that_is_not_mid_turn_answers_nothing_and_commits_nothing():
    h = harness(TWO, [wait_then()])
    h.agent.workflow.send("s1", "Hello")
    version = h.load("s1").version
    applied = apply(h.agent.runtime, Recover(parse_session_id("s1")))
    assert (applied.outcome, applied.record) == (None, None)
    assert h.load("s1").version == version


def test_a_refusal_at_the_door_writes_nothing():
    h = harness(TWO, [{"say": "Done."}])
    h.agent.workflow.send("s1", "Hello")
    before = h.load("s1")
    with pytest.raises(SessionNotAwaitingInputError):
        apply(h.agent.runtime, Deliver(parse_session_id("s1"), trigger="reply"))
    assert h.load("s1") == before


def test_a_wrapper_given_to_the_agent_sees_every_firing_of_the_public_api_by_kind():
    script = [
        {"call": {"archmax_advance": {"to": "review", "reason": "ready"}}},
        {"say": "A person will look at it."},
        {"say": "Approved."},
    ]
    h = harness(HUMAN, script)
    seen: list[tuple[str, str]] = []

    def observed(rt, firing):
        seen.append((firing.kind, firing.session_id))
        return apply(rt, firing)

    agent = Agent(h.agent.runtime, observed)
    agent.workflow.send("s1", "Refund please")
    agent.workflow.decide("s1", to="approved")
    assert seen == [("send", "s1"), ("decide", "s1")]
    assert all(type(sid) is SessionId for _, sid in seen)  # parsed at the facade, trusted inside


def test_a_session_id_is_parsed_once_into_a_session_id_and_a_parsed_one_passes_as_it_is():
    parsed = parse_session_id("AAQk-1")
    assert type(parsed) is SessionId and parsed == "AAQk-1"
    assert parse_session_id(parsed) is parsed
    with pytest.raises(InvalidSessionIdError):
        parse_session_id("../escape")


def test_the_facade_refuses_a_bad_id_before_the_door_is_reached():
    h = harness(TWO, [wait_then()])
    reached: list[object] = []

    def observed(rt, firing):
        reached.append(firing)
        return apply(rt, firing)

    agent = Agent(h.agent.runtime, observed)
    with pytest.raises(InvalidSessionIdError):
        agent.workflow.decide("checkpoints/x", to="done")
    assert reached == []
