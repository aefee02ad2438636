"""Issue 22: a retried firing at a child's id is applied once, even when its caller moved on meanwhile.

A firing addressed to ``p1~work:check:1`` while the caller's call names that child is applied as if
sent to the caller (§5.10). When the caller's turn had died mid-call, the caller takes the event
itself (it takes over the dead turn and opens a new one, which abandons the call). If the process
applying it dies before answering, its sender retries with the same delivery id, and by then the
caller has moved on: the retry must be answered where the first attempt went, by the caller's firing
rule (a duplicate, or the continuation of the turn it started, §3.12), never applied again in the
child or in a new session of the child's id. Found by the randomized pair schedules on the memory
store (``event ev13 ... on s0~work:sub:7 was accepted but applied 2 times``); every store kind.

Rule source: BEHAVIOUR.md §5.10, §3.12; README "promises" (a firing with a delivery id is applied once).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from archmax import create_agent
from archmax.errors import DuplicateDeliveryError
from archmax.session.records import SessionStatus
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import DieAfterCommitWhere, Env, ProcessDied

from ._pair import CALLER, CHILD, LEASE_TTL_S, PairModel, tokens_in, unleased_running, workspace

SECOND_CHILD = "p1~work:check:2"


def _agent(env: Env, folder: Path, store: Any = None, mode: str = "long") -> Any:
    model = PairModel(mode, long_steps=1)
    return create_agent(folder, store or env.store, model, clock=env.clock, lease_ttl_s=LEASE_TTL_S)


def _caller_dies_in_its_call(env: Env, desk: Path, where: Any) -> None:
    """The caller's first turn calls the child; its process dies at the commit ``where`` picks; the lease expires."""
    mortal = DieAfterCommitWhere(env.store, where)
    with pytest.raises(ProcessDied):
        _agent(env, desk, mortal).workflow.send(CALLER, "go")
    env.clock.advance(timedelta(seconds=LEASE_TTL_S + 1))
    assert env.other_store().load(CALLER).delegation.session_id == CHILD  # the call in flight names the child


def _send_at_child_dying_after(env: Env, desk: Path, where: Any) -> None:
    """``<<A>>`` (delivery id ``d-A``) sent to the child's id; the process dies at the commit ``where`` picks."""
    mortal = DieAfterCommitWhere(env.store, where)
    with pytest.raises(ProcessDied):
        _agent(env, desk, mortal).workflow.send(CHILD, "<<A>>", delivery_id="d-A")


def _everywhere(env: Env) -> list[str]:
    store = env.other_store()
    return [t for sid in sorted(store.list()) for t in tokens_in(store, sid)]


def test_a_retry_at_the_childs_id_after_its_caller_finished_with_the_event_is_a_duplicate(
    env: Env, tmp_path: Path
) -> None:
    desk, _ = workspace(tmp_path)
    _caller_dies_in_its_call(env, desk, lambda r: r.session_id == CHILD)  # the child exists, its turn dead
    # The caller takes the event (its call in flight names the child), finishes with it, then the process dies.
    _send_at_child_dying_after(env, desk, lambda r: r.session_id == CALLER and r.status == SessionStatus.COMPLETED)
    assert _everywhere(env) == ["<<A>>"]

    with pytest.raises(DuplicateDeliveryError):
        _agent(env, desk).workflow.send(CHILD, "<<A>>", delivery_id="d-A")  # the sender's retry

    assert _everywhere(env) == ["<<A>>"]
    assert tokens_in(env.other_store(), CALLER) == ["<<A>>"]


def test_a_retry_at_the_childs_id_continues_the_turn_its_first_attempt_started_in_the_caller(
    env: Env, tmp_path: Path
) -> None:
    desk, _ = workspace(tmp_path)
    _caller_dies_in_its_call(env, desk, lambda r: r.session_id == CALLER and r.delegation is not None)  # no child
    # The caller's claim of the event lands (it abandons the call, so the child's id names no call), then death.
    _send_at_child_dying_after(env, desk, lambda r: r.session_id == CALLER and "d-A" in r.delivery_ids)
    env.clock.advance(timedelta(seconds=LEASE_TTL_S + 1))

    out = _agent(env, desk).workflow.send(CHILD, "<<A>>", delivery_id="d-A")  # the sender's retry

    assert out.kind == "completed"  # the caller's turn with <<A>>: its new call's child finished within it
    store = env.other_store()
    assert store.load(CHILD) is None  # no session was made at the child's id
    assert store.load(SECOND_CHILD).status == SessionStatus.COMPLETED
    assert _everywhere(env) == ["<<A>>"]
    assert store.load(CALLER).status == SessionStatus.COMPLETED
    assert unleased_running(store, CALLER, SECOND_CHILD) == []
    with pytest.raises(DuplicateDeliveryError):
        _agent(env, desk).workflow.send(CHILD, "<<A>>", delivery_id="d-A")


def test_a_delivery_id_the_child_applied_itself_is_still_the_childs_to_answer(env: Env, tmp_path: Path) -> None:
    """A child whose caller moved on is an ordinary session: an id it applied is a duplicate there, and an
    id neither applied is a new event for it (the caller's ids do not shadow fresh ones)."""
    desk, check = workspace(tmp_path)
    _caller_dies_in_its_call(env, desk, lambda r: r.session_id == CHILD)
    _agent(env, desk).workflow.send(CALLER, "<<B>>", delivery_id="d-B")  # the caller moves on
    child_agent = _agent(env, check)
    child_agent.workflow.send(CHILD, "<<C>> act:wait", delivery_id="d-C")  # the child, on its own
    with pytest.raises(DuplicateDeliveryError):
        child_agent.workflow.send(CHILD, "<<C>> act:wait", delivery_id="d-C")
    assert tokens_in(env.other_store(), CHILD) == ["<<C>>"]
    with pytest.raises(DuplicateDeliveryError):
        child_agent.workflow.send(CHILD, "<<B>>", delivery_id="d-B")  # the caller's event
    assert _everywhere(env) == ["<<B>>", "<<C>>"]
