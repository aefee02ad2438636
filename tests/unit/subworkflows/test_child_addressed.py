"""Issue 22 item 2: a firing addressed to a child's id reaches the pair through its caller.

Integrators address the child (its lifecycle events name it). A delivery, reply or decision sent to
``p1~work:check:1`` is applied as if sent to the caller ``p1``, on every door (the caller's agent, the
child's agent, ``Host.deliver_now``, ``Host.accept``), and the child's completion always reaches its
caller. A child whose turn died is recovered by the caller's stack's sweep.

Rule source: BEHAVIOUR.md §5.10 ("A firing addressed to a child's id reaches the pair through its
caller ... and a child's completion always reaches its caller"), §3.5-§3.7, §3.12. Every store kind.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from archmax import create_agent
from archmax.clock import format_instant
from archmax.errors import DeliveryQueuedError
from archmax.hosting.host import Host
from archmax.models.base import ModelRequest
from archmax.session.firing import Firing
from archmax.session.records import SessionStatus
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import DieAfterCommitWhere, Env, ProcessDied

from ._pair import CALLER, CALLER_DONE, CHILD, LEASE_TTL_S, PairModel, tokens_in, unleased_running, workspace


def _pair(env: Env, tmp_path: Path, mode: str = "wait") -> tuple[Path, Path]:
    desk, check = workspace(tmp_path)
    out = create_agent(desk, env.store, PairModel(mode), clock=env.clock, lease_ttl_s=LEASE_TTL_S).workflow.send(
        CALLER, "go"
    )
    assert out.kind == "parked"
    return desk, check


def _agent(env: Env, folder: Path, model: Any = None) -> Any:
    return create_agent(folder, env.store, model or PairModel(), clock=env.clock, lease_ttl_s=LEASE_TTL_S)


def _assert_pair_finished_with(env: Env, token: str) -> None:
    store = env.other_store()
    caller, child = store.load(CALLER), store.load(CHILD)
    assert (caller.status, child.status) == (SessionStatus.COMPLETED, SessionStatus.COMPLETED)
    assert tokens_in(store, CALLER) + tokens_in(store, CHILD) == [f"<<{token}>>"]
    assert [m.content for m in caller.messages if m.role == "assistant" and m.content][-1] == CALLER_DONE
    assert any(f"Child got <<{token}>>." in m.content for m in caller.messages if m.role == "tool")
    assert unleased_running(store, CALLER, CHILD) == []


def _direct(agent: Any, sid: str, token: str) -> Any:
    return agent.workflow.deliver(sid, trigger="ping", message=f"<<{token}>>", delivery_id=f"d-{token}")


def test_a_delivery_to_the_childs_id_through_the_callers_agent_finishes_the_pair(env: Env, tmp_path: Path) -> None:
    desk, _ = _pair(env, tmp_path)
    out = _direct(_agent(env, desk), CHILD, "A")
    assert out.kind == "completed"
    _assert_pair_finished_with(env, "A")


def test_a_delivery_to_the_childs_id_through_the_childs_agent_also_finishes_its_caller(
    env: Env, tmp_path: Path
) -> None:
    _, check = _pair(env, tmp_path)
    _direct(_agent(env, check), CHILD, "A")
    _assert_pair_finished_with(env, "A")


def test_a_delivery_to_the_childs_id_through_the_callers_host_finishes_the_pair(env: Env, tmp_path: Path) -> None:
    desk, _ = _pair(env, tmp_path)
    Host(_agent(env, desk), env.inbox, clock=env.clock, lease_ttl_s=LEASE_TTL_S).deliver_now(
        CHILD, trigger="ping", message="<<A>>", delivery_id="d-A"
    )
    _assert_pair_finished_with(env, "A")


def test_an_inboxed_message_to_the_childs_id_is_applied_to_the_pair(env: Env, tmp_path: Path) -> None:
    desk, _ = _pair(env, tmp_path)
    host = Host(_agent(env, desk), env.inbox, clock=env.clock, lease_ttl_s=LEASE_TTL_S)
    host.accept(Firing(trigger="ping", message="<<A>>", delivery_id="d-A"), session_id=CHILD)
    host.sweep()  # whatever the drain left is re-driven
    _assert_pair_finished_with(env, "A")
    assert env.inbox.get(CALLER, "d-A").status == "done"  # the pair's one queue is the caller's
    assert env.inbox.get(CHILD, "d-A") is None


def test_a_decision_and_a_reply_to_the_childs_id_through_the_callers_agent_reach_the_pair(
    env: Env, tmp_path: Path
) -> None:
    desk, _ = _pair(env, tmp_path, mode="human")
    agent = _agent(env, desk, PairModel("human"))
    answered = agent.workflow.reply(CHILD, "<<R>> is it approved?")
    assert (answered.kind, answered.parked_channel) == ("parked", "decision")
    out = agent.workflow.decide(CHILD, to="approved", comment="fine")
    assert out.kind == "completed"
    store = env.other_store()
    assert (store.load(CALLER).status, store.load(CHILD).status) == (SessionStatus.COMPLETED, SessionStatus.COMPLETED)
    assert store.load(CHILD).position == "approved"
    assert unleased_running(store, CALLER, CHILD) == []


def test_the_callers_sweep_recovers_a_child_whose_turn_died_after_a_delivery_addressed_to_it(
    env: Env, tmp_path: Path
) -> None:
    desk, check = _pair(env, tmp_path)
    mortal = DieAfterCommitWhere(env.store, lambda record: False)  # a dead process writes nothing more

    def die_in_the_childs_turn(request: ModelRequest, n: int) -> None:
        if "~" in request.session_id:
            mortal.dead = True
            raise ProcessDied("killed during the child's model call")

    dying = create_agent(
        check, mortal, PairModel(on_call=die_in_the_childs_turn), clock=env.clock, lease_ttl_s=LEASE_TTL_S
    )
    with pytest.raises(ProcessDied):
        _direct(dying, CHILD, "A")
    env.clock.advance(timedelta(seconds=LEASE_TTL_S + 1))
    Host(_agent(env, desk), env.inbox, clock=env.clock, lease_ttl_s=LEASE_TTL_S).sweep()
    _assert_pair_finished_with(env, "A")


def test_a_caller_left_parked_behind_a_finished_child_catches_up_when_the_child_is_recovered(
    env: Env, tmp_path: Path
) -> None:
    """A pair written before firings at a child went through its caller (here: the child's own runner
    moves it on); recovering the child's id brings its caller up to date."""
    from archmax.engine.door import run_child
    from archmax.session.firing import Deliver
    from archmax.session.ids import SessionId

    desk, _ = _pair(env, tmp_path)
    agent = _agent(env, desk)
    child_rt = agent.runtime.workflows.runtime("check", agent.runtime.workflow)
    run_child(child_rt, Deliver(SessionId(CHILD), trigger="ping", message="<<A>>", delivery_id="d-A"))
    assert env.other_store().load(CALLER).status == SessionStatus.AWAITING_INPUT  # left behind

    out = agent.workflow.recover(CHILD)

    assert out is not None and out.session_id == CALLER and out.kind == "completed"
    _assert_pair_finished_with(env, "A")


