"""How the ``archmax`` CLI prints results: outcomes, waiting and ``next:`` lines, session listings.

Rule source: BEHAVIOUR.md §11 (the result table, the waiting line, ``sessions`` lines). Colour
only when the stream is a terminal and ``NO_COLOR`` is unset.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from typing import IO, Any

from archmax.session.records import Checkpoint, PendingDecision, PendingInput
from archmax.session.results import Outcome, SessionSummary
from archmax.spec import Workflow

_CODES = {"red": "31", "yellow": "33", "green": "32", "dim": "2", "bold": "1"}


def paint(text: str, colour: str, stream: IO[str]) -> str:
    """``text`` in an ANSI colour when ``stream`` is a TTY and ``NO_COLOR`` is unset, else unchanged."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("NO_COLOR") or not (isatty and isatty()):
        return text
    return f"\033[{_CODES[colour]}m{text}\033[0m"


def to_json(value: Any) -> str:
    """Pretty JSON of a pydantic model, a list of them, or plain data (``model_dump(mode="json")``)."""

    def plain(v: Any) -> Any:
        if hasattr(v, "model_dump"):
            return v.model_dump(mode="json")
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    return json.dumps(plain(value), indent=2, ensure_ascii=False)


def command(*words: str) -> str:
    """A shell-ready command line."""
    return " ".join(shlex.quote(w) if w else "''" for w in words)


def waiting_line(session_id: str, pending: PendingInput | PendingDecision | None, state: str | None) -> str:
    """``waiting: session '<id>' awaits input in state '<s>': <reason>[ (due <resume_at>)]`` or the decision form (§11)."""
    if isinstance(pending, PendingInput):
        due = f" (due {pending.resume_at})" if pending.resume_at else ""
        return f"waiting: session '{session_id}' awaits input in state '{pending.state}': {pending.reason}{due}"
    where = pending.state if pending is not None else state
    return f"waiting: session '{session_id}' awaits a decision in state '{where}'"


EMAIL_VARIABLES = frozenset({"message_id", "from", "subject"})
"""Variables every email firing sets (``archmax.inbound.email``): a session holding them came by email."""


def next_line(
    session_id: str,
    pending: PendingInput | PendingDecision | None,
    context: Sequence[str],
    *,
    workflow: Workflow | None = None,
    variables: dict[str, Any] | None = None,
) -> str:
    """The ``next:`` line: the command that moves the session on (§11), with real names, not placeholders.

    An input park with ``resume_at`` gets the ``timer`` delivery (or ``sweep``). Otherwise the
    delivery names a trigger the workflow declares (the session's current one last: a reply
    usually arrives under another) and that trigger's ``requires`` variables; a session that came
    by email is pointed at ``archmax email`` first. A decision park gets ``decide --to`` with its
    transitions, and ``reply``.

    Args:
        session_id: The parked session.
        pending: Its park record.
        context: Extra flags the command needs to find the same workspace (``--root``, ``--store``).
        workflow: The session's workflow, for its declared triggers; ``None`` suggests ``manual``.
        variables: The session's variables (``name → {value, locked}``), to tell an email conversation.
    """
    if isinstance(pending, PendingInput):
        if pending.resume_at:
            cmd = command(
                "archmax",
                "deliver",
                session_id,
                *context,
                "--trigger",
                "timer",
                "--variables",
                json.dumps({"now": pending.resume_at}),
            )
            return f"next: {cmd}   (or, once it is due: {command('archmax', 'sweep', *context)})"
        current = (variables or {}).get("trigger", {}).get("value")
        declared = workflow.declared_triggers() if workflow is not None else []
        ordered = sorted(declared, key=lambda t: t == current) or ["manual"]
        trigger = ordered[0]
        words = ["archmax", "deliver", session_id, *context, "--trigger", trigger]
        decl = workflow.trigger_decl(trigger) if workflow is not None else None
        if decl is not None and decl.requires:
            words += ["--variables", json.dumps({r.name: f"<{r.type or 'value'}>" for r in decl.requires})]
        deliver = f"{command(*words)} [--message <text>]"
        others = f"   (triggers this workflow declares: {', '.join(declared)})" if len(declared) > 1 else ""
        if EMAIL_VARIABLES <= set(variables or {}):
            flag = ["--workflow", workflow.slug] if workflow is not None else []
            email = f"{command('archmax', 'email', *context, *flag)} <reply.eml>"
            return f"next: {email}   (the reply, as a raw email; or: {deliver})"
        return f"next: {deliver}{others}"
    targets = "|".join(t.to for t in pending.transitions) if isinstance(pending, PendingDecision) else "<state>"
    cmd = command("archmax", "decide", session_id, *context, "--to", targets)
    return f"next: {cmd} [--comment <text>]   (or: {command('archmax', 'reply', session_id, *context)} <message>)"


def print_outcome(
    outcome: Outcome, out: IO[str], err: IO[str], context: Sequence[str], workflow: Workflow | None = None
) -> int:
    """Print an Outcome as §11's table says and return the exit code (0 completed/parked, 1 failed/rejected).

    ``workflow`` (the session's) lets the ``next:`` line name its declared triggers.
    """
    for warning in outcome.warnings:
        print(paint(f"warning: {warning}", "yellow", err), file=err)
    if outcome.reply:
        print(outcome.reply, file=out)
    if outcome.kind == "parked":
        print(paint(waiting_line(outcome.session_id, outcome.pending, outcome.state), "yellow", err), file=err)
        hint = next_line(outcome.session_id, outcome.pending, context, workflow=workflow, variables=outcome.variables)
        print(paint(hint, "dim", err), file=err)
        return 0
    if outcome.kind == "failed":
        code = outcome.exit.code if outcome.exit else None
        reason = outcome.exit.reason if outcome.exit else None
        print(paint(f"✖ failed: {code} — {reason}", "red", err), file=err)
        return 1
    if outcome.kind == "rejected":
        print(paint(f"✖ rejected: {outcome.rejected}", "red", err), file=err)
        return 1
    return 0


