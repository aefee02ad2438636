"""The collaborators every engine step shares, and small helpers over them.

``Runtime`` is built once by ``create_agent``: the workflow, the store, the model, host tools,
the clock, the event subscriber, assembly seeds and path, and the lease TTL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from archmax.clock import Clock, epoch_ms, format_instant
from archmax.engine.artifacts import ArtifactWriter
from archmax.engine.events import EventEmitter
from archmax.engine.tools import HostTool
from archmax.models.base import Model
from archmax.session.paths import SessionPath
from archmax.session.records import Checkpoint, Message, TrailStep
from archmax.spec import Workflow
from archmax.stores.base import SessionStore

if TYPE_CHECKING:
    from archmax.engine.claims import Applied
    from archmax.engine.work import Work
    from archmax.session.firing import EngineFiring

log = logging.getLogger("archmax")


class FiringRunner(Protocol):
    """What runs a firing on a session (``archmax.engine.door.apply``), as sub-workflows see it.

    A sub-workflow starts, recovers and hands deliveries to its child through this, so
    :mod:`archmax.engine.subworkflows` never imports the door, the firing kinds or the loop
    (Temporal's ``_Runtime`` style: implemented above, never imported back).
    """

    def __call__(self, rt: Runtime, firing: EngineFiring) -> Applied:
        """Apply ``firing`` to a session of ``rt``'s workflow."""
        ...


class RunningTurn(Protocol):
    """A turn in progress, as hooks and sub-workflow calls see it (implemented by ``loop.TurnLoop``).

    They read and change the record, force a commit after a side effect, and reach the runtime;
    they never import the loop that runs them.
    """

    rt: Runtime
    work: Work

    after_batch: list[Message]
    """Messages to add after the current message's tool results (never between a call and its result)."""

    @property
    def rec(self) -> Checkpoint:
        """The record the turn is building."""
        ...

    def side_effect(self) -> None:
        """Mark the current batch as having a side effect outside the record: the batch ends in a commit."""
        ...


@dataclass
class Runtime:
    """Everything an operation needs besides the session itself."""

    workflow: Workflow
    store: SessionStore
    model_for: Callable[[str | None], Model]
    """Returns the model for a state's ``model:`` override (None = the default)."""
    host_tools: dict[str, HostTool]
    clock: Clock
    events: EventEmitter
    assembly_variables: dict[str, Any] = field(default_factory=dict)
    session_path: SessionPath | None = None
    lease_ttl_s: float = 900.0
    hook_executors: dict[str, Callable[..., Any]] = field(default_factory=dict)
    """Custom hook kind → executor ``fn(ctx, config)`` (§2.4, ``create_agent(hooks=...)``)."""
    workflows: Any = None
    """The :class:`~archmax.engine.workflow_registry.WorkflowRegistry` sub-workflow calls resolve through (§5.10)."""
    hook_model_for: Callable[[str | None], Model] | None = None
    """The model a rubric hook grades with, for its ``model:`` (or the state's); ``None`` → ``model_for``.
    Rubric hooks always use their configured models, even in a scripted test case (§10.4)."""
    outbound: Any = None
    """The in-process :class:`~archmax.outbound.dispatch.Dispatcher`, or ``None`` (the stream sends, or nothing)."""
    runner: FiringRunner | None = None
    """The door child sessions of sub-workflow calls go through (set at assembly)."""
    adopts: Callable[[str], bool] | None = None
    """Whether this runtime continues a session its record says is of workflow ``slug``, another than its own.

    ``None`` (the default): never; a firing at another workflow's session is refused
    (:func:`~archmax.engine.firing_rule.refuse_other_workflow`, attack32). The CLI sets it to "that
    workflow is no longer in the workspace" (its folder was renamed: ``--workflow <new name>`` is
    the way on, BEHAVIOUR.md §11); a library host that renamed a workflow may set it the same way."""
    artifacts: Any = field(default=None, init=False)
    """This workflow's :class:`~archmax.engine.artifacts.ArtifactWriter` (§9.5), built with the runtime."""
    spec_snapshots: set[str] = field(default_factory=set, init=False)
    """Spec hashes this runtime has written to ``_specs/`` (§9.4): create-only, written once."""

    def __post_init__(self) -> None:
        if self.hook_model_for is None:
            self.hook_model_for = self.model_for
        self.artifacts = ArtifactWriter(self.store, self.workflow, self.warn)

    def now(self) -> str:
        """The injected clock's now as an instant string ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (BEHAVIOUR.md conventions)."""
        return format_instant(self.clock.now())

    def trail(self, record: Checkpoint, kind: str, to: str, reason: str | None = None, **extra: Any) -> None:
        """Append one trail step (epoch-ms timestamp)."""
        record.trail.append(
            TrailStep(
                to=to,
                kind=kind,  # type: ignore[arg-type]  # one of TrailStep's kinds, by every caller
                reason=reason,
                ts=epoch_ms(self.clock.now()),
                at_message=len(record.messages),
                **extra,
            )
        )

    def warn(self, record: Checkpoint, scope: str, message: str) -> None:
        """Emit a ``warning {scope, message}`` event for the session (§3.11 events).

        Only the record's ``event_seq`` advances; the transcript and ``Outcome.warnings`` are untouched.

        Args:
            record: The session the warning is about.
            scope: What it concerns, for example ``lease`` (§3.12), ``park`` (§3.9) or ``spec_snapshot`` (§9.4).
            message: One human-readable line.
        """
        self.events.emit(record, "warning", level="warning", scope=scope, message=message)
