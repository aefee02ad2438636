"""An agent fired at a session of another workflow (not its sub-workflow pair) in a shared store (attack32).

The CLI refuses ``run <other> --session <id>`` and ``deliver <id> --workflow <other>`` at its edge
(5bde42e), but the engine does not: an agent assembled for workflow ``x`` whose store also holds
sessions of ``y`` (``archmax serve x`` on the workspace's shared ``sessions/``, whose HTTP deliver
route fires any id; a library host) resumes ``y``'s park under ``x``'s states, raises a bare
``KeyError`` and leaves the session ``running``. BEHAVIOUR.md §3.3: a refused firing changes nothing,
and errors are typed (one error tree).
"""

from __future__ import annotations

import pytest

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.errors import ArchmaxError
from archmax.models.scripted import ScriptedModel
from archmax.spec import workflow_from_dict

ASKING = {"states": {"ask": {"triggers": {"manual": None}}}}
WORKING = {"states": {"work": {"triggers": {"manual": None}}}}


@pytest.mark.xfail(
    strict=True,
    reason="attack32 finding: the engine does not check the session's workflow against the agent's; only the CLI "
    "refuses (context.refuse_other_workflow). The fix belongs at the door (a typed refusal before the claim).",
)
def test_a_delivery_through_another_workflows_agent_is_refused_and_changes_nothing() -> None:
    store = MemoryStore()
    script = [{"call": {"archmax_wait": {"reason": "the order id"}}}, {"say": "Which order?"}]
    asking = create_agent(workflow_from_dict(ASKING, "y"), store, ScriptedModel(script), clock=FakeClock())
    assert asking.workflow.send("s1", "hi").kind == "parked"
    before = store.head("s1")
    other = create_agent(workflow_from_dict(WORKING, "x"), store, ScriptedModel([{"say": "x"}]), clock=FakeClock())
    with pytest.raises(ArchmaxError):
        other.workflow.deliver("s1", trigger="manual", message="ORD-1")
    assert store.head("s1") == before
