"""The records a session is made of: the checkpoint and everything inside it.

Rule source: BEHAVIOUR.md §3.1 (statuses, park records), §7 (runtime notes in messages),
§9.3 (checkpoint record). Instants are UTC strings ``YYYY-MM-DDTHH:MM:SS.mmmZ``; trail
timestamps are integer epoch milliseconds.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class SessionStatus(StrEnum):
    """A session's status (§3.1). ``completed``, ``failed`` and ``rejected`` are finished."""

    RUNNING = "running"
    AWAITING_INPUT = "awaiting_input"
    AWAITING_DECISION = "awaiting_decision"
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"


DELIVERY_IDS_KEPT = 200
"""How many applied delivery ids the checkpoint itself keeps; older ones are kept as marker files
(``archmax.engine.deliveries``), so no id is ever forgotten."""

OUTBOX_KEPT = 10
"""The outbox size at which a turn-ending commit asks which entries are settled and drops those.

No count limits an unsent entry (issue 20 item 1): an entry leaves the record only once its result
record says it was sent or failed for good, so a burst or an outage never pushes one out unsent."""

PARKED_STATUSES = frozenset({SessionStatus.AWAITING_INPUT, SessionStatus.AWAITING_DECISION})
"""Statuses of a suspended session (§3.1); it is parked only with its record and no live lease."""

FINISHED_STATUSES = frozenset({SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.REJECTED})


def is_finished(status: object) -> bool:
    """True exactly for ``completed``, ``failed`` and ``rejected`` (§3.1); False for anything else, None included."""
    return isinstance(status, str) and status in {s.value for s in FINISHED_STATUSES}


class _Record(BaseModel):
    # Schemas are built on first use, not at import (issue 10: a handler's cold import).
    model_config = ConfigDict(extra="ignore", defer_build=True)


class Usage(_Record):
    """Token usage and estimated cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float | None = None

    def is_zero(self) -> bool:
        """Whether no token was counted (cost is not looked at); ``SessionSummary.usage`` is then ``None`` (§3.11)."""
        return not (self.input_tokens or self.output_tokens or self.cache_read_tokens or self.cache_creation_tokens)

    def plus(self, other: Usage | None) -> Usage:
        """The sum of two usages (cost summed when either has one)."""
        if other is None:
            return self.model_copy()
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
            cost_usd=cost,
        )


class ToolCall(_Record):
    """One tool call inside an assistant message."""

    id: str
    """Provider or runtime id; scripted models use ``call_<n>``, notes ``note_<uuid4 hex>``."""
    name: str
    """The tool's name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments, a JSON object."""


class Message(_Record):
    """One transcript entry: a user, assistant or tool message.

    Runtime notes (§7) are an assistant message with one ``archmax_note`` call followed by a
    tool message answering it; both carry ``archmax = {"note": <kind>}``.
    """

    role: Literal["user", "assistant", "tool"]
    """Who wrote it."""
    content: str = ""
    """The text (a tool message's result text)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """An assistant message's tool calls, in order."""
    tool_call_id: str | None = None
    """On a tool message, the call it answers."""
    name: str | None = None
    """On a tool message, the tool's name."""
    status: Literal["success", "error", "blocked"] | None = None
    """On a tool message, the result status (§5)."""
    archmax: dict[str, Any] | None = None
    """The runtime-note marker ``{"note": kind}``; absent on ordinary messages."""
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Provider extras; adapters keep the note marker in ``additional_kwargs["archmax"]``."""
    handoff: bool = False
    """True on the assistant answer of a handoff call (a park message)."""
    usage: Usage | None = None
    """On an assistant message a model wrote: that one call's token usage (the session's total is
    ``Checkpoint.usage``)."""
    ts: int | None = None
    """Epoch milliseconds of the commit that first stored the message (set by the engine at commit;
    absent on messages of older records). Read by the derived views (issue 15), not by the model."""


class Variable(_Record):
    """A session variable (§6)."""

    value: Any = None
    """Any JSON value."""
    locked: bool = False
    """A locked variable cannot be changed by the agent."""


class TrailStep(_Record):
    """One movement step of the append-only trail (§1)."""

    to: str
    """The state moved to (or stayed in, for a ``trigger`` step)."""
    kind: Literal["trigger", "agent", "human", "reset", "on_error", "sub-workflow", "hook"]
    """What caused the step (``hook`` steps record a hook result and move nothing, §2.4)."""
    reason: str | None = None
    """Trigger id, the agent's reason, the person's comment, ..."""
    workflow: str | None = None
    """Sub-workflow slug, for ``sub-workflow`` steps."""
    status: str | None = None
    """Sub-workflow result status."""
    state: str | None = None
    """For ``hook`` steps: the state whose hook ran."""
    phase: Literal["before", "after"] | None = None
    """For ``hook`` steps: ``before`` or ``after``."""
    index: int | None = None
    """For ``hook`` steps: the hook's 0-based position in its ``before``/``after`` list."""
    verdict: Literal["ok", "correct", "veto"] | None = None
    """For ``hook`` steps: the verdict as counted (a fail-closed hook is a ``veto``)."""
    ts: int
    """Epoch milliseconds."""
    at_message: int | None = None
    """The transcript length when the step was taken: it happened before ``messages[at_message]``.
    Lets the derived views place the step in the conversation (absent on older records)."""


