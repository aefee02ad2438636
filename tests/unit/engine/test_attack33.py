"""Attacks on a firing at another workflow's session where it meets the sub-workflow pair (attack33).

Caller ``s`` (workflow ``a``) calls ``b`` from its state ``work``; ``b`` waits, so ``s`` parks through
its child ``s~work:b:1`` (BEHAVIOUR.md §5.10). A third workflow ``x`` shares the store. Each finding
that is not fixed is a strict xfail naming what happens instead.

Rule sources: BEHAVIOUR.md §3.3 (a refused firing changes nothing), §5.10 (a firing at a child's id
reaches the pair through its caller), §9.3 (the record's ``workflow``), ``Runtime.adopts``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.errors import OtherWorkflowSessionError
from archmax.models.scripted import ScriptedModel
from archmax.session.records import SessionStatus
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore


def calling(slug: str, callee: str) -> Any:
    """Workflow ``slug``: one state ``work`` that may call workflow ``callee``."""
    doc = {"states": {"work": {"triggers": {"manual": None}, "tools": {"allow": [f"archmax_workflow_{callee}"]}}}}
    return workflow_from_dict(doc, slug)


CHILD = "s~work:b:1"
LOOKS = {"states": {"look": {"triggers": {"manual": None}}}}
WORKS = {"states": {"work": {"triggers": {"manual": None}}}}
TO_THE_PARK = [
    {"call": {"archmax_workflow_b": {}}},  # s calls b
    {"say": "Which colour?", "call": {"archmax_wait": {"reason": "a colour"}}},  # b waits (no timer)
]
PARKS_AGAIN = [{"say": "Which shade?", "call": {"archmax_wait": {"reason": "a shade"}}}]


@pytest.fixture(params=["memory", "filesystem", "protocol-only", "aws"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A fresh store of each kind; ``protocol-only`` wraps a memory store in exactly the protocol."""
    if request.param == "memory":
        return MemoryStore()
    if request.param == "filesystem":
        return FilesystemStore(tmp_path / "sessions")
    if request.param == "protocol-only":
        return importlib.import_module("stores.protocol_only").protocol_only(MemoryStore())
    return importlib.import_module("stores.aws.moto_env").fresh_env().store()


def agent_a(store: Any, clock: FakeClock, script: list[dict[str, Any]]) -> Any:
    """Workflow ``a`` (calls ``b``), with ``b`` in its registry."""
    b = workflow_from_dict(LOOKS, "b")
    return create_agent(calling("a", "b"), store, ScriptedModel(script), clock=clock, workflows={"b": b})


def agent_b(store: Any, clock: FakeClock, script: list[dict[str, Any]]) -> Any:
    """Workflow ``b`` alone: the child's own workflow, whose registry does not hold ``a``."""
    return create_agent(workflow_from_dict(LOOKS, "b"), store, ScriptedModel(script), clock=clock)


def parked_pair(store: Any, clock: FakeClock, script: list[dict[str, Any]]) -> Any:
    a = agent_a(store, clock, [*TO_THE_PARK, *script])
    assert a.workflow.send("s", "Go.").kind == "parked"
    assert store.load(CHILD).status == SessionStatus.AWAITING_INPUT
    return a


def dump(store: Any, *ids: str) -> dict[str, Any]:
    loaded = {sid: store.load(sid) for sid in ids}
    return {sid: (store.head(sid), rec.model_dump(mode="json") if rec else None) for sid, rec in loaded.items()}


# ------------------------------------------------------------------------------------------ the pair's routes


@pytest.mark.parametrize(
    "fire",
    [
        lambda x: x.workflow.deliver(CHILD, trigger="manual", message="Blue."),
        lambda x: x.workflow.send(CHILD, "Blue.", delivery_id="via-x"),
        lambda x: x.workflow.reply(CHILD, "Blue?"),
        lambda x: x.workflow.decide(CHILD, to="look"),
        lambda x: x.workflow.recover(CHILD),
        lambda x: x.invoke(CHILD, message="Blue."),
        lambda x: x.workflow.resolve_session(session_id=CHILD),
    ],
    ids=["deliver", "send", "reply", "decide", "recover", "invoke", "resolve"],
)
def test_held_a_child_id_through_an_unrelated_workflow_is_refused_and_changes_nothing(
    store: Any, clock: FakeClock, fire: Any
) -> None:
    parked_pair(store, clock, [])
    before = dump(store, "s", CHILD)
    x = create_agent(workflow_from_dict(WORKS, "x"), store, ScriptedModel([]), clock=clock)
    with pytest.raises(OtherWorkflowSessionError) as refused:
        fire(x)
    assert (refused.value.workflow, refused.value.agent_workflow) == ("b", "x")
    assert "belongs to workflow 'b', not 'x'" in str(refused.value)
    assert dump(store, "s", CHILD) == before


