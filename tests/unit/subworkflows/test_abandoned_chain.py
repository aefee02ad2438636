"""A new turn of ``s`` abandons a call two levels deep: the child and the grandchild are both closed.

Caller ``s`` (workflow ``a``) calls ``b``, which calls ``c``, which parks at a human state (§5.10: ``s``,
``s~work:b:1`` and ``s~work:b:1~work:c:1`` all park at the grandchild's decision). ``invoke("s")``
abandons the call; the child abandons its own call the same way, so no session of the chain stays
parked, and a firing at either id is refused. A close that did not land is done at the next touch of
any id of the chain. A redelivery of a reply the grandchild applied stays a duplicate. Memory and
filesystem stores.

Rule source: BEHAVIOUR.md §5.10, §8 step 5, §3.9, §3.1, §3.3; ``archmax.engine.abandon`` (the rule
chosen where the contract is silent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax.engine import turn
from archmax.engine.abandon import abandoned_reason
from archmax.errors import DuplicateDeliveryError, SubworkflowCallAbandonedError
from archmax.session.records import SessionStatus

from ._chain import CHAIN, CHILD, GRANDCHILD, TO_THE_DECISION, chain_agent

SCRIPT = [*TO_THE_DECISION, {"say": "Noted."}, {"say": "Fresh work done."}]


@pytest.fixture(params=["memory", "filesystem"])
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    built = chain_agent(request.param, tmp_path, SCRIPT)
    built.workflow.send("s", "Go.")
    built.workflow.send("s", "One more thing.", delivery_id="r1")  # a reply the grandchild answers
    assert [built.store.load(sid).status for sid in CHAIN] == [SessionStatus.AWAITING_DECISION] * 3
    return built


def _snapshot(agent: Any) -> list[str]:
    return [agent.store.load(sid).model_dump_json() for sid in CHAIN]


def test_the_new_turn_closes_the_child_and_the_grandchild(agent: Any) -> None:
    out = agent.invoke("s", message="A new piece of work.")
    assert (out.kind, out.reply) == ("completed", "Fresh work done.")
    child, grandchild = agent.store.load(CHILD), agent.store.load(GRANDCHILD)
    assert (child.status, child.rejected, child.delegation) == (SessionStatus.REJECTED, abandoned_reason("s"), None)
    assert child.abandoned_calls == [GRANDCHILD]
    assert (grandchild.status, grandchild.rejected) == (SessionStatus.REJECTED, abandoned_reason(CHILD))
    assert grandchild.pending_decision is None
    assert agent.store.oldest_park("b") is None and agent.store.oldest_park("c") is None


@pytest.mark.parametrize("target", [CHILD, GRANDCHILD])
def test_a_decision_or_reply_at_an_id_of_the_chain_is_refused_and_changes_nothing(agent: Any, target: str) -> None:
    agent.invoke("s", message="A new piece of work.")
    before = _snapshot(agent)
    with pytest.raises(SubworkflowCallAbandonedError) as refused:
        agent.workflow.decide(target, to="approved")
    assert refused.value.session_id == target
    with pytest.raises(SubworkflowCallAbandonedError):
        agent.workflow.reply(target, "Approve it.")
    assert _snapshot(agent) == before


def test_a_redelivery_of_a_reply_the_grandchild_applied_stays_a_duplicate(agent: Any) -> None:
    agent.invoke("s", message="A new piece of work.")
    before = _snapshot(agent)
    for target in ("s", GRANDCHILD):
        with pytest.raises(DuplicateDeliveryError):
            agent.workflow.send(target, "One more thing.", delivery_id="r1")
    assert _snapshot(agent) == before


def test_a_close_that_did_not_land_is_done_when_the_grandchilds_id_is_touched(
    agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn, "close_abandoned", lambda *args: [])  # the process stopped after the caller's claim
    agent.invoke("s", message="A new piece of work.")
    assert agent.store.load(GRANDCHILD).status == SessionStatus.AWAITING_DECISION
    with pytest.raises(SubworkflowCallAbandonedError) as refused:
        agent.workflow.decide(GRANDCHILD, to="approved")  # reaches the pair through its caller, the child
    assert (refused.value.session_id, refused.value.caller_id) == (CHILD, "s")
    child, grandchild = agent.store.load(CHILD), agent.store.load(GRANDCHILD)
    assert (child.status, grandchild.status) == (SessionStatus.REJECTED, SessionStatus.REJECTED)
    assert grandchild.position == "review"  # not decided: the decision was not applied


def test_deleting_the_caller_still_deletes_the_closed_chain(agent: Any) -> None:
    agent.invoke("s", message="A new piece of work.")
    assert agent.sessions.delete("s") is True
    assert agent.store.list() == []