class TransitionRef(_Record):
    """A transition as copied into a decision record."""

    to: str
    description: str | None = None
    type: str | None = None


class PendingDecision(_Record):
    """A park on the ``decision`` channel (§3.1)."""

    state: str
    title: str | None = None
    seq: int
    """1 for the session's first decision record, +1 for each later one."""
    transitions: list[TransitionRef]
    evidence: list[str] | None = None
    created_at: str
    parked_version: int | None = None
    """The version of the commit that parked the session here: the park's identity (§5.11, :func:`park_id`)."""
    timeout: str | None = None
    """The human state's ``timeout`` as written (``"3d"``), when it declares one (§5.11)."""
    timeout_at: str | None = None
    """When that timeout passes: ``created_at`` + the duration (§5.11)."""


class PendingInput(_Record):
    """A park on the ``input`` channel, made by ``archmax_wait`` (§3.1)."""

    state: str
    title: str | None = None
    reason: str
    """The agent's words."""
    parked_at: str
    resume_at: str | None = None
    """Only when the wait had ``until``; advice for whoever polls, never scheduled."""
    parked_version: int | None = None
    """The version of the commit that parked the session here: the park's identity (§5.11, :func:`park_id`)."""
    timeout: str | None = None
    """The wait's ``timeout`` as given (``"3d"``), when it had one (§5.11)."""
    timeout_at: str | None = None
    """When that timeout passes: ``parked_at`` + the duration (§5.11)."""


class Lease(_Record):
    """A single-writer claim on a session (§3.12)."""

    owner: str
    expires_at: str

    def live_at(self, now: str) -> bool:
        """True while ``expires_at > now`` (§3.12); instants compare as strings."""
        return self.expires_at > now


class Raised(_Record):
    """What ``archmax_raise`` recorded (§5.6)."""

    code: str
    reason: str
    state: str


OutboxDetailType = Literal["Session Parked", "Session Completed", "Session Failed", "Session Rejected"]
"""What a turn-ending commit did to the session: the EventBridge ``detail-type`` of its outbox entries."""


class OutboxEntry(_Record):
    """One outbound message a turn-ending commit recorded: sent after the commit, from this record.

    The transactional outbox of DESIGN.md §3 "The change stream": the commit that ends a turn is the
    single source of truth, and a dispatcher sends each entry once, keyed by ``(session id, id)``.
    """

    version: int
    """The committed version that recorded the entry."""
    index: int
    """Its position among that version's entries, from 0."""
    kind: Literal["email", "event"]
    """``email``: a reply to the person who wrote in; ``event``: a lifecycle event on the event bus."""
    detail_type: OutboxDetailType
    """What the commit did to the session (the EventBridge ``detail-type``)."""
    text: str = ""
    """The words for the person: the question or handoff message at a park, the final answer, a failure's reason."""
    to: list[str] = Field(default_factory=list)
    """Email: recipient addresses (the sender of the mail the session last received)."""
    cc: list[str] = Field(default_factory=list)
    """Email: copied addresses."""
    inbox: str | None = None
    """Email: the address the person wrote to, our default ``From``."""
    subject: str | None = None
    """Email: the subject, ``Re: <their subject>``."""
    in_reply_to: str | None = None
    """Email: the Message-ID (normalised, no brackets) of the mail being answered."""
    references: list[str] = Field(default_factory=list)
    """Email: the thread's Message-IDs, oldest first, ending with ``in_reply_to``."""
    park_version: int | None = None
    """Email: the version of the commit that parked the session where this mail asks its question (the
    park's ``parked_version``, §5.11), signed into its reply token; ``None`` when it asks none."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """Event: the event's ``detail`` (session_id, workflow, state, channel, reason, resume_at, text, exit)."""

    @property
    def id(self) -> str:
        """The entry's id within its session: ``<version, 10 digits>-<index>`` (stable, sorts by commit)."""
        return f"{self.version:010d}-{self.index}"


