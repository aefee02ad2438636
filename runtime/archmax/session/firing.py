"""A firing: what one host call gives a session (BEHAVIOUR.md §1, DESIGN.md §2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from archmax.session.ids import SessionId


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
    park_id: str | None = None
    """The park a delivery answers (BEHAVIOUR.md §5.11); ``None``: whatever park is current."""


# ---------------------------------------------------------------------------------------- engine firings
# What ``archmax.engine.apply`` takes: one value per kind of firing, its session id already parsed at
# the edge (a :class:`~archmax.session.ids.SessionId`), so the engine never checks it again.


@dataclass(frozen=True)
class Send:
    """The firing rule applied to an explicit id: a new turn, a delivery or a reply (BEHAVIOUR.md §3.2, §3.4)."""

    session_id: SessionId
    message: str | None = None
    trigger: str | None = None
    variables: Mapping[str, Any] | None = None
    files: Mapping[str, Any] | None = None
    delivery_id: str | None = None
    warnings: tuple[str, ...] = ()
    park_id: str | None = None
    """The park this firing answers (a mail's reply token names one, §5.11, issue 21 item 6): refused,
    nothing changed, unless it is the session's current park; ``None``: the firing rule alone decides."""
    kind: ClassVar[str] = "send"


@dataclass(frozen=True)
class Turn:
    """Always a new turn (``agent.invoke``, §3.9); the id comes from §4.2 when ``session_id`` is None."""

    message: str
    session_id: SessionId | None = None
    trigger: str | None = None
    variables: Mapping[str, Any] | None = None
    files: Mapping[str, Any] | None = None
    session_path: str | None = None
    kind: ClassVar[str] = "turn"


@dataclass(frozen=True)
class Deliver:
    """Resume an ``input`` park (§3.5); ``park_version`` names the park a timer found due."""

    session_id: SessionId
    trigger: str | None = None
    variables: Mapping[str, Any] | None = None
    message: str | None = None
    files: Mapping[str, Any] | None = None
    delivery_id: str | None = None
    park_version: int | None = None
    park_id: str | None = None
    """The park this delivery answers (§5.11); one no longer current is refused, nothing changed."""
    kind: ClassVar[str] = "deliver"


@dataclass(frozen=True)
class Reply:
    """A person's message at a decision park; the session stays parked (§3.6)."""

    session_id: SessionId
    message: str
    park_id: str | None = None
    """The park this reply answers (§5.11); one no longer current is refused, nothing changed."""
    kind: ClassVar[str] = "reply"


@dataclass(frozen=True)
class Decide:
    """A person picks one of the parked human state's edges (§3.7)."""

    session_id: SessionId
    to: str | None = None
    comment: str | None = None
    park_id: str | None = None
    """The park this decision answers (§5.11); one no longer current is refused, nothing changed."""
    kind: ClassVar[str] = "decide"


@dataclass(frozen=True)
class Recover:
    """Finish a turn whose process died: take over the expired lease and continue (§3.12)."""

    session_id: SessionId
    kind: ClassVar[str] = "recover"


@dataclass(frozen=True)
class Expire:
    """A decision park's deadline passed: the sweep fires ``timeout`` into the park it found due (§5.11)."""

    session_id: SessionId
    park_version: int | None = None
    now: str | None = None
    """The sweep's instant (``None``: the runtime's clock); the deadline must have passed by then."""
    kind: ClassVar[str] = "expire"


EngineFiring = Send | Turn | Deliver | Reply | Decide | Recover | Expire
"""Every firing the engine's door takes."""
