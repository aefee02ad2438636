"""The firing rule: what a session's state makes of a firing, decided before anything is written.

Rule source: BEHAVIOUR.md §3.1 (parks), §3.2 (the firing rule), §3.3 (a refusal writes nothing:
a session of another workflow, attack32), §3.8 (``resolve_session``), §3.12 (leases), §4.2 (id
precedence), §5.10 (a child's id reaches the pair through its caller). Everything here reads;
nothing commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from archmax.engine.runtime import Runtime
from archmax.errors import (
    OtherWorkflowSessionError,
    SessionNotAwaitingInputError,
    SessionNotResumableError,
    UnknownSessionTriggerError,
)
from archmax.session.ids import SessionId, mint_session_id, parent_session_id, parse_session_id
from archmax.session.paths import SessionPath, parse_session_path, resolve_session_id
from archmax.session.records import Checkpoint, SessionStatus, is_finished
from archmax.session.results import Resolution
from archmax.stores.base import SessionHead

Disposition = Literal["turn", "resume", "reply"]


def lease_live(rt: Runtime, rec: Checkpoint) -> bool:
    """A lease is live while ``expires_at > now`` (§3.12)."""
    return rec.lease is not None and rec.lease.live_at(rt.now())


def parked_channel(rt: Runtime, rec: Checkpoint | None) -> str | None:
    """The channel a session is parked on, or None: status ``awaiting_*``, a record, no live lease (§3.1)."""
    if rec is None or lease_live(rt, rec):
        return None
    if rec.status == SessionStatus.AWAITING_INPUT and rec.pending_input is not None:
        return "input"
    if rec.status == SessionStatus.AWAITING_DECISION and rec.pending_decision is not None:
        return "decision"
    return None


def classify(rt: Runtime, session_id: str, rec: Checkpoint | None) -> tuple[Disposition, bool]:
    """The firing rule (§3.2): ``(disposition, recovered)``.

    Raises:
        SessionNotResumableError: the session is mid-turn under a live lease, or it is parked through its
            sub-workflow child and the child holds a live lease (a reply it is answering: the pair is
            one session to a firing, §5.10; issue 22).
    """
    if rec is None or is_finished(rec.status):
        return "turn", False
    channel = parked_channel(rt, rec)
    if channel is not None and rec.delegation is not None:
        child = rt.store.load(rec.delegation.session_id)
        if child is not None and lease_live(rt, child):
            raise SessionNotResumableError(session_id, str(rec.status), f"its child '{child.session_id}' is mid-turn")
    if channel == "input":
        return "resume", False
    if channel == "decision":
        return "reply", False
    if lease_live(rt, rec):
        raise SessionNotResumableError(session_id, str(rec.status))
    return "turn", True  # running (or parked mid-handoff) with an expired lease: take it over


def died_applying(rt: Runtime, rec: Checkpoint | None, delivery_id: str | None) -> bool:
    """Whether ``delivery_id`` is the last event the session applied and the turn it started died.

    "Died" means still ``running`` with an expired lease (§3.12): redriving that event must finish its
    turn, not be dropped as a duplicate.
    """
    return (
        rec is not None
        and delivery_id is not None
        and bool(rec.delivery_ids)
        and rec.delivery_ids[-1] == delivery_id
        and rec.status == SessionStatus.RUNNING
        and not lease_live(rt, rec)
    )


def refuse_other_workflow(rt: Runtime, found: Checkpoint | SessionHead | None) -> None:
    """Refuse a firing at a session recorded under another workflow than ``rt``'s, before anything is written.

    The door's rule (attack32): an agent of workflow ``x`` whose store also holds sessions of ``y``
    (``archmax serve x`` on a workspace's shared ``sessions/``, a library host) must not resume
    ``y``'s park under ``x``'s states. Every firing kind checks the record (or head) it read first,
    before its claim, so a refusal changes nothing (BEHAVIOUR.md §3.3). The comparison is the
    record's ``workflow`` (§9.3) against ``rt.workflow.slug``:

    * a firing addressed to a sub-workflow child's id has already been routed through its caller
      (or to the child's own workflow) by :func:`~archmax.engine.forwarding.addressed` (§5.10), so
      the pair's firings reach here with matching slugs;
    * ``rt.adopts(slug)`` true lets the runtime continue that workflow's session as its own (the
      CLI's renamed workflow folder, whose sessions still name the old slug: BEHAVIOUR.md §11).

    Args:
        rt: The runtime the firing came through.
        found: The session's record or head as read; ``None`` (no such session) passes.

    Raises:
        OtherWorkflowSessionError: the session belongs to another workflow; the message names both.
    """
    if found is None or found.workflow == rt.workflow.slug:
        return
    if rt.adopts is not None and rt.adopts(found.workflow):
        return
    raise OtherWorkflowSessionError(found.session_id, found.workflow, rt.workflow.slug)


def refuse_outside_pair(rt: Runtime, session_id: str | None) -> None:
    """Refuse a firing at a sub-workflow child's id through a workflow outside its caller chain.

    A firing addressed to a child's id reaches the pair through its caller (BEHAVIOUR.md §5.10), so
    the agent of the child's workflow or of any caller up its chain may send it (the CLI's rule too,
    ``Context.refuse_other_workflow``). Any other workflow's agent is refused before the door routes
    the firing (attack32): its registry could otherwise find the pair's workflows beside its own and
    drive them. Reads the heads up the chain until one is this runtime's (or one it ``adopts``); an
    id without a caller, or a chain of which nothing is stored yet, passes (the kind checks it).

    Raises:
        OtherWorkflowSessionError: naming the nearest stored session's workflow and the agent's.
    """
    if session_id is None or parent_session_id(session_id) is None:
        return
    own = rt.workflow.slug
    nearest: str | None = None
    current: str | None = session_id
    while current is not None:
        head = rt.store.head(current)
        if head is not None:
            if head.workflow == own or (rt.adopts is not None and rt.adopts(head.workflow)):
                return
            nearest = nearest or head.workflow
        current = parent_session_id(current)
    if nearest is not None:
        raise OtherWorkflowSessionError(session_id, nearest, own)


def refuse_other_park(session_id: str, version: int, status: str, park_version: int | None) -> None:
    """Refuse a delivery naming a park (``park_version``) that is not the session's current version.

    The claim that follows is conditional on the version read, so a park made after the check is
    refused too (``SessionNotAwaitingInputError`` from the lost claim).

    Raises:
        SessionNotAwaitingInputError: the named park was resumed (or changed) since it was found.
    """
    if park_version is not None and version != park_version:
        raise SessionNotAwaitingInputError(
            session_id, status, f"this delivery is for the park at version {park_version}; the session is at {version}"
        )


def refuse_stale_park(rec: Checkpoint | None, park_id: str | None, *, unparked: bool = False) -> None:
    """Refuse a firing naming a park (``park_id``) that is not the session's current park (BEHAVIOUR.md §5.11).

    Checked on the record read, before anything is written; the claim that follows is conditional
    on that record's version, so a park made after the check is refused by the lost claim. A firing
    naming no park passes. A session not parked at all passes too (``deliver``/``reply``/``decide``
    refuse it on their own), unless ``unparked``: a mail's ``send`` answering a park (its reply token
    names one, issue 21 item 6) would otherwise open a turn on a session whose park is gone.

    Raises:
        SessionNotAwaitingInputError: naming both parks; nothing changed.
    """
    current = rec.park_id if rec is not None else None
    if park_id is None or park_id == current or (current is None and not unparked):
        return
    now = f"the current park is '{current}'" if current is not None else "the session is parked nowhere now"
    sid = rec.session_id if rec is not None else park_id.rpartition("@")[0]
    error = SessionNotAwaitingInputError(
        sid,
        str(rec.status) if rec is not None else None,
        f"this firing answers park '{park_id}', which is not the session's current park; {now}",
    )
    error.park_id, error.current_park_id = park_id, current  # type: ignore[attr-defined]
    raise error


def preflight_model(rt: Runtime, state: str | None) -> None:
    """Build the model a call in ``state`` would use, before the session is claimed.

    A missing configuration then refuses the firing and writes nothing (BEHAVIOUR.md conventions:
    a raising call leaves every stored record as it was; DESIGN.md §5 model configuration).

    Raises:
        ModelConfigurationError: the state's ``model`` (or the default) is not configured.
        ModelScriptError: a ``scripted:`` model names a file holding an invalid script.
    """
    states = rt.workflow.states
    rt.model_for(states[state].model if state in states else None)


def resolve_id(
    rt: Runtime,
    *,
    session_id: SessionId | None,
    session_path: str | None,
    trigger: str,
    variables: Mapping[str, Any] | None,
) -> tuple[SessionId, bool, list[str]]:
    """Pick the session id by precedence: explicit id, firing path, assembly path, trigger path, minted (§4.2).

    Returns:
        ``(session_id, minted, warnings)``.

    Raises:
        InvalidSessionPathError: a malformed caller path (even beside an explicit id).
        InvalidSessionIdError: a resolved id fails §4.1 (an explicit one was parsed at the edge).
    """
    firing_path = parse_session_path(session_path, "the firing's session_path") if session_path is not None else None
    if session_id is not None:
        return session_id, False, []
    path: SessionPath | None = firing_path or rt.session_path
    if path is None:
        ref = rt.workflow.triggers().get(trigger)
        if ref is not None and ref.decl.session:
            path = parse_session_path(ref.decl.session, f"states.{ref.state}.triggers.{trigger}.session")
    if path is None:
        return mint_session_id(), True, []
    resolved = resolve_session_id(path, variables or {})
    if resolved is None:
        minted = mint_session_id()
        warning = (
            f"session path '{path.text}' did not resolve for this firing: it runs as its own session "
            f"'{minted}', and no later firing can continue it"
        )
        return minted, True, [warning]
    return parse_session_id(resolved), False, []


def resolve_session(
    rt: Runtime,
    *,
    trigger: str | None = None,
    variables: Mapping[str, Any] | None = None,
    session_id: SessionId | None = None,
    session_path: str | None = None,
) -> Resolution:
    """Classify a firing without writing anything (§3.8).

    A session of another workflow is refused here as the door refuses it (a host's accept then
    inboxes nothing); at a sub-workflow child's id, a workflow outside its caller chain is refused
    (:func:`refuse_outside_pair`), as the door refuses it before routing the firing through the
    caller (§5.10).

    Raises:
        InvalidSessionPathError, InvalidSessionIdError, UnknownSessionTriggerError, SessionNotResumableError,
        OtherWorkflowSessionError (:func:`refuse_other_workflow`, :func:`refuse_outside_pair`; attack32).
    """
    trig = trigger or "manual"
    sid, minted, warnings = resolve_id(
        rt, session_id=session_id, session_path=session_path, trigger=trig, variables=variables
    )
    rec = rt.store.load(sid)
    if parent_session_id(sid) is None:
        refuse_other_workflow(rt, rec)
    else:
        refuse_outside_pair(rt, sid)
    disposition, recovered = classify(rt, sid, rec)
    if disposition == "turn":
        if rec is None and not rt.workflow.is_declared(trig):
            raise UnknownSessionTriggerError(trig, rt.workflow.declared_triggers(), session_id=sid)
        return Resolution(
            session_id=sid,
            disposition="turn",
            start_state=start_position(rt, rec, trig),
            minted=minted,
            recovered=recovered,
            warnings=warnings,
        )
    park = rec.pending_input if disposition == "resume" else rec.pending_decision  # type: ignore[union-attr]
    return Resolution(session_id=sid, disposition=disposition, state=park.state, minted=minted, warnings=warnings)  # type: ignore[union-attr]


def start_position(rt: Runtime, rec: Checkpoint | None, trigger: str) -> str | None:
    """Where a turn opened now would start: the session's position, else the trigger's entry state."""
    if rec is not None and rec.position in rt.workflow.states:
        return rec.position
    return rt.workflow.entry_state_for(trigger)
