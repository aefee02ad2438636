"""The one error tree of archmax.

Every error the runtime raises subclasses :class:`ArchmaxError`. Errors about one
session expose ``.session_id``. They are grouped by who must act:

* the workflow author (:class:`WorkflowSpecError`, :class:`ReservedToolNameError`, ...);
* the caller / host (:class:`SessionNotAwaitingInputError`, :class:`InvalidSessionIdError`, ...);
* the infrastructure (:class:`SessionStoreCapabilityError`, :class:`StoreError`, ...);
* the model provider (:class:`ModelError` and its subclasses).

Rule source: BEHAVIOUR.md §3.11 (error table) and §2.5 (load errors).
Parking is an outcome, never an error: nothing here is used to unwind a park.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class ArchmaxError(Exception):
    """Root of every archmax error.

    Attributes:
        session_id: The session the error is about, or ``None``.
    """

    session_id: str | None = None

    def __init__(self, message: str, *, session_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if session_id is not None:
            self.session_id = session_id


# --------------------------------------------------------------------------- workflow author


@dataclass(frozen=True)
class Diagnostic:
    """One finding of workflow validation (BEHAVIOUR.md §2.5).

    Attributes:
        path: Dotted path built from keys, state slugs and 0-based indices (``states.a.transitions.0.to``).
        message: What is wrong.
        severity: ``"error"`` or ``"warning"``; warnings never raise.
    """

    path: str
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class WorkflowError(ArchmaxError):
    """Something the workflow author must fix."""


class WorkflowSpecError(WorkflowError):
    """A workflow failed to load. ``str(error)`` has one ``<path>: <message>`` line per error (§2.5).

    Attributes:
        diagnostics: Every :class:`Diagnostic` found, warnings included.
    """

    def __init__(self, diagnostics: Sequence[Diagnostic], *, source: str | None = None) -> None:
        self.diagnostics = list(diagnostics)
        self.source = source
        lines = [str(d) for d in self.diagnostics if d.severity == "error"]
        super().__init__("\n".join(lines) or "workflow is invalid")


class ReservedToolNameError(WorkflowError):
    """A host tool is named ``archmax_*`` (§2.3)."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        super().__init__(f"tool name '{tool}' is reserved: names starting 'archmax_' belong to the runtime")


class MissingHookExecutorError(WorkflowError):
    """A custom hook kind declared in ``extensions.hooks`` has no executor at ``create_agent`` (§2.4).

    Attributes:
        kinds: The kinds without an executor, in declaration order.
    """

    def __init__(self, workflow: str, kinds: Sequence[str]) -> None:
        self.kinds = list(kinds)
        names = ", ".join(f"'{k}'" for k in self.kinds)
        super().__init__(
            f"workflow '{workflow}' declares hook kind {names} in extensions.hooks but create_agent got no "
            "executor for it: pass hooks={kind: fn}"
        )


class HookToolForbiddenError(WorkflowError):
    """A hook called a tool the root forbid lists remove, or one the agent does not have (§2.4)."""

    def __init__(self, tool: str, why: str) -> None:
        self.tool = tool
        super().__init__(f"a hook cannot call tool '{tool}': {why}")


class CaseSpecError(WorkflowError):
    """A YAML test case (``workflows/<slug>/tests/**/*.test.yaml``) is unreadable or invalid (§10.1, §10.2).

    Attributes:
        path: The case file (or ``workflow.yaml`` for a suite-level setting), as given.
        key: The offending key, dotted (``steps.2.deliver.trigger``), or ``None``.
    """

    def __init__(self, path: str, message: str, *, key: str | None = None) -> None:
        self.path = path
        self.key = key
        where = f" at '{key}'" if key else ""
        super().__init__(f"{path}{where}: {message}")


# --------------------------------------------------------------------------- caller / host


class CallerError(ArchmaxError):
    """Something the caller (host, CLI user, webhook sender) must fix."""


class InvalidSessionIdError(CallerError):
    """An explicit or resolved session id fails BEHAVIOUR.md §4.1."""

    def __init__(self, session_id: Any, rule: str) -> None:
        self.rule = rule
        self.bad_id = session_id
        super().__init__(f"invalid session id {session_id!r}: {rule}")


