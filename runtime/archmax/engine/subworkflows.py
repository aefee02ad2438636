"""Sub-workflows: the ``archmax_workflow_<slug>`` tool, child sessions, delegated parks, forwarding.

Rule source: BEHAVIOUR.md §5.10 (the tool, child ids, locked arguments, file arguments and returns,
parks that delegate, forwarding, notes, refusals, depth and cycles), §5.7 (a failed call stays
pending on its state), §4.1 (child ids), §7 (``[sub-workflow: <slug>]`` notes), §9.5 (file placement);
seed "Files handed to a session".

A child is an ordinary session of the same store, run through the door (``Runtime.runner``, the
:class:`~archmax.engine.runtime.FiringRunner` the assembly gives every runtime) with the child
workflow's runtime; firings for a caller parked through its child are :mod:`archmax.engine.forwarding`'s. The caller records the call in flight as ``Checkpoint.delegation`` (committed before
the child starts), so any process can finish the pair: :func:`settle` looks at the child's latest
checkpoint and either mirrors its park on the caller, or answers the caller with its result, starting
or recovering the child first when it has no checkpoint yet or its turn died (§3.12).
"""

from __future__ import annotations

import json
from typing import Any

from archmax.engine.deliveries import adopt_child_deliveries
from archmax.engine.firing_rule import lease_live, parked_channel, refuse_other_workflow
from archmax.engine.placement import place_files, prepare_files, session_file_exists
from archmax.engine.runtime import FiringRunner, RunningTurn, Runtime
from archmax.engine.work import waiting_on_child
from archmax.errors import (
    ArchmaxError,
    CallerError,
    SessionNotResumableError,
    SessionStateError,
    SessionStoreCapabilityError,
    WorkflowError,
    WorkflowSpecError,
)
from archmax.session.files import is_text
from archmax.session.firing import Deliver, Recover, Send
from archmax.session.ids import SessionId, parent_session_id, parse_session_id
from archmax.session.notes import is_runtime_note, make_note, runtime_note_kind, subworkflow_note_text
from archmax.session.records import (
    Checkpoint,
    Delegation,
    Message,
    PendingDecision,
    PendingInput,
    PendingRejection,
    SessionStatus,
    ToolCall,
)
from archmax.session.variables import VARIABLE_NAME, UnresolvedReferenceError, substitute_references
from archmax.spec import Workflow, check_value_type
from archmax.spec.governance import SUBWORKFLOW_PREFIX

MAX_DEPTH = 5
"""A child may sit at most this many levels below the session that started the chain (§5.10)."""
# ---------------------------------------------------------------------------------------- the call


def call(loop: RunningTurn, slug: str, tool_call: ToolCall, args: dict[str, Any]) -> tuple[str, str]:
    """Run ``archmax_workflow_<child>`` from state ``slug`` (§5.10).

    Returns:
        ``(status, text)`` of the tool result: ``blocked`` for a refusal before any child is composed,
        ``error`` for a failed call (a pending rejection stays on ``slug``), ``success`` otherwise.
    """
    rt, rec = loop.rt, loop.rec
    child_slug = tool_call.name[len(SUBWORKFLOW_PREFIX) :]
    refusal = f"{tool_call.name} rejected:"
    if rec.status in (SessionStatus.AWAITING_INPUT, SessionStatus.AWAITING_DECISION):
        return "blocked", f"{refusal} the session is parked"
    mocked = _mocked(rt, rec, slug, child_slug, tool_call.name, args)
    if mocked is not None:
        return "success", mocked
    try:
        child_rt = rt.workflows.runtime(child_slug, rt.workflow)
    except WorkflowSpecError as exc:
        detail = f": {exc}" if exc.diagnostics else ""
        return "blocked", f"{refusal} workflow '{child_slug}' is not available{detail}"
    child = child_rt.workflow
    if child.disabled:
        return "blocked", f"{refusal} workflow '{child_slug}' is disabled"
    path = call_path(rt, rec)
    if child_slug in path:
        return "blocked", f"{refusal} workflow '{child_slug}' is already on the call path ({' → '.join(path)})"
    if len(path) > MAX_DEPTH:
        return "blocked", f"{refusal} the call would be deeper than {MAX_DEPTH} levels of sub-workflows"
    try:
        args = substitute_references(args, rec.variables)
    except UnresolvedReferenceError as exc:
        return "blocked", f"{refusal} {exc}"
    problem, variables, files = _arguments(loop, child, args)
    if problem:
        return "blocked", f"{refusal} {problem}"
    ordinal = rec.subworkflow_calls.get(slug, 0) + 1
    child_id = f"{rec.session_id}~{slug}:{child_slug}:{ordinal}"
    try:
        parse_session_id(child_id)
    except ArchmaxError as exc:
        return "blocked", f"{refusal} {exc}"
    rec.subworkflow_calls = {**rec.subworkflow_calls, slug: ordinal}
    rec.delegation = Delegation(
        session_id=child_id, workflow=child_slug, state=slug, call_id=tool_call.id, variables=variables, files=files
    )
    loop.work.commit()  # the call in flight is on record before the child exists: any process can finish it
    return settle(loop, answering=True)  # type: ignore[return-value]


