"""``sessions.delete(id)`` takes the session's sub-workflow children with it, down the chain (issue 22).

Caller ``s`` (workflow ``a``) calls ``b``, which calls ``c``, which parks at a human state: the chain is
``s``, ``s~work:b:1`` and ``s~work:b:1~work:c:1`` (§5.10). Deleting ``s`` must delete all three, or
the id started over derives the same child ids and meets the deleted session's children (their
results, their delivery ids). The children are found from the caller's record, not by listing the
store. One of them under a live lease refuses the delete, which then deletes nothing.

Rule source: BEHAVIOUR.md §3.10 (the id then starts over as a new session), §5.10 (child ids), §3.12
(one writer per session); issue 22.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax import SessionNotResumableError
from archmax.session.records import Lease

from ._chain import CHAIN, CHILD, GRANDCHILD, TO_THE_DECISION, chain_agent

SCRIPT = [
    *TO_THE_DECISION,
    {"say": "Done here."},
    {"say": "Done here."},
]


@pytest.fixture(params=["memory", "filesystem"])
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    built = chain_agent(request.param, tmp_path, SCRIPT)
    built.workflow.send("s", "Go.", delivery_id="first")
    assert all(built.store.load(sid) is not None for sid in CHAIN)
    return built


def test_deleting_a_caller_deletes_its_children_and_theirs(agent: Any) -> None:
    agent.store.seed(GRANDCHILD, {"scratchpad/note.txt": "kept by the grandchild"})
    assert agent.sessions.delete("s") is True
    assert [agent.store.load(sid) for sid in CHAIN] == [None, None, None]
    assert agent.store.get(GRANDCHILD, "scratchpad/note.txt") is None
    assert agent.store.list() == []
    assert agent.sessions.delete("s") is False  # nothing left under the id


def test_a_call_a_new_turn_abandoned_is_found_from_the_states_grants(agent: Any) -> None:
    agent.invoke("s", message="A new piece of work.")  # abandons the call: no sub-workflow trail step
    caller = agent.store.load("s")
    assert caller.delegation is None and not [t for t in caller.trail if t.kind == "sub-workflow"]
    assert agent.sessions.delete("s") is True
    assert agent.store.list() == []


def test_a_grandchild_under_a_live_lease_refuses_the_callers_delete_and_nothing_is_deleted(agent: Any) -> None:
    held = agent.store.load(GRANDCHILD)  # another process claims the grandchild, as a live turn would
    held.version += 1
    held.lease = Lease(owner="another-process", expires_at="2025-01-01T00:15:00.000Z")
    agent.store.commit(GRANDCHILD, held, held.version - 1)
    before = {sid: agent.store.load(sid).model_dump_json() for sid in CHAIN}

    with pytest.raises(SessionNotResumableError) as refused:
        agent.sessions.delete("s")
    assert refused.value.session_id == GRANDCHILD
    assert {sid: agent.store.load(sid).model_dump_json() for sid in CHAIN} == before

    agent.runtime.clock.advance(minutes=16)  # the lease lapses: the delete goes through
    assert agent.sessions.delete("s") is True
    assert agent.store.list() == []


def test_a_delete_that_stopped_after_the_children_is_finished_by_deleting_again(agent: Any) -> None:
    agent.store.delete(GRANDCHILD)  # a crash midway: children go first, deepest first
    assert agent.store.load(CHILD) is not None
    assert agent.sessions.delete("s") is True
    assert agent.store.list() == []
