"""Issue 22 item 3: a long child turn keeps its caller's lease alive.

The child's turn makes many 25-second model calls under a 60-second lease. Its own lease is renewed
as it goes (§3.12: every commit by the holder extends it); the caller waits inside its
``archmax_workflow_check`` call the whole time, so the child's progress must renew the caller's lease
too. A sweep of another process at the child's fourth call finds nothing to take over, and the call is
answered with the child's result, never ``interrupted``.

Rule source: BEHAVIOUR.md §3.12 (lease, takeover), §9.3 (the lease's renewal is a commit point),
§5.10. Every store kind.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from archmax import create_agent
from archmax.hosting.host import Host
from archmax.models.base import ModelRequest
from archmax.session.records import SessionStatus
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import Env

from ._pair import CALLER, CALLER_DONE, CHILD, LEASE_TTL_S, PairModel, unleased_running, workspace


def test_a_sweep_during_a_long_child_turn_takes_neither_the_child_nor_its_caller(env: Env, tmp_path: Path) -> None:
    desk, _ = workspace(tmp_path)
    sweeps = []
    other = Host(
        create_agent(desk, env.other_store(), PairModel("long"), clock=env.clock, lease_ttl_s=LEASE_TTL_S),
        env.inbox,
        clock=env.clock,
        lease_ttl_s=LEASE_TTL_S,
    )
    child_calls = []

    def slow_child(request: ModelRequest, n: int) -> None:
        if "~" not in request.session_id:
            return
        child_calls.append(n)
        env.clock.advance(timedelta(seconds=25))  # each of the child's model calls takes 25 s
        if len(child_calls) == 4:
            sweeps.append(other.sweep())  # another process sweeps in the middle of the child's turn

    agent = create_agent(
        desk, env.store, PairModel("long", long_steps=6, on_call=slow_child), clock=env.clock, lease_ttl_s=LEASE_TTL_S
    )
    out = agent.workflow.send(CALLER, "go")

    assert len(child_calls) == 7  # six steps and the child's answer: the turn really outlived two leases
    [report] = sweeps
    assert report.recovered == []
    assert (out.kind, out.reply) == ("completed", CALLER_DONE)
    store = env.other_store()
    [result] = [m for m in store.load(CALLER).messages if m.role == "tool" and m.name == "archmax_workflow_check"]
    assert result.status == "success" and "interrupted" not in result.content
    assert store.load(CHILD).status == SessionStatus.COMPLETED
    assert unleased_running(store, CALLER, CHILD) == []