def _mocked(rt: Runtime, rec: Checkpoint, slug: str, child_slug: str, name: str, args: dict) -> str | None:
    """A test case's mock answering the call, as the result text; ``None`` when no mock matches (§10.1)."""
    mock = rt.workflows.mocks.get(name)
    if mock is None:
        return None
    try:
        value = mock(args)
    except LookupError:  # no mock matches this input: the real sub-workflow runs
        return None
    rt.trail(rec, "sub-workflow", slug, None, workflow=child_slug, status="ok")
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _arguments(loop: RunningTurn, child: Workflow, args: dict[str, Any]) -> tuple[str | None, dict, dict]:
    """Check the call's arguments against the child's ``manual`` ``requires``: ``(problem, variables, files)``."""
    rec = loop.rec
    decl = child.trigger_decl("manual")
    specs = {s.name: s for s in (decl.requires if decl else []) or []}
    for name in args:
        if not isinstance(name, str) or not VARIABLE_NAME.fullmatch(name):
            return f"'{name}' is not a valid parameter name", {}, {}
    missing = [n for n in specs if n not in args]
    if missing:
        return f"missing parameter(s): {', '.join(repr(n) for n in missing)}", {}, {}

    def exists(path: str) -> bool:
        return session_file_exists(loop.rt.store, rec.session_id, path)

    variables, files = {}, {}
    for name, value in args.items():
        spec = specs.get(name)
        if spec is not None and not check_value_type(value, spec.type, file_exists=exists):
            return f"parameter '{name}' must be of type '{spec.type}'", {}, {}
        if spec is not None and spec.type == "file":
            files[name] = value
        else:
            variables[name] = value
    return None, variables, files


def call_path(rt: Runtime, rec: Checkpoint) -> list[str]:
    """The workflows from the chain's first session down to ``rec``'s own (§5.10 cycles and depth).

    A child's id names its workflow in its last segment (§4.1); the first session's workflow is read
    from its checkpoint.
    """
    chain = []
    sid = rec.session_id
    while (parent := parent_session_id(sid)) is not None:
        chain.append(sid.rpartition("~")[2].split(":")[1])
        sid = parent
    if not chain:
        return [rec.workflow]
    root = rt.store.load(sid)
    return ([root.workflow] if root is not None else []) + list(reversed(chain))


# ---------------------------------------------------------------------------------------- settling


