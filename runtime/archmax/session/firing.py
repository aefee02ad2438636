"""A firing: what one host call gives a session (BEHAVIOUR.md §1, DESIGN.md §2)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class FileIn(BaseModel):
    """A file handed to a session: placed under ``scratchpad/attachments/<name>`` (§9.5)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    content: str | bytes


class Firing(BaseModel):
    """A message, trigger id, variables and files, on their way to a session.

    Inbound adapters (email, API Gateway, EventBridge) produce one; ``hosting`` hands it to
    ``send`` or ``deliver``.
    """

    model_config = ConfigDict(defer_build=True)  # schema built on first use, not at import (issue 10)

    trigger: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, FileIn] = Field(default_factory=dict)
    """Variable name → file."""
    message: str | None = None
    session_id: str | None = None
    """An explicit id, when the source names one."""
    delivery_id: str | None = None
    """A stable id of the event (SES message id, Idempotency-Key, EventBridge event id) for de-duplication."""
    warnings: list[str] = Field(default_factory=list)