def test_held_a_child_id_through_its_callers_workflow_reaches_the_pair(store: Any, clock: FakeClock) -> None:
    a = parked_pair(store, clock, [{"say": "Blue it is."}, {"say": "Painted."}])
    out = a.workflow.deliver(CHILD, trigger="manual", message="Blue.")
    assert out.kind == "completed"
    assert (store.load("s").status, store.load(CHILD).status) == (SessionStatus.COMPLETED, SessionStatus.COMPLETED)


# ------------------------------------------------------------------------------------------ the pair, bypassed


@pytest.mark.xfail(
    strict=True,
    reason=(
        "attack33: a deliver at a child's id through the child's own workflow, whose registry cannot "
        "run the caller's workflow, is applied to the child alone (forwarding._runtime_of answers None "
        "and addressed falls through to the child): the child completes and its caller stays "
        "awaiting_input for ever, its delegation naming a call that finished (§5.10: the pair's firings "
        "go through the caller)"
    ),
)
def test_a_child_id_through_a_stack_that_cannot_run_its_caller_is_refused(store: Any, clock: FakeClock) -> None:
    parked_pair(store, clock, [])
    before = dump(store, "s", CHILD)
    with pytest.raises(OtherWorkflowSessionError):
        agent_b(store, clock, [{"say": "Blue noted."}]).workflow.deliver(CHILD, trigger="manual", message="Blue.")
    assert dump(store, "s", CHILD) == before


@pytest.mark.xfail(
    strict=True,
    reason=(
        "attack33: a runtime that adopts the caller's old slug (Runtime.adopts, a renamed workflow) is "
        "let through refuse_outside_pair, but forwarding._runtime_of ignores adopts, so a deliver at the "
        "child's id is applied to the child alone: the child completes, the caller stays awaiting_input "
        "with its delegation (§5.10)"
    ),
)
def test_a_renamed_callers_runtime_reaches_the_pair_at_a_child_id(store: Any, clock: FakeClock) -> None:
    parked_pair(store, clock, [])
    renamed = create_agent(
        calling("a2", "b"),
        store,
        ScriptedModel([{"say": "Blue noted."}, {"say": "Painted."}]),
        clock=clock,
        workflows={"b": workflow_from_dict(LOOKS, "b")},
    )
    renamed.runtime.adopts = lambda slug: slug == "a"
    renamed.workflow.deliver(CHILD, trigger="manual", message="Blue.")
    assert store.load("s").status != SessionStatus.AWAITING_INPUT or store.load("s").delegation is None


# ------------------------------------------------------------------------------------------ a squatted child id

SQUATTED = "t~work:b:1"


@pytest.mark.parametrize("x_script", [[{"say": "x's secret"}], PARKS_AGAIN], ids=["completed", "parked"])
def test_a_call_whose_child_id_another_workflow_holds_fails_and_reads_nothing_of_it(
    store: Any, clock: FakeClock, x_script: list[dict[str, Any]]
) -> None:
    x = create_agent(workflow_from_dict(WORKS, "x"), store, ScriptedModel(x_script), clock=clock)
    x.workflow.send(SQUATTED, "hello")
    before = dump(store, SQUATTED)
    a = agent_a(store, clock, [{"call": {"archmax_workflow_b": {}}}, {"say": "Done."}])
    a.workflow.send("t", "Go.")  # the failed call ends the turn as any call that could not start (§5.7)
    results = [m.content or "" for m in store.load("t").messages if m.role == "tool"]
    assert len(results) == 1 and "x's secret" not in results[0] and "Which shade?" not in results[0]
    assert "belongs to workflow 'x', not 'b'" in results[0]
    assert dump(store, SQUATTED) == before
