"""A three-level sub-workflow chain on memory or filesystem: ``s`` (workflow ``a``) calls ``b``, which calls
``c``, which parks at a human state (§5.10: ``s``, ``s~work:b:1``, ``s~work:b:1~work:c:1``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.models.scripted import ScriptedModel
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore

T0 = "2025-01-01T00:00:00.000Z"
CHILD = "s~work:b:1"
GRANDCHILD = "s~work:b:1~work:c:1"
CHAIN = ("s", CHILD, GRANDCHILD)
REVIEWED = {
    "states": {
        "look": {"triggers": {"manual": None}, "transitions": [{"to": "review", "description": "Check."}]},
        "review": {"type": "human", "transitions": [{"to": "approved", "description": "Approved."}]},
        "approved": None,
    }
}
TO_THE_DECISION = [
    {"call": {"archmax_workflow_b": {}}},  # s calls b
    {"call": {"archmax_workflow_c": {}}},  # b calls c
    {"call": {"archmax_advance": {"to": "review", "reason": "ready"}}},  # c parks at its decision
    {"say": "Please review."},
]
"""The model turns that park the chain at ``c``'s decision."""


def calling(slug: str, callee: str) -> Any:
    """Workflow ``slug``: one state ``work`` that may call workflow ``callee``."""
    doc = {"states": {"work": {"triggers": {"manual": None}, "tools": {"allow": [f"archmax_workflow_{callee}"]}}}}
    return workflow_from_dict(doc, slug)


def chain_agent(kind: str, tmp_path: Path, script: list[dict[str, Any]]) -> Any:
    """An agent of workflow ``a`` over a ``kind`` (``memory``/``filesystem``) store, with ``b`` and ``c``."""
    store = MemoryStore() if kind == "memory" else FilesystemStore(tmp_path / "sessions")
    workflows = {"b": calling("b", "c"), "c": workflow_from_dict(REVIEWED, "c")}
    return create_agent(calling("a", "b"), store, ScriptedModel(script), clock=FakeClock(T0), workflows=workflows)