class InvalidSessionPathError(CallerError):
    """A session path fails the grammar of §4.3."""

    def __init__(self, path: str, source: str, reason: str) -> None:
        self.path = path
        self.source = source
        self.reason = reason
        super().__init__(f"the session path '{path}' from {source} is not usable: {reason}")


class InvalidVariableNameError(CallerError):
    """A host, delivery or file variable name fails ``^[a-z][a-z0-9_]*$`` or is supplied twice (§3.4, §6)."""

    def __init__(self, name: Any, source: str, reason: str | None = None, *, session_id: str | None = None) -> None:
        self.name = name
        self.source = source
        why = reason or "names must match ^[a-z][a-z0-9_]*$"
        super().__init__(f"variable name {name!r} {source} is not usable: {why}", session_id=session_id)


class InvalidFilePathError(CallerError):
    """A bad attachment name or seed path (§3.10, §9.5)."""

    def __init__(self, path: Any, reason: str, *, session_id: str | None = None) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"file path {path!r} is not usable: {reason}", session_id=session_id)


class EmptyMessageError(CallerError):
    """A blank message on ``reply``, or on a turn from send/invoke/run."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session '{session_id}': the message is empty", session_id=session_id)


class MissingDeliveryTriggerError(CallerError):
    """``deliver`` with a blank or missing trigger id (§3.5)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"delivery to session '{session_id}' carries no trigger id; a delivery must name its trigger",
            session_id=session_id,
        )


class UnknownTriggerError(CallerError):
    """A turn would open under a trigger no state declares (§3.4)."""

    def __init__(self, trigger: str, declared: Sequence[str], *, session_id: str | None = None) -> None:
        self.trigger = trigger
        self.declared = list(declared)
        names = ", ".join(f"'{t}'" for t in self.declared) or "(none)"
        super().__init__(
            f"trigger '{trigger}' is not declared by the workflow. Declared: {names}", session_id=session_id
        )


class MisspeltTriggerError(UnknownTriggerError):
    """A delivery names a trigger within a typo of a known one, and not the known one (issue 25 item 4)."""

    def __init__(self, trigger: str, declared: Sequence[str], closest: str, *, session_id: str | None = None) -> None:
        super().__init__(trigger, declared, session_id=session_id)
        self.closest = closest
        self.args = (f"{self.args[0]}; did you mean '{closest}'? Nothing was delivered.",)


class UnknownSessionTriggerError(UnknownTriggerError):
    """``resolve_session`` for a new session under an undeclared trigger (§3.8)."""


class UnknownArtifactError(CallerError):
    """``sessions.artifact`` asked for a name that is not one of the session's artifacts (§9.5)."""

    def __init__(self, name: object, known: Sequence[str], *, session_id: str | None = None) -> None:
        self.name = name
        self.known = list(known)
        super().__init__(f"'{name}' is not an artifact. Known: {', '.join(self.known)}", session_id=session_id)


class WorkflowDisabledError(CallerError):
    """``send``/``run`` would open a turn on a workflow with ``disabled: true`` (§2.1)."""

    def __init__(self, workflow: str, *, session_id: str | None = None) -> None:
        self.workflow = workflow
        super().__init__(f"workflow '{workflow}' is disabled: it starts no new turns", session_id=session_id)


class OtherWorkflowSessionError(CallerError):
    """A firing at a session recorded under another workflow than the agent's; nothing was changed (HTTP 409).

    An agent assembled for workflow ``x`` whose store also holds sessions of ``y`` (``archmax serve
    x`` on a workspace's shared ``sessions/``, a library host) would otherwise resume ``y``'s park
    under ``x``'s states. The engine's door refuses it on the record it reads, before the claim
    (:func:`archmax.engine.firing_rule.refuse_other_workflow`). A firing at a sub-workflow child's
    id is let through by the workflow of the child or of any caller up its chain, and reaches the
    pair through its caller (§5.10); any other workflow is refused there too
    (:func:`~archmax.engine.firing_rule.refuse_outside_pair`). An agent that adopts the session's
    workflow (``Runtime.adopts``: the CLI's renamed workflow folder) continues it. Not retryable:
    the session will never be this workflow's; a host's drain leaves such an inbox item pending for
    the session's own host. Rule source: BEHAVIOUR.md §3.3 (a refused firing writes nothing), §9.3
    (the record's ``workflow``), §11 (which workflow a session command uses); attack32.

    Attributes:
        workflow: The workflow the session's record names.
        agent_workflow: The slug of the agent's workflow the firing came through.
    """

    def __init__(self, session_id: str, workflow: str, agent_workflow: str) -> None:
        self.workflow = workflow
        self.agent_workflow = agent_workflow
        super().__init__(
            f"session '{session_id}' belongs to workflow '{workflow}', not '{agent_workflow}': nothing was "
            f"changed; fire it through workflow '{workflow}'",
            session_id=session_id,
        )


