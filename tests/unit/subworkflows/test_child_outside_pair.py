"""A firing at a child's id through a workflow outside its caller chain is refused, changing nothing (attack32).

"A firing addressed to a child's id reaches the pair through its caller" (BEHAVIOUR.md §5.10): the
child's and the caller's agents may send it (tests in ``test_child_addressed.py``). An agent of a
third workflow beside them must not: its registry finds the pair's workflows beside its own, so
the door would otherwise route the firing to them and drive the pair from a host that is not
theirs. The engine refuses it with ``OtherWorkflowSessionError`` before routing, as the CLI does
(``Context.refuse_other_workflow``). Every store kind.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax import create_agent
from archmax.errors import OtherWorkflowSessionError
from archmax.models.scripted import ScriptedModel
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import Env

from ._pair import CALLER, CHILD, LEASE_TTL_S, PairModel, workspace

OTHER = {"states": {"work": {"triggers": {"manual": None}}}}

FIRINGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "deliver": ("wait", lambda a: a.workflow.deliver(CHILD, trigger="ping", message="<<A>>", delivery_id="d-A")),
    "send": ("wait", lambda a: a.workflow.send(CHILD, "<<A>>")),
    "resolve_session": ("wait", lambda a: a.workflow.resolve_session(session_id=CHILD)),
    "reply": ("human", lambda a: a.workflow.reply(CHILD, "Is it done?")),
    "decide": ("human", lambda a: a.workflow.decide(CHILD, to="approved")),
}


def records(env: Env) -> list[Any]:
    store = env.other_store()
    return [(store.head(s), store.load(s).model_dump(mode="json")) for s in (CALLER, CHILD)]


@pytest.mark.parametrize("firing", FIRINGS, ids=list(FIRINGS))
def test_a_third_workflows_agent_is_refused_at_the_childs_id(env: Env, tmp_path: Path, firing: str) -> None:
    mode, fire = FIRINGS[firing]
    desk, _ = workspace(tmp_path)
    (tmp_path / "workflows" / "other").mkdir()
    (tmp_path / "workflows" / "other" / "workflow.yaml").write_text(yaml.safe_dump(OTHER), encoding="utf-8")
    caller = create_agent(desk, env.store, PairModel(mode), clock=env.clock, lease_ttl_s=LEASE_TTL_S)
    assert caller.workflow.send(CALLER, "go").kind == "parked"
    before = records(env)
    other = create_agent(tmp_path / "workflows" / "other", env.store, ScriptedModel([]), clock=env.clock)
    with pytest.raises(OtherWorkflowSessionError) as caught:
        fire(other)
    assert (caught.value.workflow, caught.value.agent_workflow) == ("check", "other")
    assert f"session '{CHILD}' belongs to workflow 'check', not 'other'" in str(caught.value)
    assert records(env) == before