class ForwardedDelivery(_Record):
    """A delivery the caller claimed for its parked child and has not yet seen the child take (§3.5, §5.10).

    Committed with the caller's claim, so a process that dies before the child's own claim loses
    nothing: whoever continues the caller's turn hands it to the child, once (issue 9: no event lost).
    """

    trigger: str
    variables: dict[str, Any] = Field(default_factory=dict)
    message: str | None = None
    delivery_id: str | None = None
    child_version: int
    """The child's version when the delivery was forwarded: the park it is for (a later version took it)."""


class Delegation(_Record):
    """A sub-workflow call in flight: the caller waits on (or is parked through) its child session (§5.10)."""

    session_id: str
    """The child's id ``<parent>~<state>:<workflow>:<n>`` (§4.1)."""
    workflow: str
    """The child workflow's slug."""
    state: str
    """The calling state."""
    call_id: str
    """The ``archmax_workflow_<slug>`` tool call that started it."""
    variables: dict[str, Any] = Field(default_factory=dict)
    """The call's plain arguments, seeded locked in the child (``title`` unlocked)."""
    files: dict[str, str] = Field(default_factory=dict)
    """File arguments: child variable → the path in the caller's session, copied into the child."""
    after: Literal["decision", "delivery"] | None = None
    """What was last forwarded to the child, for the failure note (§5.10)."""
    child_state: str | None = None
    """The child's parked state while the caller mirrors its park."""
    forward: ForwardedDelivery | None = None
    """A delivery claimed for the child that the child has not taken yet (cleared once it has)."""


class PendingRejection(_Record):
    """A failed sub-workflow call pending on its calling state (§5.7): routed when the model finishes."""

    state: str
    workflow: str
    reason: str