class SessionStateError(CallerError):
    """The session is not in a state that allows the operation.

    Attributes:
        status: The status the session was found in (``None``: no such session).
        lost_race: The operation found the session in the right state but another writer claimed it
            first (its conditional claim lost). To a caller of ``deliver``/``decide`` that is the same
            refusal; to an inbox it means "not now": see :func:`is_retryable`.
    """

    def __init__(self, message: str, *, session_id: str, status: str | None, lost_race: bool = False) -> None:
        self.status = status
        self.lost_race = lost_race
        super().__init__(message, session_id=session_id)


class SessionNotAwaitingInputError(SessionStateError):
    """``deliver`` to a session not parked on ``input`` (§3.5)."""

    def __init__(
        self, session_id: str, status: str | None, detail: str | None = None, *, lost_race: bool = False
    ) -> None:
        what = f"its status is '{status}'" if status else "no such session (it does not exist)"
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"session '{session_id}' is not parked awaiting an event: {what}{extra}",
            session_id=session_id,
            status=status,
            lost_race=lost_race,
        )


class SessionNotParkedError(SessionStateError):
    """``decide``/``reply`` when the session is not parked on ``decision`` (§3.6, §3.7)."""

    def __init__(self, session_id: str, status: str | None, *, lost_race: bool = False) -> None:
        what = f"its status is '{status}'" if status else "no such session (it does not exist)"
        super().__init__(
            f"session '{session_id}' is not parked awaiting a decision: {what}",
            session_id=session_id,
            status=status,
            lost_race=lost_race,
        )


class SessionNotResumableError(SessionStateError):
    """A live lease is held by another writer, or a commit lost to another writer (§3.12)."""

    def __init__(self, session_id: str, status: str | None, detail: str | None = None) -> None:
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"session '{session_id}' is '{status}' and cannot be resumed now: one writer per session; "
            f"retry after it parks{extra}",
            session_id=session_id,
            status=status,
        )


class CommitConflictError(SessionNotResumableError):
    """A commit found a version or lease owner other than the one the writer read (§9.1).

    Every store raises exactly this class for a stale commit.
    """

    def __init__(self, session_id: str, expected_version: int, found: Any = None) -> None:
        self.expected_version = expected_version
        self.found = found
        super().__init__(session_id, "running", f"commit expected version {expected_version}, found {found}")


class DeliveryQueuedError(SessionNotResumableError):
    """A direct firing whose ``delivery_id`` waits in the session's inbox; nothing was applied now.

    The inbox applies it in its place, after the firings that arrived before it (DESIGN.md §3
    "Inbox": drained in arrival order; issue 22); nothing changed. A retry answers
    ``DuplicateDeliveryError`` once the drain (the accept's wake, else the sweep) applied it.
    Retryable ("not now"); HTTP 409 like every ``SessionNotResumableError``.

    Attributes:
        delivery_id: The queued delivery id.
    """

    def __init__(self, session_id: str, delivery_id: str) -> None:
        self.delivery_id = delivery_id
        SessionStateError.__init__(
            self,
            f"delivery '{delivery_id}' waits in the inbox of session '{session_id}' behind earlier firings: "
            "it is applied there, in arrival order; retry for its outcome (after it was applied a retry "
            "answers that the delivery was already applied)",
            session_id=session_id,
            status="queued",
        )