@pytest.mark.parametrize(("queued_at", "direct_at"), [(CALLER, CHILD), (CHILD, CALLER)])
@pytest.mark.parametrize("door", ["deliver_now", "send_now"])
def test_a_direct_firing_at_either_id_of_the_pair_never_overtakes_the_pairs_inbox(
    env: Env, tmp_path: Path, queued_at: str, direct_at: str, door: str
) -> None:
    """Issue 22: ``d-B`` waits behind ``d-A`` in the inbox of one id of the pair; a direct firing of
    ``d-B`` at the other id is refused, nothing is applied, and the drain applies A then B. Before
    (found by attack29) the host read only the addressed id's inbox, and the engine's routing of the
    pair applied B at once, ahead of A."""
    desk, _ = _pair(env, tmp_path)
    host = Host(_agent(env, desk), env.inbox, clock=env.clock, lease_ttl_s=LEASE_TTL_S)
    # the pair's one queue is the caller's, whichever id the firings were accepted at
    assert env.inbox.try_acquire(CALLER, "drain-elsewhere", format_instant(env.clock.now()), LEASE_TTL_S)
    for token in ("A", "B"):  # act:wait keeps the child waiting for the next one
        host.accept(
            Firing(trigger="ping", message=f"<<{token}>> act:wait", delivery_id=f"d-{token}"), session_id=queued_at
        )
    with pytest.raises(DeliveryQueuedError) as refused:
        if door == "deliver_now":
            host.deliver_now(direct_at, trigger="ping", message="<<B>> act:wait", delivery_id="d-B")
        else:
            host.send_now(direct_at, "<<B>> act:wait", trigger="ping", delivery_id="d-B")
    assert refused.value.session_id == CALLER and refused.value.delivery_id == "d-B"
    store = env.other_store()
    assert tokens_in(store, CALLER) + tokens_in(store, CHILD) == []  # nothing applied now

    env.clock.advance(timedelta(seconds=LEASE_TTL_S + 1))  # the other drainer's lease expires
    host.sweep()
    assert tokens_in(store, CALLER) + tokens_in(store, CHILD) == ["<<A>>", "<<B>>"]


@pytest.mark.parametrize(("first", "second"), [(CALLER, CHILD), (CHILD, CALLER)])
def test_a_message_accepted_at_one_id_of_the_pair_waits_behind_one_pending_at_the_other(
    env: Env, tmp_path: Path, first: str, second: str
) -> None:
    """Issue 22 ("each event applied ... in arrival order" for the pair), found by attack29.

    ``d-A`` is accepted at one id of the pair while another drainer holds the pair's drain lease (so
    it waits); ``d-B`` is then accepted at the other id. Before, ``Host.accept`` keyed the item by
    the id it resolved, so the child's items had their own queue and drain lease, and B overtook A.
    Now every item of a chain waits in its root's queue (``queue_id``), applied to the id it names.
    """
    desk, _ = _pair(env, tmp_path)
    host = Host(_agent(env, desk), env.inbox, clock=env.clock, lease_ttl_s=LEASE_TTL_S)
    assert env.inbox.try_acquire(CALLER, "drain-elsewhere", format_instant(env.clock.now()), LEASE_TTL_S)
    host.accept(Firing(trigger="ping", message="<<A>> act:wait", delivery_id="d-A"), session_id=first)
    host.accept(Firing(trigger="ping", message="<<B>> act:wait", delivery_id="d-B"), session_id=second)
    store = env.other_store()
    assert tokens_in(store, CALLER) + tokens_in(store, CHILD) == []  # B waits behind A

    env.clock.advance(timedelta(seconds=LEASE_TTL_S + 1))
    host.sweep()
    assert tokens_in(store, CALLER) + tokens_in(store, CHILD) == ["<<A>>", "<<B>>"]