class Checkpoint(_Record):
    """The whole session at one committed version (§9.3). The highest version is the session."""

    session_id: str
    version: int = 0
    """1 for the first commit, +1 for each later one."""
    workflow: str
    spec_hash: str | None = None
    status: SessionStatus = SessionStatus.RUNNING
    position: str | None = None
    """The current state slug."""
    entry_state: str | None = None
    """Written once at the first turn opening; ``archmax_reset`` returns here."""
    trigger: str | None = None
    """The current trigger id."""
    messages: list[Message] = Field(default_factory=list)
    variables: dict[str, Variable] = Field(default_factory=dict)
    trail: list[TrailStep] = Field(default_factory=list)
    pending_decision: PendingDecision | None = None
    pending_input: PendingInput | None = None
    park_phase: Literal["closing", "suspend"] | None = None
    reply_only: bool = False
    park_counts: dict[str, int] = Field(default_factory=dict)
    state_turns: int = 0
    """Model calls in the current state visit (the ``maxTurns`` count)."""
    decision_count: int = 0
    rejected: str | None = None
    """The rejection reason while the status is ``rejected``."""
    raised: Raised | None = None
    hook_iterations: dict[str, int] = Field(default_factory=dict)
    """``correct`` verdicts given this turn per hook position ``<state>/<phase>/<index>`` (§2.4)."""
    before_done: list[str] = Field(default_factory=list)
    """States whose ``before`` hooks ran for the current visit this turn (the ``before`` marks, §2.4)."""
    usage: Usage = Field(default_factory=Usage)
    lease: Lease | None = None
    created_at: str
    updated_at: str
    # --- bookkeeping the rules above need, beyond §9.3's list
    pending_failure: str | None = None
    """A turn failure not yet routed (the "pending rejection")."""
    turn_open_state: str | None = None
    """Where the current turn opened (for RESET_INSTRUCTION, §8)."""
    moved_since_open: bool = False
    """Whether the position changed since the turn opened (§8)."""
    event_seq: int = 0
    """The last event ``seq`` emitted for this session."""
    delegation: Delegation | None = None
    """The sub-workflow call this session waits on (§5.10)."""
    pending_rejection: PendingRejection | None = None
    """A failed sub-workflow call not yet recovered, cleared or routed (§5.7)."""
    subworkflow_calls: dict[str, int] = Field(default_factory=dict)
    """Sub-workflow calls made per calling state in the session (the child id's ordinal, §5.10)."""
    delivery_ids: list[str] = Field(default_factory=list)
    """Ids of the last firings applied (newest last, at most ``DELIVERY_IDS_KEPT``), so a redelivered event
    is recognised and applied once; ids older than these are kept as markers (``archmax.engine.deliveries``)."""
    outbox: list[OutboxEntry] = Field(default_factory=list)
    """Outbound messages recorded by turn-ending commits (newest last): every entry not known sent, and
    settled ones only until the record next grows past ``OUTBOX_KEPT``; sending them happens after the commit (DESIGN.md §3 "The
    change stream", issue 20 item 1)."""

    @property
    def resume_at(self) -> str | None:
        """The input park's due instant (set only by ``archmax_wait`` with ``until``; §5.3), else ``None``."""
        return self.pending_input.resume_at if self.pending_input else None

    @property
    def park_id(self) -> str | None:
        """The current park's identity (§5.11), or ``None`` when the session is not parked; see :func:`park_id`."""
        park = self.pending_decision or self.pending_input
        return park_id(self.session_id, park) if park is not None else None

    @property
    def wake_at(self) -> str | None:
        """The earliest instant the sweep wakes the current park: its ``resume_at`` or its ``timeout_at`` (§5.11)."""
        park = self.pending_decision or self.pending_input
        if park is None:
            return None
        due = [at for at in (getattr(park, "resume_at", None), park.timeout_at) if at]
        return min(due) if due else None

    @property
    def parked_since(self) -> str | None:
        """When the current park was made: a decision park's ``created_at``, an input park's ``parked_at``.

        ``None`` when no park record is present. What the oldest-park metric ages (BEHAVIOUR.md §5.11).
        """
        if self.pending_decision is not None:
            return self.pending_decision.created_at
        return self.pending_input.parked_at if self.pending_input is not None else None

    @property
    def channel(self) -> Literal["decision", "input"] | None:
        """The park channel derived from the record present (§3.1)."""
        if self.pending_decision is not None:
            return "decision"
        if self.pending_input is not None:
            return "input"
        return None

    @property
    def current_state(self) -> str:
        """The state the session stands in (``position``, set when its first turn opens, §8).

        Raises:
            ValueError: the session has no position yet (no turn ever opened).
        """
        if self.position is None:
            raise ValueError(f"session '{self.session_id}' has no position yet")
        return self.position


def park_id(session_id: str, park: PendingDecision | PendingInput) -> str:
    """A park's identity (BEHAVIOUR.md §5.11): the session id and the version of the commit that parked it.

    One opaque string, ``<session id>@v<version>``; callers compare it, never parse it. A record
    written before parks carried their version is named by its park instant instead
    (``<session id>@<instant>``), which is just as stable.
    """
    if park.parked_version is not None:
        return park_id_at(session_id, park.parked_version)
    since = park.created_at if isinstance(park, PendingDecision) else park.parked_at
    return f"{session_id}@{since}"


def park_id_at(session_id: str, parked_version: int) -> str:
    """The identity of the park the commit at ``parked_version`` made (§5.11): ``<session id>@v<version>``.

    What a signed reply token that names only the park's version stands for (issue 21 item 6).
    """
    return f"{session_id}@v{parked_version}"


def stamp_park(record: Checkpoint) -> None:
    """Give a park made since the last commit its identity: the version being committed (§5.11).

    Called by the commit that writes ``record`` at ``record.version``; a park that already has its
    version (a reply, a handoff call, a later commit of the same park) keeps it.
    """
    park = record.pending_decision or record.pending_input
    if park is not None and park.parked_version is None:
        park.parked_version = record.version