def settle(loop: RunningTurn, *, answering: bool = False) -> tuple[str, str] | None:
    """Bring the caller up to date with its child (§5.10).

    Starts the child when it has no checkpoint, recovers it when its turn died (§3.12), then: a parked
    child parks the caller (on ``input`` with the child's reason, or at the child's decision); a
    finished child ends the call with its result, which either answers the tool call
    (``answering=True``) or arrives as a ``[sub-workflow: <slug>]`` note (``[error]`` on failure).
    The caller adopts the delivery ids the child applied (a reply forwarded to the child is remembered
    only there), so each stays a duplicate at the caller after the call is over (issue 22).

    Returns:
        With ``answering``, the tool result ``(status, text)``; else ``None``.

    Raises:
        SessionNotResumableError: another process holds the child's live lease.
        StoreError: a delivery-id marker could not be read or written.
    """
    rt, rec = loop.rt, loop.rec
    d = rec.delegation
    assert d is not None
    child_rt = rt.workflows.runtime(d.workflow, rt.workflow)
    with waiting_on_child(loop.work):
        if d.forward is not None:  # a delivery claimed for the child by a process that died before handing it over
            _hand_over(child_rt, d)
            forwarded(rec)
            d = rec.delegation
            assert d is not None
    try:
        with waiting_on_child(loop.work):
            child = _drive(child_rt, d, rec)
    except SessionStateError:
        raise  # another writer holds the child: nothing is decided, the caller's turn stays resumable
    except (CallerError, WorkflowError, SessionStoreCapabilityError) as exc:
        # The child cannot start (a bad file name, binary content without upload_files): the call fails.
        # A model or store outage propagates instead: both sessions stay resumable (§3.12).
        return _finish(loop, "failed", f"sub-workflow '{d.workflow}' could not start: {exc}", answering)
    adopt_child_deliveries(rt.store, rec, child)  # replies the child applied for the pair (issue 22)
    parked = parked_channel(child_rt, child)
    if parked is not None:
        return _mirror_park(loop, child, parked, answering)
    if child.status == SessionStatus.COMPLETED:
        try:
            text = _result_text(rt, child_rt, rec, child)
        except ArchmaxError as exc:
            return _finish(
                loop,
                "failed",
                f"sub-workflow '{d.workflow}' returned a file that could not be copied: {exc}",
                answering,
            )
        return _finish(loop, "ok", text, answering)
    if child.status == SessionStatus.FAILED and child.raised is not None:
        why = f"raised '{child.raised.code}' in state '{child.raised.state}': {child.raised.reason}"
        return _finish(loop, "failed", why, answering)
    return _finish(loop, "rejected", _rejection_text(child_rt, child), answering)


def forwarded(rec: Checkpoint) -> None:
    """The child has the forwarded delivery: the caller's next commit stops carrying it."""
    if rec.delegation is not None and rec.delegation.forward is not None:
        rec.delegation = rec.delegation.model_copy(update={"forward": None})


def _hand_over(child_rt: Runtime, d: Delegation) -> None:
    """Deliver ``d.forward`` to the child unless the child already took it (issue 9: no event lost).

    The child took it when it moved past the park it was forwarded to (its version changed); a child
    still at that version and parked on ``input`` gets it now, under the same delivery id. The
    delivery's files lived only in the process that died: the message and variables are handed over.
    """
    fwd = d.forward
    assert fwd is not None
    child = child_rt.store.load(d.session_id)
    if child is None or child.version != fwd.child_version or parked_channel(child_rt, child) != "input":
        return
    handed = Deliver(
        SessionId(d.session_id),  # the caller's record names a child id checked when the call began
        trigger=fwd.trigger,
        variables=fwd.variables,
        message=fwd.message,
        delivery_id=fwd.delivery_id,
        park_version=fwd.child_version,
    )
    try:
        _runner(child_rt)(child_rt, handed)
    except SessionStateError:
        return  # another process handed it over first: the child has it


def _runner(rt: Runtime) -> FiringRunner:
    assert rt.runner is not None, "a runtime is assembled with its runner (create_agent)"
    return rt.runner


