"""Issue 22 three levels deep: a reply forwarded to a grandchild is the chain's event, applied once.

Caller ``s`` (workflow ``a``) calls ``b``, which calls ``c``, which parks at a human state: ``s`` and
``s~work:b:1`` park at the grandchild's decision (§5.10). A reply sent to ``s`` with a delivery id is
answered by the grandchild and remembered there alone. After the chain finishes (a decision), or after
a new turn of ``s`` abandons its call (``invoke``), a redelivery of that id to ``s`` is a duplicate: the
caller adopts the ids of every session its call in flight delegates to, down the chain (the abandon
path adopted only its direct child's, which had never settled with the grandchild, so the reply was
applied a second time).

Rule source: BEHAVIOUR.md §3.5, §3.6, §5.10; README "promises" (a firing with a delivery id is applied once).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax.errors import DuplicateDeliveryError

from ._chain import GRANDCHILD, TO_THE_DECISION, chain_agent

SCRIPT = [
    *TO_THE_DECISION,
    {"say": "Noted."},  # c answers the reply
    {"say": "Done here."},
    {"say": "Done here."},
    {"say": "Done here."},
]


@pytest.fixture(params=["memory", "filesystem"])
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    built = chain_agent(request.param, tmp_path, SCRIPT)
    built.workflow.send("s", "Go.")
    assert built.store.load("s").delegation.session_id == "s~work:b:1"
    built.workflow.send("s", "One more thing.", delivery_id="r1")  # a reply: the grandchild answers it
    assert built.store.load(GRANDCHILD).delivery_ids == ["r1"] and built.store.load("s").delivery_ids == []
    return built


def _applied(agent: Any, text: str) -> int:
    store = agent.store
    return sum(m.content == text for sid in store.list() for m in store.load(sid).messages)


def test_a_reply_the_grandchild_applied_is_a_duplicate_at_the_caller_while_parked(agent: Any) -> None:
    with pytest.raises(DuplicateDeliveryError):
        agent.workflow.send("s", "One more thing.", delivery_id="r1")
    assert _applied(agent, "One more thing.") == 1


def test_a_reply_the_grandchild_applied_stays_a_duplicate_after_the_chain_finished(agent: Any) -> None:
    assert agent.workflow.decide("s", to="approved").kind == "completed"
    with pytest.raises(DuplicateDeliveryError):
        agent.workflow.send("s", "One more thing.", delivery_id="r1")
    assert _applied(agent, "One more thing.") == 1


def test_a_reply_the_grandchild_applied_stays_a_duplicate_after_a_new_turn_abandoned_the_call(agent: Any) -> None:
    agent.invoke("s", message="A new piece of work.")
    assert agent.store.load("s").delegation is None
    with pytest.raises(DuplicateDeliveryError):
        agent.workflow.send("s", "One more thing.", delivery_id="r1")
    assert _applied(agent, "One more thing.") == 1
    assert "r1" in agent.store.load("s").delivery_ids  # adopted from the grandchild by the new turn's claim
