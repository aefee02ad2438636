"""An agent fired at a session of another workflow (not its sub-workflow pair) in a shared store (attack32).

The CLI refuses ``run <other> --session <id>`` and ``deliver <id> --workflow <other>`` at its edge
(5bde42e), but the engine did not: an agent assembled for workflow ``x`` whose store also holds
sessions of ``y`` (``archmax serve x`` on the workspace's shared ``sessions/``, whose HTTP deliver
route fires any id; a library host) resumed ``y``'s park under ``x``'s states, raised a bare
``KeyError`` and left the session ``running``. BEHAVIOUR.md §3.3: a refused firing changes nothing,
and errors are typed (one error tree). Every firing kind now refuses on the record it reads, before
its claim (``firing_rule.refuse_other_workflow``), with ``OtherWorkflowSessionError`` naming both
workflows; ``Runtime.adopts`` lets a renamed workflow continue its old sessions (the CLI's case).
Run on every store (memory, filesystem, AwsStore on moto).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archmax import MemoryStore, SessionStatus, create_agent
from archmax.clock import FakeClock
from archmax.errors import OtherWorkflowSessionError
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore

ASKING = {"states": {"ask": {"triggers": {"manual": None}}}}
WORKING = {"states": {"work": {"triggers": {"manual": None}}}}
REVIEWING = {
    "states": {
        "start": {"triggers": {"manual": None}, "transitions": [{"to": "review", "description": "Ready."}]},
        "review": {
            "type": "human",
            "timeout": "1d",
            "transitions": [
                {"to": "approved", "description": "Approved."},
                {"to": "escalated", "description": "Nobody answered.", "on_timeout": True},
            ],
        },
        "approved": None,
        "escalated": None,
    }
}
WAITS = [{"call": {"archmax_wait": {"reason": "the order id"}}}, {"say": "Which order?"}]
TO_REVIEW = [{"call": {"archmax_advance": {"to": "review", "reason": "ready"}}}, {"say": "Please review."}]
SID = "s1"


def test_a_delivery_through_another_workflows_agent_is_refused_and_changes_nothing() -> None:
    store = MemoryStore()
    asking = create_agent(workflow_from_dict(ASKING, "y"), store, ScriptedModel(WAITS), clock=FakeClock())
    assert asking.workflow.send("s1", "hi").kind == "parked"
    before = store.head("s1")
    other = create_agent(workflow_from_dict(WORKING, "x"), store, ScriptedModel([{"say": "x"}]), clock=FakeClock())
    with pytest.raises(OtherWorkflowSessionError):
        other.workflow.deliver("s1", trigger="manual", message="ORD-1")
    assert store.head("s1") == before


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(params=["memory", "filesystem", "aws"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A fresh store of each kind (the AWS one on the process's moto server, reset)."""
    if request.param == "memory":
        return MemoryStore()
    if request.param == "filesystem":
        return FilesystemStore(tmp_path / "sessions")
    return importlib.import_module("stores.aws.moto_env").fresh_env().store()