class DuplicateDeliveryError(CallerError):
    """A firing whose ``delivery_id`` the session has already applied; nothing was changed.

    Hosts treat it as success: the event was handled the first time (DESIGN.md §3 inbox).
    """

    def __init__(self, session_id: str, delivery_id: str) -> None:
        self.delivery_id = delivery_id
        super().__init__(f"session '{session_id}' has already applied delivery '{delivery_id}'", session_id=session_id)


class InvalidEventError(CallerError):
    """An inbound event (API Gateway request, SES receipt, schedule) is malformed; nothing was written.

    Attributes:
        problem: What is wrong, in words a sender can act on.
        status: The HTTP status the event deserves (400 malformed, 415 unsupported media type).
    """

    def __init__(self, problem: str, *, status: int = 400, session_id: str | None = None) -> None:
        self.problem = problem
        self.status = status
        super().__init__(f"invalid event: {problem}", session_id=session_id)


class UnauthenticatedEventError(InvalidEventError):
    """An inbound event lacks the proof its entry point requires (a webhook signature, a fresh timestamp); 401.

    Nothing was written. Rule source: issue 13 item 2 (unsigned or stale requests get 401).
    """

    def __init__(self, problem: str, *, session_id: str | None = None) -> None:
        super().__init__(problem, status=401, session_id=session_id)


class AttachmentLimitError(CallerError):
    """A firing carries more attachments, or more attachment bytes, than the host's caps allow; nothing was placed.

    Rule source: issue 13 item 5 (caps per mail and per firing; the excess refused and recorded).

    Attributes:
        limit: Which cap (``attachments`` or ``attachment_bytes``).
        allowed: The cap's value.
        found: What the firing carried.
    """

    def __init__(self, limit: str, allowed: int, found: int, *, session_id: str | None = None) -> None:
        self.limit, self.allowed, self.found = limit, allowed, found
        what = "attachments" if limit == "attachments" else "bytes of attachments"
        super().__init__(f"the firing carries {found} {what}; at most {allowed} are accepted", session_id=session_id)


class UnknownQuarantineError(CallerError):
    """``quarantine release`` named a mail that is not in the session's quarantine (404).

    Attributes:
        delivery_id: The id asked for.
    """

    def __init__(self, session_id: str, delivery_id: str) -> None:
        self.delivery_id = delivery_id
        super().__init__(f"session '{session_id}' has no quarantined mail '{delivery_id}'", session_id=session_id)


class InvalidDeliveryIdError(CallerError):
    """A firing's ``delivery_id`` cannot be recorded or used as an inbox key; nothing was written.

    It is refused when it is not a non-blank string, is not valid Unicode text, encodes in more than
    512 UTF-8 bytes, or holds a control character (:func:`archmax.session.ids.validate_delivery_id`;
    DESIGN.md §3 "Inbox").

    Attributes:
        delivery_id: The refused value, as given (untrusted; may not be a string).
        reason: Which rule it broke.
    """

    def __init__(self, delivery_id: Any, reason: str, *, session_id: str | None = None) -> None:
        self.delivery_id = delivery_id
        self.reason = reason
        super().__init__(f"delivery id {delivery_id!r} is not usable: {reason}", session_id=session_id)


class InvalidDecisionTargetError(CallerError):
    """``decide`` with a missing target, or one that is not an edge of the park record (§3.7)."""

    def __init__(self, target: str | None, valid: Sequence[str], *, session_id: str) -> None:
        self.target = target
        self.valid = list(valid)
        choices = ", ".join(self.valid)
        if not target:
            msg = f"A decision target is required for session '{session_id}'. Choose one of: {choices}."
        else:
            msg = f"'{target}' is not a valid decision target for session '{session_id}'. Choose one of: {choices}."
        super().__init__(msg, session_id=session_id)


# --------------------------------------------------------------------------- infrastructure


class InfrastructureError(ArchmaxError):
    """Something wrong with the store or the platform."""


class SessionStoreCapabilityError(InfrastructureError):
    """The store lacks a capability (``list``, ``delete``, ``upload_files``) the call needs (§9.1)."""

    def __init__(self, capability: str, path: str | None = None, *, session_id: str | None = None) -> None:
        self.capability = capability
        self.path = path
        where = f" to write '{path}'" if path else ""
        super().__init__(f"the session store lacks the '{capability}' capability{where}", session_id=session_id)


