"""A session's sub-workflow child sessions, found from its own record: no listing of the store.

Rule source: BEHAVIOUR.md §3.10 (``delete(id)``: the id then starts over as a new session), §5.10
(a child's id is ``<parent id>~<state>:<slug>:<ordinal>``, the ordinal counting that state's calls in
the session), issue 22 (a deleted session's children must not answer the id's next session: a restarted
caller would derive the same child id, take the old child's result and adopt its delivery ids).

The record counts each state's calls (``Checkpoint.subworkflow_calls``) but not which workflow each
ordinal called, so every ordinal is tried with each slug the session could have called there: the
trail's ``sub-workflow`` steps on that state, the call in flight (``Checkpoint.delegation``) and the
state's granted ``archmax_workflow_<slug>`` tools in the session's workflow (a call a new turn abandoned
leaves no trail step). Each try is one point read of the store.
"""

from __future__ import annotations

from archmax.engine.runtime import Runtime
from archmax.errors import WorkflowSpecError
from archmax.session.records import Checkpoint
from archmax.spec import Workflow


def child_ids(rt: Runtime, rec: Checkpoint) -> list[str]:
    """Every id a sub-workflow call of ``rec`` may have given its child, whether or not it exists (§5.10).

    Returns:
        ``<rec id>~<state>:<slug>:<ordinal>`` for each state in ``rec.subworkflow_calls``, each ordinal
        from 1 to its count and each candidate slug of that state, without repeats, in that order.
    """
    spec = _workflow_of(rt, rec)
    ids: list[str] = []
    for state, count in rec.subworkflow_calls.items():
        for slug in _slugs_called_from(rec, spec, state):
            ids.extend(f"{rec.session_id}~{state}:{slug}:{n}" for n in range(1, count + 1))
    return list(dict.fromkeys(ids))


def descendants(rt: Runtime, rec: Checkpoint) -> list[Checkpoint]:
    """The latest checkpoints of ``rec``'s existing children, their children, and so on (§5.10 depth ≤ 5).

    Returns:
        Deepest first: every session comes after its own children, so deleting in this order and then
        ``rec`` leaves, after a crash midway, only sessions whose caller still records them.

    Raises:
        StoreError: a child's checkpoint could not be read.
    """
    found: list[Checkpoint] = []
    for child_id in child_ids(rt, rec):
        child = rt.store.load(child_id)
        if child is not None:
            found.extend(descendants(rt, child))  # a child's id extends its caller's: the walk ends
            found.append(child)
    return found


def _slugs_called_from(rec: Checkpoint, spec: Workflow | None, state: str) -> list[str]:
    slugs = [s.workflow for s in rec.trail if s.kind == "sub-workflow" and s.to == state and s.workflow]
    if rec.delegation is not None and rec.delegation.state == state:
        slugs.append(rec.delegation.workflow)
    if spec is not None and state in spec.states:
        slugs.extend(spec.subworkflows_for(state))
    return list(dict.fromkeys(slugs))


def runtime_of(rt: Runtime, rec: Checkpoint) -> Runtime | None:
    """The runtime of the workflow ``rec`` runs: the agent's own, or a child's found beside it (§5.10).

    Returns:
        ``None`` when that workflow is not available (not found, or it does not load).
    """
    if rec.workflow == rt.workflow.slug:
        return rt
    if rt.workflows is None:
        return None
    try:
        child_rt: Runtime = rt.workflows.runtime(rec.workflow, rt.workflow)
    except WorkflowSpecError:
        return None
    return child_rt


def _workflow_of(rt: Runtime, rec: Checkpoint) -> Workflow | None:
    own = runtime_of(rt, rec)
    return own.workflow if own is not None else None