class Crashes:
    """A model whose process dies on its first call: the turn is left ``running`` under its lease."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise RuntimeError("the process died")


def agent_y(store: Any, doc: dict, model: Any, clock: FakeClock) -> Any:
    model = ScriptedModel(model) if isinstance(model, list) else model
    return create_agent(workflow_from_dict(doc, "y"), store, model, clock=clock)


def agent_x(store: Any, clock: FakeClock) -> Any:
    """The agent of another workflow; its model is never called (a call would fail the script)."""
    return create_agent(workflow_from_dict(WORKING, "x"), store, ScriptedModel([]), clock=clock)


def snapshot(store: Any, tmp_path: Path) -> tuple[Any, Any, dict[str, bytes]]:
    """The session's head and whole record, and every byte of a filesystem store's folder."""
    record = store.load(SID)
    files = {str(p.relative_to(tmp_path)): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    return store.head(SID), record.model_dump(mode="json") if record else None, files


def assert_refused(store: Any, tmp_path: Path, fire: Callable[[], Any]) -> None:
    before = snapshot(store, tmp_path)
    with pytest.raises(OtherWorkflowSessionError) as caught:
        fire()
    error = caught.value
    assert (error.session_id, error.workflow, error.agent_workflow) == (SID, "y", "x")
    assert f"session '{SID}' belongs to workflow 'y', not 'x'" in str(error)
    assert snapshot(store, tmp_path) == before


# ------------------------------------------------------------------------------------------ input park

INPUT_PARK_FIRINGS: dict[str, Callable[[Any, int], Any]] = {
    "deliver": lambda x, _v: x.workflow.deliver(SID, trigger="manual", message="ORD-1"),
    "deliver-with-id": lambda x, _v: x.workflow.deliver(SID, trigger="manual", message="ORD-1", delivery_id="d-1"),
    "timer": lambda x, v: x.workflow.deliver(SID, trigger="timer", variables={"now": "x"}, park_version=v),
    "send": lambda x, _v: x.workflow.send(SID, "ORD-1"),
    "invoke": lambda x, _v: x.invoke(SID, message="a new turn"),
    "resolve_session": lambda x, _v: x.workflow.resolve_session(session_id=SID),
}


@pytest.mark.parametrize("firing", INPUT_PARK_FIRINGS, ids=list(INPUT_PARK_FIRINGS))
def test_every_firing_at_another_workflows_input_park_is_refused_and_changes_nothing(
    store: Any, tmp_path: Path, clock: FakeClock, firing: str
) -> None:
    asking = agent_y(store, ASKING, [*WAITS, {"say": "Thanks."}], clock)
    assert asking.workflow.send(SID, "hi").kind == "parked"
    version = store.head(SID).version
    assert_refused(store, tmp_path, lambda: INPUT_PARK_FIRINGS[firing](agent_x(store, clock), version))
    assert asking.workflow.deliver(SID, trigger="manual", message="ORD-1").reply == "Thanks."  # still y's to answer


# ------------------------------------------------------------------------------------------ decision park

DECISION_PARK_FIRINGS: dict[str, Callable[[Any], Any]] = {
    "reply": lambda x: x.workflow.reply(SID, "Is it done?"),
    "decide": lambda x: x.workflow.decide(SID, to="approved"),
    "timeout": lambda x: x.workflow.expire(SID),
    "send": lambda x: x.workflow.send(SID, "Is it done?"),
    "invoke": lambda x: x.invoke(SID, message="a new turn"),
}


@pytest.mark.parametrize("firing", DECISION_PARK_FIRINGS, ids=list(DECISION_PARK_FIRINGS))
def test_every_firing_at_another_workflows_decision_park_is_refused_and_changes_nothing(
    store: Any, tmp_path: Path, clock: FakeClock, firing: str
) -> None:
    reviewing = agent_y(store, REVIEWING, TO_REVIEW, clock)
    assert reviewing.workflow.send(SID, "refund").state == "review"
    clock.advance(days=2)  # past the park's deadline: a timeout would apply, were the session x's
    assert_refused(store, tmp_path, lambda: DECISION_PARK_FIRINGS[firing](agent_x(store, clock)))


# ------------------------------------------------------------------------------------------ dead turn, finished

DEAD_TURN_FIRINGS: dict[str, Callable[[Any], Any]] = {
    "recover": lambda x: x.workflow.recover(SID),
    "send": lambda x: x.workflow.send(SID, "hello again"),
    "invoke": lambda x: x.invoke(SID, message="a new turn"),
}


@pytest.mark.parametrize("firing", DEAD_TURN_FIRINGS, ids=list(DEAD_TURN_FIRINGS))
def test_another_workflows_dead_turn_is_not_taken_over(
    store: Any, tmp_path: Path, clock: FakeClock, firing: str
) -> None:
    with pytest.raises(RuntimeError):
        agent_y(store, ASKING, Crashes(), clock).workflow.send(SID, "hi")
    clock.advance(minutes=16)  # its lease expired: its own workflow's sweep would take it over
    assert store.head(SID).status == SessionStatus.RUNNING
    assert_refused(store, tmp_path, lambda: DEAD_TURN_FIRINGS[firing](agent_x(store, clock)))


def test_a_new_turn_on_another_workflows_finished_session_is_refused(
    store: Any, tmp_path: Path, clock: FakeClock
) -> None:
    assert agent_y(store, ASKING, [{"say": "Done."}], clock).workflow.send(SID, "hi").kind == "completed"
    assert_refused(store, tmp_path, lambda: agent_x(store, clock).workflow.send(SID, "once more"))


# ------------------------------------------------------------------------------------------ adopted (renamed)


def test_a_runtime_that_adopts_the_old_slug_continues_a_renamed_workflows_session(clock: FakeClock) -> None:
    store = MemoryStore()
    assert agent_y(store, ASKING, WAITS, clock).workflow.send(SID, "hi").kind == "parked"
    renamed = create_agent(workflow_from_dict(ASKING, "y2"), store, ScriptedModel([{"say": "Thanks."}]), clock=clock)
    with pytest.raises(OtherWorkflowSessionError, match="belongs to workflow 'y', not 'y2'"):
        renamed.workflow.deliver(SID, trigger="manual", message="ORD-1")
    renamed.runtime.adopts = lambda slug: slug == "other"  # adopting another slug adopts nothing here
    with pytest.raises(OtherWorkflowSessionError):
        renamed.workflow.deliver(SID, trigger="manual", message="ORD-1")
    renamed.runtime.adopts = lambda slug: slug == "y"
    outcome = renamed.workflow.deliver(SID, trigger="manual", message="ORD-1")
    assert outcome.kind == "completed" and outcome.reply == "Thanks."
    assert store.head(SID).workflow == "y"  # the record keeps the slug it was created under (§9.3)
