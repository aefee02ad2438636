"""Issue 22 item 1: racing deliveries to a caller and to its child never lose an event.

Caller ``p1`` is parked through its waiting child ``p1~work:check:1``. Delivery ``d-A`` goes to the
caller; right after A's claim of the caller, ``d-B`` is delivered straight to the child. Of the two
exactly one is applied, in exactly one transcript, once; the other is refused, and a refused
delivery changes nothing and is not remembered: its retry is never answered "duplicate", and no
session is left ``running`` without a lease.

Rule source: BEHAVIOUR.md §3.5 (claiming the park is atomic; a refused delivery leaves the park
untouched), §5.10 (a firing addressed to a child's id reaches the pair through its caller), §3.12.
Every store kind: memory, filesystem, AwsStore on moto.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax import create_agent
from archmax.errors import SessionNotAwaitingInputError
from archmax.session.records import SessionStatus
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import Env

from ._pair import (
    CALLER,
    CHILD,
    LEASE_TTL_S,
    CommitThen,
    PairModel,
    is_claim_of,
    tokens_in,
    unleased_running,
    workspace,
)


def _parked_pair(env: Env, tmp_path: Path) -> tuple[Path, Path]:
    desk, check = workspace(tmp_path)
    out = create_agent(desk, env.store, PairModel(), clock=env.clock, lease_ttl_s=LEASE_TTL_S).workflow.send(
        CALLER, "go"
    )
    assert (out.kind, out.parked_channel) == ("parked", "input")
    return desk, check


def _deliver(agent: Any, sid: str, token: str) -> Any:
    return agent.workflow.deliver(sid, trigger="ping", message=f"<<{token}>>", delivery_id=f"d-{token}")


@pytest.mark.parametrize("door", ["child's agent", "caller's agent"])
def test_a_delivery_to_the_child_landing_right_after_a_callers_claim_loses_no_event(
    env: Env, tmp_path: Path, door: str
) -> None:
    desk, check = _parked_pair(env, tmp_path)
    other = create_agent(
        check if door == "child's agent" else desk, env.store, PairModel(), clock=env.clock, lease_ttl_s=LEASE_TTL_S
    )
    racing = CommitThen(env.store, is_claim_of(CALLER), lambda: _deliver(other, CHILD, "B"))
    agent = create_agent(desk, racing, PairModel(), clock=env.clock, lease_ttl_s=LEASE_TTL_S)

    try:
        first: Any = _deliver(agent, CALLER, "A")
    except SessionNotAwaitingInputError as exc:
        first = exc
    second = racing.outcome

    store = env.other_store()
    answers = {"A": first, "B": second}
    applied = [t for t, a in answers.items() if not isinstance(a, Exception)]
    refused = [t for t, a in answers.items() if isinstance(a, SessionNotAwaitingInputError)]
    assert len(applied) == 1 and len(refused) == 1, answers
    everywhere = tokens_in(store, CALLER) + tokens_in(store, CHILD)
    assert everywhere == [f"<<{applied[0]}>>"]  # the applied event once, in one transcript; the refused one nowhere
    assert unleased_running(store, CALLER, CHILD) == []
    assert store.load(CALLER).status == store.load(CHILD).status == SessionStatus.COMPLETED
    [loser] = refused
    assert f"d-{loser}" not in store.load(CALLER).delivery_ids + store.load(CHILD).delivery_ids
    with pytest.raises(SessionNotAwaitingInputError):  # not remembered: never a duplicate, and nothing applied now
        _deliver(agent, CALLER if loser == "A" else CHILD, loser)
    assert tokens_in(store, CALLER) + tokens_in(store, CHILD) == everywhere


def test_a_forwarded_delivery_the_child_refuses_after_the_callers_claim_is_not_remembered(
    env: Env, tmp_path: Path
) -> None:
    """The engine's safety net: a child moved on by its own runner (not through its caller) between the
    caller's claim and the hand-over refuses the delivery; the caller forgets it and catches up."""
    from archmax.engine.door import run_child
    from archmax.session.firing import Deliver
    from archmax.session.ids import SessionId

    desk, _ = _parked_pair(env, tmp_path)
    agent = create_agent(desk, env.store, PairModel(), clock=env.clock, lease_ttl_s=LEASE_TTL_S)
    child_rt = agent.runtime.workflows.runtime("check", agent.runtime.workflow)
    behind = Deliver(SessionId(CHILD), trigger="ping", message="<<B>>", delivery_id="d-B")
    racing = CommitThen(env.store, is_claim_of(CALLER), lambda: run_child(child_rt, behind))
    late = create_agent(desk, racing, PairModel(), clock=env.clock, lease_ttl_s=LEASE_TTL_S)

    with pytest.raises(SessionNotAwaitingInputError):
        _deliver(late, CALLER, "A")

    store = env.other_store()
    caller = store.load(CALLER)
    assert "d-A" not in caller.delivery_ids  # refused: not remembered, its retry is never a duplicate
    assert tokens_in(store, CALLER) + tokens_in(store, CHILD) == ["<<B>>"]
    assert caller.status == store.load(CHILD).status == SessionStatus.COMPLETED  # the child's news reached it
    assert unleased_running(store, CALLER, CHILD) == []