def sweep_lines(session_id: str, shown: str, outcome: Outcome | None) -> list[str]:
    """The ``sweep`` lines of one woken or recovered session (§11).

    ``<id>  <result>``; then, when the wake ended ``parked`` with a message for a person (the
    handoff message) or ``completed`` with a reply, that text with every line indented four
    spaces, so what the session said is read without a ``sessions`` call. ``--json`` keeps the
    bare results.

    Args:
        session_id: The session.
        shown: What the sweep reports: the Outcome kind, ``skipped``, ``error`` or ``recovered``.
        outcome: The Outcome of the wake or recovery, ``None`` when there was none (skipped, error).

    Returns:
        The lines, without line ends.

    Example:
        >>> sweep_lines("E-1", "parked", None)
        ['E-1  parked']
    """
    lines = [f"{session_id}  {shown}"]
    if outcome is not None and outcome.kind in ("parked", "completed") and outcome.reply.strip():
        lines += [f"    {line}".rstrip() for line in outcome.reply.strip("\n").splitlines()]
    return lines


def session_lines(
    summary: SessionSummary,
    record: Checkpoint | None,
    workflow: Workflow | None,
    *,
    one: bool,
    sweep: str = "archmax sweep",
    now: str | None = None,
) -> list[str]:
    """The ``sessions`` lines of one session (§11).

    ``<id>  <status>  <classification>  state=<position>[  awaiting=<state>][  vars=a,b]``, then an
    indented ``waiting for:`` line for an input park, the decision context (instructions,
    approvers, evidence, transitions) for a decision park, or for a ``running`` session whether it
    is mid-turn (its lease's expiry: when the sweep may take the turn over) or stopped part-way;
    a ``held mail:`` line when mail waits in the session's quarantine;
    with ``one``, ``spec_hash`` and one ``name[ (locked)] = <json>`` line per variable.

    Args:
        summary: The session's summary.
        record: Its checkpoint, for the decision context.
        workflow: Its workflow, for the decision context; None when it cannot be loaded.
        one: Whether this is ``sessions <id>`` (more lines).
        sweep: The ``archmax sweep`` command line a ``running`` session's line names.
        now: The instant a lease is judged at (default: the clock).
    """
    variables = summary.variables or {}
    lines = [_session_head(summary, variables)]
    if summary.wait_reason is not None:
        due = f"  due={summary.resume_at}" if summary.resume_at else ""
        lines.append(f"  waiting for: {summary.wait_reason}{due}")
    decision = record.pending_decision if record is not None and summary.status == "awaiting_decision" else None
    if decision is not None:
        lines += _decision_lines(decision, workflow)
    if summary.status == "running":
        from archmax.cli.leases import now_instant, running_line

        lines.append(f"  {running_line(summary.lease_expires_at, now or now_instant(), sweep)}")
    if summary.exit is not None and not summary.exit.success:
        lines.append(f"  exit: {summary.exit.code} — {summary.exit.reason}")
    if summary.quarantined:  # issue 25 item 6: held mail is seen where the session is listed
        held = len(summary.quarantined)
        lines.append(f"  held mail: {held} in quarantine (archmax quarantine list {summary.session_id})")
    if one:
        lines.append(f"  spec_hash: {summary.spec_hash}")
        lines += _variable_lines(variables)
    return lines


def _session_head(summary: SessionSummary, variables: dict[str, Any]) -> str:
    """``<id>  <status>  <classification>  state=<position>[  awaiting=<state>][  vars=a,b]``."""
    head = f"{summary.session_id}  {summary.status}  {summary.classification}  state={summary.workflow_state}"
    if summary.state:
        head += f"  awaiting={summary.state}"
    if variables:
        head += "  vars=" + ",".join(variables)
    return head


def _decision_lines(decision: PendingDecision, workflow: Workflow | None) -> list[str]:
    """A decision park's context: the state's instructions, approvers and evidence, then its transitions."""
    lines = []
    state = workflow.states.get(decision.state) if workflow is not None else None
    if state is not None and state.instructions:
        lines.append(f"  instructions: {state.instructions}")
    if state is not None and state.approvers:
        lines.append(f"  approvers: {', '.join(state.approvers)}")
    evidence = decision.evidence or (state.evidence if state is not None else [])
    if evidence:
        lines.append(f"  evidence: {', '.join(evidence)}")
    lines.append("  transitions:")
    for t in decision.transitions:
        lines.append(f"    - {t.to}" + (f": {t.description}" if t.description else ""))
    return lines


def _variable_lines(variables: dict[str, Any]) -> list[str]:
    """One ``name[ (locked)] = <json>`` line per variable."""
    lines = []
    for name, var in variables.items():
        lock = " (locked)" if var.get("locked") else ""
        lines.append(f"  {name}{lock} = {json.dumps(var.get('value'), ensure_ascii=False)}")
    return lines