def _drive(child_rt: Runtime, d: Delegation, parent: Checkpoint) -> Checkpoint:
    """The child's latest checkpoint after starting it (no checkpoint yet) or recovering its dead turn.

    Raises:
        OtherWorkflowSessionError: a session of another workflow than the callee holds the child's id
            (sent to from outside before the caller made the call); nothing of it is read or changed,
            and the call fails (attack33: the door's rule, ``refuse_other_workflow``, for the caller's
            own drive of its child).
        SessionNotResumableError: another process holds the child's live lease.
    """
    store = child_rt.store
    child_id = SessionId(d.session_id)  # checked when the call began (``call``)
    child = store.load(d.session_id)
    refuse_other_workflow(child_rt, child)  # never another workflow's session as this call's child
    if child is None:
        files = {
            name: {"name": path.rsplit("/", 1)[-1], "content": store.get(parent.session_id, path) or b""}
            for name, path in d.files.items()
        }
        listed = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in d.variables.items())
        message = (
            f"Sub-workflow call from session '{parent.session_id}' (state '{d.state}')"
            + (f" with {listed}" if listed else "")
            + (f" and files {', '.join(d.files)}" if d.files else "")
            + "."
        )
        _runner(child_rt)(child_rt, Send(child_id, message, trigger="manual", variables=d.variables, files=files))
    elif child.status == SessionStatus.RUNNING and not lease_live(child_rt, child):
        _runner(child_rt)(child_rt, Recover(child_id))
    elif child.status == SessionStatus.RUNNING:
        raise SessionNotResumableError(d.session_id, str(child.status))
    latest = store.load(d.session_id)
    assert latest is not None
    return latest


def _mirror_park(loop: RunningTurn, child: Checkpoint, channel: str, answering: bool) -> tuple[str, str] | None:
    """Park the caller through its child: its reason on ``input``, its decision on ``decision`` (§5.10).

    The child's deadline (``timeout``, ``timeout_at``) and ``resume_at`` are mirrored too, so the
    caller is in its own workflow's due listing when the child's park comes due (§5.11): the child
    runs another workflow, and only its caller's sweep wakes the pair.
    """
    rt, rec = loop.rt, loop.rec
    d = rec.delegation
    assert d is not None
    state = rt.workflow.states[d.state]
    title = (state.title or "").strip() or None
    if channel == "input":
        park = child.pending_input
        assert park is not None
        rec.pending_input = PendingInput(
            state=d.state,
            title=title,
            reason=park.reason,
            parked_at=rt.now(),
            resume_at=park.resume_at,
            timeout=park.timeout,  # the child's deadline is the caller's: its sweep fires it (§5.11)
            timeout_at=park.timeout_at,
        )
        rec.pending_decision = None
        rec.status = SessionStatus.AWAITING_INPUT
        rt.events.emit(rec, "parked", state=d.state, awaiting="input", reason=park.reason, resume_at=park.resume_at)
        waiting = f"waiting for: {park.reason}"
    else:
        pending = child.pending_decision
        assert pending is not None
        rec.pending_decision = PendingDecision(
            state=d.state,
            title=pending.title,
            seq=pending.seq,
            transitions=pending.transitions,
            evidence=pending.evidence,
            created_at=pending.created_at,
            timeout=pending.timeout,  # the child's deadline is the caller's: its sweep fires it (§5.11)
            timeout_at=pending.timeout_at,
        )
        rec.pending_input = None
        rec.status = SessionStatus.AWAITING_DECISION
        rt.events.emit(rec, "parked", state=d.state, awaiting="decision")
        waiting = f"awaiting a person's decision in its state '{pending.state}'"
    rec.delegation = d.model_copy(update={"child_state": (child.pending_input or child.pending_decision).state})  # type: ignore[union-attr]
    rec.park_phase = "suspend"  # the child wrote the park message; the caller spends no handoff call
    message = _park_message(child)
    if message:  # what the person reads is the caller's too (its Outcome.reply, a mail a host sends)
        # Answering the call, the message goes after the call's result: never between a call and its
        # result, which OpenAI-compatible endpoints refuse (issue 22 item 4).
        (loop.after_batch if answering else rec.messages).append(
            Message(role="assistant", content=message, handoff=True)
        )
        rt.events.emit(rec, "agent_text", text=message)
    text = (
        f"Sub-workflow '{d.workflow}' (session '{d.session_id}') is parked, {waiting}. This session is parked "
        "with it and continues here when it finishes; stop working now."
    )
    return ("success", text) if answering else None


