"""Small checkpoint builders for the AWS store tests."""

from __future__ import annotations

import base64
import random

from archmax.session.records import (
    Checkpoint,
    Lease,
    Message,
    PendingDecision,
    PendingInput,
    SessionStatus,
    TransitionRef,
    Variable,
)

T0 = "2025-01-01T00:00:00.000Z"


def filler(size: int, seed: str = "") -> str:
    """``size`` characters of deterministic noise: they compress little, as the item's packed chunks are sized."""
    noise = random.Random(f"{seed}:{size}").randbytes(size)
    return base64.b64encode(noise).decode("ascii")[:size]


def record(
    session_id: str,
    version: int,
    *,
    status: SessionStatus = SessionStatus.RUNNING,
    messages: int = 1,
    resume_at: str | None = None,
    workflow: str = "bank-check",
    lease_owner: str | None = None,
    updated_at: str = T0,
    writer: str = "",
    pad: int = 0,
) -> Checkpoint:
    """A checkpoint whose park record matches ``status``; ``writer`` is kept in a variable to tell writers apart.

    ``pad`` characters of :func:`filler` are added to the last message: a delta that large is too big
    to travel inside the session item (``archmax.stores.aws.plan``): past ``SEGMENT_MAX_BYTES``, even
    packed, its chunk is an S3 object.
    """
    pending_input = pending_decision = None
    if status == SessionStatus.AWAITING_INPUT:
        pending_input = PendingInput(
            state="check-bank", reason="the transaction posts overnight", parked_at=T0, resume_at=resume_at
        )
    elif status == SessionStatus.AWAITING_DECISION:
        pending_decision = PendingDecision(
            state="review", seq=1, transitions=[TransitionRef(to="approve")], created_at=T0
        )
    return Checkpoint(
        session_id=session_id,
        version=version,
        workflow=workflow,
        status=status,
        position="check-bank",
        messages=[
            Message(
                role="user", content=f"message {i}" + (filler(pad, f"{session_id}{i}") if i == messages - 1 else "")
            )
            for i in range(messages)
        ],
        variables={"writer": Variable(value=writer, locked=True)},
        pending_input=pending_input,
        pending_decision=pending_decision,
        lease=Lease(owner=lease_owner, expires_at="2025-01-01T00:15:00.000Z") if lease_owner else None,
        created_at=T0,
        updated_at=updated_at,
    )