class StoreError(InfrastructureError):
    """The store failed for a reason other than a conflict (I/O, permissions, AWS service error)."""


class SessionIdMismatchError(InfrastructureError):
    """A store answered a load for one session id with another session's record (issue 13 item 4).

    Never a silent answer: two ids that one filesystem folds to one folder, or a corrupted record,
    must not let one session read or complete another.

    Attributes:
        stored_id: The ``session_id`` the record holds.
    """

    def __init__(self, session_id: str, stored_id: str) -> None:
        self.stored_id = stored_id
        super().__init__(
            f"the store's record for session {session_id!r} belongs to session {stored_id!r}; refusing to mix them",
            session_id=session_id,
        )


class ConfigurationError(InfrastructureError):
    """A host setting (environment variable, SSM parameter, secret) is missing or unusable.

    Attributes:
        setting: The environment variable or parameter name at fault, or ``None``.
    """

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        self.setting = setting
        super().__init__(message)


class OutboundError(InfrastructureError):
    """An outbound message was not sent (SMTP, SES or EventBridge refused it, or no sender is configured).

    Nothing was recorded as sent, so the dispatcher's next run retries it (DESIGN.md §3 "The change stream").
    """


class UnsendableError(OutboundError):
    """An outbox entry no retry can send: no ``From`` address, a header the mail format refuses, an address refused for good.

    The dispatcher records it as failed (``outbox/<id>.failed.json``) and goes on with the entries
    after it (issue 20 item 5: one unsendable entry never holds back another).
    """


# --------------------------------------------------------------------------- model provider


class ModelError(ArchmaxError):
    """The model provider failed."""


class ModelConfigurationError(ModelError):
    """The model cannot be built from the configuration given (``ARCHMAX_MODEL`` etc.)."""


class ModelAccessError(ModelError):
    """The provider refused access (credentials, permissions, model not enabled)."""


class ModelNotFoundError(ModelError):
    """The provider does not know the model id."""


class ModelRequestError(ModelError):
    """The provider rejected the request as invalid."""


class ModelThrottledError(ModelError):
    """The provider throttled the request beyond the retry budget."""


class ModelTruncatedError(ModelError):
    """The provider cut the answer short: it is never taken as a final answer.

    OpenAI ``finish_reason: length``, Bedrock ``stopReason: max_tokens``; raise ``ARCHMAX_MODEL_MAX_TOKENS``.
    """


class ModelScriptError(ModelError):
    """A scripted model ran out of entries or found the session somewhere its script did not expect (§10.4)."""


class PathExistsError(StoreError):
    """A create-only write found the path already there (§9.1 ``create_only``; placements retry the next name)."""

    def __init__(self, path: str, *, session_id: str | None = None) -> None:
        self.path = path
        super().__init__(f"'{path}' already exists", session_id=session_id)


TURN_FAILING_MODEL_ERRORS: tuple[type[ModelError], ...] = (
    ModelAccessError,
    ModelNotFoundError,
    ModelRequestError,
    ModelConfigurationError,
)
"""Model errors a retry cannot cure (access refused, an unknown model, a request the provider rejects,
a state's model that cannot be built): raised by a call inside a turn, they fail the turn like an
exhausted budget (routed by ``on_error``, else the session is rejected, §5.7) instead of leaving it
``running`` for a sweep that would call the model, fail and commit again, forever. An outage
(throttling, a timeout, a cut-off answer, any other ``ModelError``) stays retryable."""


def is_retryable(exc: BaseException) -> bool:
    """Whether an error means "not now" rather than "never": the one place that decides it.

    Retryable: another writer holds the session (:class:`SessionNotResumableError`, which covers a
    lost commit, :class:`CommitConflictError`), a store or model outage (:class:`StoreError`,
    :class:`ModelError`), and a refusal raised because a conditional claim lost a race
    (``SessionStateError.lost_race``): the session was where the event could apply and another event
    got there first, so the event applies after that event's turn. An inbox leaves such an item
    pending (DESIGN.md §3 "Inbox": an accepted event is applied once and never lost); anything
    else is a refusal. Source: issue 9 item 1.
    """
    if isinstance(exc, (SessionNotResumableError, StoreError, ModelError)):
        return True
    return isinstance(exc, SessionStateError) and exc.lost_race