def _finish(loop: RunningTurn, status: str, text: str, answering: bool) -> tuple[str, str] | None:
    """End the call: trail step; a success recovers a pending rejection of the same call, a failure leaves one."""
    rt, rec = loop.rt, loop.rec
    d = rec.delegation
    assert d is not None
    rec.delegation = None
    rt.trail(rec, "sub-workflow", d.state, None, workflow=d.workflow, status=status)
    pending = rec.pending_rejection
    if status == "ok":
        if pending is not None and pending.state == d.state and pending.workflow == d.workflow:
            rec.pending_rejection = None
        if answering:
            return "success", text
        rec.messages.extend(make_note("sub-workflow", subworkflow_note_text(d.workflow, text)))
        return None
    reason = f"sub-workflow '{d.workflow}' failed: {text}"
    rec.pending_rejection = PendingRejection(state=d.state, workflow=d.workflow, reason=reason)
    if answering:
        return "error", reason
    after = d.after or "call"
    rec.messages.extend(make_note("error", f"[error] sub-workflow '{d.workflow}' failed after the {after}: {text}"))
    return None


def _result_text(rt: Runtime, child_rt: Runtime, rec: Checkpoint, child: Checkpoint) -> str:
    """``{"message", "returns"}`` as JSON, or just the message when the child declares no ``returns``.

    File returns are copied into the caller's ``scratchpad/attachments/`` (§9.5 naming) and the
    result names the placed path.
    """
    message = _last_text(child)
    decl = child_rt.workflow.trigger_decl("manual")
    returns = (decl.returns if decl else []) or []
    if not returns:
        return message
    values: dict[str, Any] = {}
    files = {}
    for spec in returns:
        var = child.variables.get(spec.name)
        value = var.value if var is not None else None
        if spec.type == "file" and isinstance(value, str):
            content = rt.store.get(child.session_id, value) or b""
            text = content.decode("utf-8") if is_text(content) else content
            files[spec.name] = {"name": value.rsplit("/", 1)[-1], "content": text}
        else:
            values[spec.name] = value
    if files:
        values.update(place_files(rt.store, rec.session_id, prepare_files(rt.store, rec.session_id, files)))
    ordered = {s.name: values.get(s.name) for s in returns}
    return json.dumps({"message": message, "returns": ordered}, ensure_ascii=False, default=str)


def _rejection_text(child_rt: Runtime, child: Checkpoint) -> str:
    """Why a rejected child failed the call; a missing return is named as §5.10 words it."""
    decl = child_rt.workflow.trigger_decl("manual")
    for spec in (decl.returns if decl else []) or []:
        if child.rejected and f"without setting '{spec.name}'" in child.rejected:
            return f"Not all return variables were set by the sub-workflow: '{spec.name}' was not set."
    return f"was rejected in state '{child.position}': {child.rejected}"


def _park_message(child: Checkpoint) -> str:
    """The child's park message: its last assistant text since the last user message or note, else ``""``."""
    for message in reversed(child.messages):
        if message.role == "user" or is_runtime_note(message):
            return ""
        if message.role == "assistant" and message.content.strip():
            return message.content
    return ""


def _last_text(rec: Checkpoint) -> str:
    for message in reversed(rec.messages):
        if message.role == "assistant" and runtime_note_kind(message) is None and message.content.strip():
            return message.content
    return ""


# ---------------------------------------------------------------------------------------- forwarding


def delegation_view(rec: Checkpoint) -> dict[str, Any] | None:
    """``Outcome.delegation`` for a caller parked at its child's decision: ``{session_id, state, transitions}``."""
    d = rec.delegation
    if d is None or rec.status != SessionStatus.AWAITING_DECISION or rec.pending_decision is None:
        return None
    return {
        "session_id": d.session_id,
        "state": d.child_state,
        "transitions": [t.model_dump(exclude_none=True) for t in rec.pending_decision.transitions],
    }
