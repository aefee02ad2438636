"""What operations return: ``Outcome``, ``Resolution``, ``SessionSummary``, ``SessionExit``.

Rule source: BEHAVIOUR.md §3.11 (result models) and the seed's "How a session ended".
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from archmax.session.notes import runtime_note_kind
from archmax.session.records import (
    PARKED_STATUSES,
    Checkpoint,
    Message,
    PendingDecision,
    PendingInput,
    SessionStatus,
    TrailStep,
    Usage,
    is_finished,
)


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class SessionExit(_Result):
    """How the agent ended a finished turn: ``{success: True}`` or ``{success: False, code, reason}``."""

    success: bool
    code: str | None = None
    reason: str | None = None


class Outcome(_Result):
    """The result of one firing (send, deliver, reply, decide, invoke) — §3.11."""

    kind: Literal["completed", "parked", "failed", "rejected"]
    """``parked`` whenever the session ends parked, else from the final status."""
    disposition: Literal["turn", "deliver", "reply", "decide"]
    """What the session's state made of the firing."""
    session_id: str
    status: SessionStatus
    state: str | None
    """The record's state when parked, else the position."""
    parked_channel: Literal["decision", "input"] | None = None
    pending: PendingDecision | PendingInput | None = None
    reply: str = ""
    """The last non-blank assistant text this operation produced (notes excluded), else ``""``."""
    rejected: str | None = None
    exit: SessionExit | None = None
    messages: list[Message] = Field(default_factory=list)
    trail: list[TrailStep] = Field(default_factory=list)
    variables: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """``name → {value, locked}``."""
    usage: Usage | None = None
    """What this operation spent; ``None`` when nothing was spent."""
    recovered: bool = False
    warnings: list[str] = Field(default_factory=list)
    park_id: str | None = None
    """The park's identity when the session ended parked (BEHAVIOUR.md §5.11): what a delivery may name."""
    delegation: dict[str, Any] | None = None


class Resolution(_Result):
    """What a firing would do, without doing it (§3.8)."""

    session_id: str
    disposition: Literal["turn", "resume", "reply"]
    start_state: str | None = None
    """Only for ``turn``."""
    state: str | None = None
    """The parked state, only for ``resume`` and ``reply``."""
    minted: bool = False
    recovered: bool = False
    warnings: list[str] = Field(default_factory=list)


class SessionSummary(_Result):
    """A session as hosts and the CLI list it (§3.11)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_id: str
    workflow: str
    status: SessionStatus
    classification: Literal["finished", "open"]
    workflow_state: str | None = None
    spec_hash: str | None = None
    state: str | None = None
    """Only while parked."""
    wait_reason: str | None = None
    """Only while parked on input."""
    resume_at: str | None = None
    """Only while parked on input with an ``until``."""
    timeout_at: str | None = None
    """Only while parked with a deadline (``timeout``, BEHAVIOUR.md §5.11): when the sweep fires
    ``timeout`` into the park. A caller parked through its child shows the child's (§5.10)."""
    exit: SessionExit | None = None
    """Only while ``failed``."""
    variables: dict[str, dict[str, Any]] | None = None
    usage: Usage | None = None
    parent_session_id: str | None = None
    updated_at: str
    lease_expires_at: str | None = None
    """Only while ``running``."""
    park_id: str | None = None
    """The current park's identity, only while parked (BEHAVIOUR.md §5.11)."""
    quarantined: list[str] | None = None
    """Delivery ids of mail held in the session's quarantine, not yet released (issue 13); only when some are."""


def variables_view(record: Checkpoint) -> dict[str, dict[str, Any]]:
    """``name → {value, locked}`` of a record."""
    return {name: {"value": v.value, "locked": v.locked} for name, v in record.variables.items()}


def reply_of(messages: list[Message], start: int) -> str:
    """The last non-blank assistant text in ``messages[start:]``, runtime notes excluded, else ``""``.

    What one operation said to the person: ``Outcome.reply`` (§3.11) and the text of its outbound message.
    """
    for message in reversed(messages[start:]):
        if message.role == "assistant" and runtime_note_kind(message) is None and message.content.strip():
            return message.content
    return ""


def exit_of(record: Checkpoint) -> SessionExit | None:
    """``{success: True}`` when completed, ``{success: False, code, reason}`` when failed, else None (§3.11)."""
    if record.status == SessionStatus.COMPLETED:
        return SessionExit(success=True)
    if record.status == SessionStatus.FAILED and record.raised is not None:
        return SessionExit(success=False, code=record.raised.code, reason=record.raised.reason)
    return None


def summary_of(record: Checkpoint, parent_session_id: str | None = None, now: str | None = None) -> SessionSummary:
    """Build the :class:`SessionSummary` of a record (§3.11).

    Args:
        record: The latest checkpoint.
        parent_session_id: The parent's id for a child session (§4.1), else None.
        now: The current instant. With it, a session whose handoff call is still owed under a live
            lease is not yet parked (§3.1), so ``state``/``wait_reason``/``resume_at``/``timeout_at``
            are left out.
    """
    live_lease = record.lease is not None and now is not None and record.lease.live_at(now)
    parked = record.status in PARKED_STATUSES and not live_lease
    park = record.pending_input or record.pending_decision
    variables = variables_view(record)
    return SessionSummary(
        session_id=record.session_id,
        workflow=record.workflow,
        status=record.status,
        classification="finished" if is_finished(record.status) else "open",
        workflow_state=record.position,
        spec_hash=record.spec_hash,
        state=park.state if parked and park else None,
        wait_reason=record.pending_input.reason if parked and record.pending_input else None,
        resume_at=record.pending_input.resume_at if parked and record.pending_input else None,
        timeout_at=park.timeout_at if parked and park else None,
        park_id=record.park_id if parked else None,
        exit=exit_of(record) if record.status == SessionStatus.FAILED else None,
        variables=variables or None,
        usage=None if record.usage.is_zero() else record.usage,
        parent_session_id=parent_session_id,
        updated_at=record.updated_at,
        lease_expires_at=record.lease.expires_at if record.status == SessionStatus.RUNNING and record.lease else None,
    )
