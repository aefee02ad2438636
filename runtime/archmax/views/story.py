"""A session's story, derived from its checkpoint: the timeline, the conversation, the wait or the exit.

Rule source: BEHAVIOUR.md §9.5 (artifacts are views of the checkpoint, which stays the one record),
§7 and the seed's "Delivering the event" (derived views skip the ``archmax_note`` pair: a runtime
note is shown as a runtime event, never as a tool call), §3.1/§3.11 (statuses, park records,
``SessionSummary``), issue 15 (the three questions: what is it waiting for, how did it get here,
what did it say).

Nothing here reads anything but the record, when given the workflow, and when given a store the
session's quarantined mail (:func:`archmax.inbound.quarantine.listing`, read-only: issue 25 item
6, held mail belongs in the story). Times come from the
record: trail steps carry their own (``ts``), messages the time of the commit that stored them
(``Message.ts``), park records their ``parked_at``/``created_at``. A step's ``at_message`` places
it in the conversation; older records without it list their steps by time. Every instant is
ISO-8601 UTC (``YYYY-MM-DDTHH:MM:SS.mmmZ``). The story is told in time order (issue 25 item 7): a
trail step is stamped when it is taken, a message when its commit is written, so entries are
sorted by time, stably, and an entry with no time keeps the time of the one before it.

Example:
    >>> story = story_of(agent.sessions_store.load("AAQk-1"), workflow)  # doctest: +SKIP
    >>> [e.kind for e in story.timeline]  # doctest: +SKIP
    ['turn', 'park', 'delivery', 'completed']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, computed_field

from archmax.clock import format_instant
from archmax.session.notes import NOTE_TOOL, runtime_note_kind
from archmax.session.records import Checkpoint, Message, SessionStatus, ToolCall, TrailStep, Usage
from archmax.session.until import UntilError, parse_until

EntryKind = Literal[
    "turn",
    "delivery",
    "advance",
    "decision",
    "reset",
    "on_error",
    "sub-workflow",
    "hook",
    "park",
    "raised",
    "completed",
    "failed",
    "rejected",
    "quarantined",
    "released",
    "stopped",
]


class _View(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built when a view is first asked for, not when resolve loads


class TimelineEntry(_View):
    """One thing that happened to the session, with its time.

    ``kind``: ``turn`` (a turn opened under ``trigger`` in ``state``), ``delivery`` (``trigger``
    resumed the input park in ``state``), ``advance`` (the agent moved to ``state``), ``decision``
    (a person chose ``state``, with ``comment``), ``reset``, ``on_error`` (a failure routed to
    ``state``), ``sub-workflow``, ``hook`` (a ``before``/``after`` hook of ``state`` and its verdict), ``park``
    (``channel`` input or decision, ``reason``, ``resume_at``), ``raised``, and the end:
    ``completed``, ``failed``, ``rejected``. Held mail adds ``quarantined`` (:attr:`sender`,
    :attr:`delivery_id` and the hold's ``reason``) and ``released``; a turn that stopped part-way
    ends the story with ``stopped`` (see :class:`Running`; ``reason`` is a committed failure, if any).
    """

    kind: EntryKind
    seq: int = 0
    """Position in the whole story (timeline and conversation share the count), so a log can interleave them."""
    at: str | None = None
    """ISO-8601 instant; ``None`` only for a record that kept no time for it."""
    state: str | None = None
    """Where it happened, or where it moved to."""
    trigger: str | None = None
    channel: Literal["input", "decision"] | None = None
    reason: str | None = None
    """The agent's reason, the failure, or the rejection."""
    comment: str | None = None
    """A decision's comment."""
    resume_at: str | None = None
    code: str | None = None
    """``raised``/``failed``: the agent's code."""
    phase: Literal["before", "after"] | None = None
    """``hook``: which hook list ran."""
    verdict: str | None = None
    """``hook``: ``ok``, ``correct`` or ``veto`` (§2.4)."""
    sender: str | None = None
    """``quarantined``/``released``: who sent the held mail."""
    delivery_id: str | None = None
    """``quarantined``/``released``: the held mail's id (what ``archmax quarantine release`` takes)."""


class ConversationEntry(_View):
    """One line of the conversation as a person reads it.

    ``role``: ``person`` (a user message: a turn's prompt, a delivery's words, a reply at a human
    state), ``agent`` (the agent's words; ``handoff`` marks a park message), ``tool`` (a call with
    its result, shown folded), ``runtime`` (a runtime note: ``note`` is its kind, ``text`` what
    the runtime told the session).
    """

    role: Literal["person", "agent", "tool", "runtime"]
    seq: int = 0
    """Position in the whole story (see :attr:`TimelineEntry.seq`)."""
    at: str | None = None
    text: str = ""
    handoff: bool = False
    tool: str | None = None
    args: dict[str, Any] | None = None
    result: str | None = None
    status: str | None = None
    """A tool result's status: ``success``, ``error`` or ``blocked``."""
    note: str | None = None


class Wait(_View):
    """What a parked session waits for (§3.1)."""

    channel: Literal["input", "decision"]
    state: str
    since: str
    reason: str | None = None
    resume_at: str | None = None
    transitions: list[dict[str, Any]] = Field(default_factory=list)
    """A decision park's choices: ``{to, description?, type?}``."""
    evidence: list[str] = Field(default_factory=list)
    triggers: list[str] = Field(default_factory=list)
    """For an input park: the triggers the workflow declares (any id resumes a park; these are the
    ones the workflow names)."""


class Exit(_View):
    """How a finished session ended."""

    status: Literal["completed", "failed", "rejected"]
    at: str
    code: str | None = None
    reason: str | None = None


class HeldMail(_View):
    """A mail kept in the session's quarantine instead of being delivered (issue 13 item 1).

    From the quarantine record (:class:`archmax.inbound.quarantine.QuarantinedMail`): the id an
    operator releases it by, who sent it, its subject, why it was held and when, and when it was
    released (``None`` while it is still held).
    """

    delivery_id: str
    sender: str | None = None
    subject: str = ""
    reason: str
    quarantined_at: str
    released_at: str | None = None


class Running(_View):
    """Who holds a ``running`` session, or that nobody does: its turn stopped part-way (§3.12).

    ``lease_owner``/``lease_until`` name the live turn's claim, as committed (a process killed
    mid-turn leaves it until ``lease_until``; after that the sweep may take the turn over). With no
    lease the turn stopped part-way after its last commit (``last_commit``): a model or store
    outage stops a turn without a commit, so the record keeps no error text for it, only
    ``failure`` when a turn failure was committed before it could be routed; the sweep finishes it.
    """

    last_commit: str
    lease_owner: str | None = None
    lease_until: str | None = None
    failure: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def stopped(self) -> bool:
        """No turn holds the session: it stopped part-way and waits for the sweep."""
        return self.lease_until is None


class GraphState(_View):
    """A state of the workflow graph as the page draws it."""

    slug: str
    type: str
    terminal: bool
    visited: bool = False
    current: bool = False


class GraphEdge(_View):
    """A transition; ``taken`` when the session moved along it."""

    source: str
    target: str
    type: str | None = None
    taken: bool = False


class Story(_View):
    """Everything the page and ``--log`` show (issue 15)."""

    session_id: str
    workflow: str
    status: str
    classification: Literal["open", "finished"]
    position: str | None
    created_at: str
    updated_at: str
    wait: Wait | None = None
    exit: Exit | None = None
    path: list[str] = Field(default_factory=list)
    """The states the session stood in, in order (a state repeats only after leaving it)."""
    timeline: list[TimelineEntry] = Field(default_factory=list)
    conversation: list[ConversationEntry] = Field(default_factory=list)
    variables: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """``name → {value, locked}``."""
    usage: Usage | None = None
    held: list[HeldMail] = Field(default_factory=list)
    """The session's quarantined mail, released ones included, oldest first (empty unless a store was given)."""
    running: Running | None = None
    """Set while the status is ``running``: the lease, or that the turn stopped part-way."""
    states: list[GraphState] = Field(default_factory=list)
    """Empty when the workflow was not available."""
    edges: list[GraphEdge] = Field(default_factory=list)


def instant_of_ms(ms: int | None) -> str | None:
    """An epoch-millisecond timestamp as an ISO-8601 instant, ``None`` for ``None``."""
    if ms is None:
        return None
    return format_instant(datetime.fromtimestamp(ms / 1000, tz=UTC))


def _is_note(message: Message) -> bool:
    return runtime_note_kind(message) is not None or any(c.name == NOTE_TOOL for c in message.tool_calls)


def _placed(record: Checkpoint) -> list[tuple[int, int, TrailStep, bool]]:
    """``(message index, trail index, step, delivered)`` of each trail step, in transcript order.

    The index is the step's ``at_message``; a record written before steps carried it is placed by
    the message each kind of step writes (:func:`_anchor`). ``delivered`` tells a delivery's
    ``trigger`` step from a turn opening's.
    """
    n = len(record.messages)
    placed = []
    cursor = 0
    for k, step in enumerate(record.trail):
        if step.at_message is not None:
            where = min(step.at_message, n)
        else:
            found = _anchor(record, step, cursor)
            where = n if found is None else found
        cursor = where
        note = _event_note_before(record, where) if step.kind == "trigger" else None
        if note is not None:
            where = note  # a delivery reads before the note it wrote (§3.5)
        placed.append((where, k, step, note is not None))
    return sorted(placed, key=lambda p: (p[0], p[1]))


_NOTE_OF_STEP = {"human": "decision", "on_error": "error", "sub-workflow": "sub-workflow"}
_TOOL_OF_STEP = {"agent": "archmax_advance", "reset": "archmax_reset"}


def _anchor(record: Checkpoint, step: TrailStep, start: int) -> int | None:
    """Where a step without ``at_message`` was taken, or ``None`` when no message matches.

    Searched from ``start`` for the message each kind of step goes with: a turn's prompt, a
    delivery's ``[event]`` note, a decision's or error's note, a successful advance or reset.
    """
    messages = record.messages
    for i in range(start, len(messages)):
        m, kind = messages[i], runtime_note_kind(messages[i])
        if step.kind == "trigger":
            if kind == "event" and m.role == "tool":
                return i + 2 if i + 1 < len(messages) and messages[i + 1].role == "user" else i + 1
            after_event = i > 0 and runtime_note_kind(messages[i - 1]) == "event"
            if m.role == "user" and kind is None and not after_event:
                return i
        elif step.kind in _NOTE_OF_STEP:
            if kind == _NOTE_OF_STEP[step.kind] and m.role == "tool":
                return i - 1 if step.kind == "human" else i + 1
        elif m.role == "tool" and m.name == _TOOL_OF_STEP.get(step.kind) and m.status == "success":
            return i
    return None


def _event_note_before(record: Checkpoint, where: int) -> int | None:
    """Index of the ``[event]`` note call just before ``where``, or ``None`` when the step opened a turn.

    A delivery appends the note, then maybe the delivered message, then its trigger step (§3.5).
    """
    for back in (2, 3):
        i = where - back
        if i >= 0 and runtime_note_kind(record.messages[i]) == "event" and record.messages[i].role == "assistant":
            return i
    return None


def _resume_at(args: dict[str, Any], ts: int | None) -> str | None:
    """A past park's ``resume_at``: its ``until`` read at the commit that stored the park (§5.3)."""
    until = args.get("until")
    if not isinstance(until, str) or ts is None:
        return None
    try:
        return parse_until(until, datetime.fromtimestamp(ts / 1000, tz=UTC))
    except UntilError:
        return None


def held_mail(store: Any, session_id: str) -> list[HeldMail]:
    """The session's quarantined mail as the story shows it, oldest first.

    Read-only, through :func:`archmax.inbound.quarantine.listing` (one ``list_files``, then two
    ``get`` per held mail: its record and its release stamp). Raises what the store raises (StoreError).
    """
    from archmax.inbound.quarantine import listing  # imported here: only a story with a store reads mail

    mails = [
        HeldMail(
            delivery_id=m.delivery_id,
            sender=m.sender,
            subject=m.subject,
            reason=m.reason,
            quarantined_at=m.quarantined_at,
            released_at=m.released_at,
        )
        for m in listing(store, session_id)
    ]
    return sorted(mails, key=lambda m: m.quarantined_at)


def story_of(
    record: Checkpoint,
    workflow: Any | None = None,
    *,
    store: Any | None = None,
    held: Sequence[HeldMail] | None = None,
) -> Story:
    """Derive a session's :class:`Story` from its checkpoint.

    Args:
        record: The latest checkpoint (``store.load(id)``).
        workflow: The session's :class:`~archmax.spec.Workflow`, for the graph, human states
            (decision parks of the past) and the declared triggers; ``None`` leaves those out.
        store: The store the record came from: its quarantined mail joins the story
            (:func:`held_mail`); ``None`` leaves it out.
        held: The quarantined mail, when the caller read it already (wins over ``store``).

    Returns:
        The story: timeline and conversation in time order, the wait or the exit (or, while
        ``running``, the lease or the stopped turn), held mail, variables, usage, the path and
        the graph with visited states and taken edges marked.

    Raises:
        StoreError: reading the quarantine failed (only with ``store``).
    """
    if held is None:
        held = held_mail(store, record.session_id) if store is not None else []
    states = workflow.states if workflow is not None else {}
    teller = _Teller(record, states)
    teller.walk()
    wait = _wait(record, workflow)
    exit_ = _exit(record)
    running = _running(record)
    teller.end(wait, exit_, held, running)
    return Story(
        session_id=record.session_id,
        workflow=record.workflow,
        status=str(record.status),
        classification="finished" if exit_ is not None else "open",
        position=record.position,
        created_at=record.created_at,
        updated_at=record.updated_at,
        wait=wait,
        exit=exit_,
        path=teller.path,
        timeline=list(teller.timeline),
        conversation=list(teller.conversation),
        variables={n: {"value": v.value, "locked": v.locked} for n, v in record.variables.items()},
        usage=None if record.usage.is_zero() else record.usage,
        held=list(held),
        running=running,
        states=_graph_states(states, teller.path, wait.state if wait is not None else record.position),
        edges=_graph_edges(states, teller.taken),
    )


_Entry = TypeVar("_Entry", bound=TimelineEntry | ConversationEntry)


class _Tracked(list[_Entry]):
    """A list that also records each appended item in a shared order (for ``seq``)."""

    def __init__(self, order: list[TimelineEntry | ConversationEntry]) -> None:
        super().__init__()
        self.order = order

    def append(self, item: _Entry) -> None:
        super().append(item)
        self.order.append(item)


class _Teller:
    """Walks one record's trail and transcript together and collects the story's entries.

    The trail steps are placed in the transcript (:func:`_placed`); each message is read after the
    steps placed at or before it. ``path`` and ``taken`` collect where the session stood and which
    edges it moved along; ``here`` is the state it stands in at the point of the walk.
    """

    def __init__(self, record: Checkpoint, states: Mapping[str, Any]) -> None:
        self.record = record
        self.states = states
        self.results = {m.tool_call_id: m for m in record.messages if m.role == "tool" and m.tool_call_id}
        self.order: list[TimelineEntry | ConversationEntry] = []  # every entry in the order it happened
        self.timeline: _Tracked[TimelineEntry] = _Tracked(self.order)
        self.conversation: _Tracked[ConversationEntry] = _Tracked(self.order)
        self.path: list[str] = []
        self.taken: set[tuple[str, str]] = set()
        self.here: str | None = None

    def walk(self) -> None:
        """Read every trail step and message in transcript order."""
        steps = _placed(self.record)
        s = 0
        for i, message in enumerate(self.record.messages):
            while s < len(steps) and steps[s][0] <= i:
                self.on_step(steps[s][2], steps[s][3])
                s += 1
            self.on_message(message)
        for _where, _k, step, delivered in steps[s:]:
            self.on_step(step, delivered)

    def stand(self, state: str) -> None:
        """Add ``state`` to the path unless the session already stands there."""
        if not self.path or self.path[-1] != state:
            self.path.append(state)

    # --- trail steps -----------------------------------------------------------------------------

    def on_step(self, step: TrailStep, delivered: bool) -> None:
        """One trail step: its entry, then (unless a hook, whose verdict moves nothing, §2.4) the move."""
        at = instant_of_ms(step.ts)
        entry = _step_entry(step, delivered, at)
        self.timeline.append(entry)
        if step.kind == "hook":
            return
        self.move(step)
        target = self.states.get(step.to)
        opened_or_moved = entry.kind != "delivery"  # a delivery resumes a park; it neither opens nor moves
        if opened_or_moved and target is not None and target.type == "human":  # §5.1, §3.7, §8 step 8
            self.timeline.append(TimelineEntry(kind="park", at=at, state=step.to, channel="decision"))

    def move(self, step: TrailStep) -> None:
        """Stand in the step's state; a step other than a trigger takes the edge from where it stood."""
        if step.kind != "trigger" and self.here is not None and self.here != step.to:
            self.taken.add((self.here, step.to))
        self.here = step.to
        self.stand(step.to)

    # --- messages --------------------------------------------------------------------------------

    def on_message(self, message: Message) -> None:
        """One message: a runtime note's text, a person's words, or the agent's words and calls."""
        at = instant_of_ms(message.ts)
        kind = runtime_note_kind(message)
        if kind is not None or _is_note(message):
            if message.role == "tool":  # the note's text; its call half is not a call the session made
                self.conversation.append(ConversationEntry(role="runtime", at=at, text=message.content, note=kind))
            return
        if message.role == "user":
            self.conversation.append(ConversationEntry(role="person", at=at, text=message.content))
        elif message.role == "assistant":
            self.on_assistant(message, at)

    def on_assistant(self, message: Message, at: str | None) -> None:
        """The agent's words (when it said any), then each tool call with its result."""
        if message.content.strip():
            self.conversation.append(
                ConversationEntry(role="agent", at=at, text=message.content, handoff=message.handoff)
            )
        for call in message.tool_calls:
            self.on_call(call, at)

    def on_call(self, call: ToolCall, at: str | None) -> None:
        """A tool call, folded with its result; a successful wait or raise is also a timeline entry."""
        result = self.results.get(call.id)
        self.conversation.append(
            ConversationEntry(
                role="tool",
                at=instant_of_ms(result.ts) if result is not None else at,
                tool=call.name,
                args=call.args,
                result=result.content if result is not None else None,
                status=result.status if result is not None else None,
            )
        )
        if result is None or result.status != "success":
            return
        if call.name == "archmax_wait":
            self.timeline.append(
                TimelineEntry(
                    kind="park",
                    at=instant_of_ms(result.ts),
                    state=self.here,
                    channel="input",
                    reason=str(call.args.get("reason", "")).strip() or None,
                    resume_at=_resume_at(call.args, result.ts),
                )
            )
        elif call.name == "archmax_raise":
            self.timeline.append(
                TimelineEntry(
                    kind="raised",
                    at=instant_of_ms(result.ts),
                    state=self.here,
                    code=str(call.args.get("code")),
                    reason=str(call.args.get("reason")),
                )
            )

    # --- the end of the story --------------------------------------------------------------------

    def end(self, wait: Wait | None, exit_: Exit | None, held: Sequence[HeldMail], running: Running | None) -> None:
        """Close the story: the current park, the exit, the last position, held mail, a stopped turn; then order it."""
        record = self.record
        if wait is not None:
            _pin_current_park(self.timeline, wait)
        if exit_ is not None:
            self.timeline.append(
                TimelineEntry(
                    kind=exit_.status, at=exit_.at, state=record.position, code=exit_.code, reason=exit_.reason
                )
            )
        if record.position:
            self.stand(record.position)
        for mail in held:
            for entry in _held_entries(mail):
                self.timeline.append(entry)
        if running is not None and running.stopped:
            self.timeline.append(
                TimelineEntry(kind="stopped", at=running.last_commit, state=record.position, reason=running.failure)
            )
        _in_time_order(self.order)
        self.timeline.sort(key=lambda e: e.seq)


def _step_entry(step: TrailStep, delivered: bool, at: str | None) -> TimelineEntry:
    """The timeline entry of one trail step (``delivered``: a trigger step that resumed a park)."""
    kind = step.kind
    if kind == "trigger":
        return TimelineEntry(kind="delivery" if delivered else "turn", at=at, state=step.to, trigger=step.reason)
    if kind == "human":
        return TimelineEntry(kind="decision", at=at, state=step.to, comment=step.reason)
    if kind in ("agent", "reset", "on_error"):
        return TimelineEntry(kind=_MOVE_KIND[kind], at=at, state=step.to, reason=step.reason)
    if kind == "hook":
        return TimelineEntry(
            kind="hook", at=at, state=step.state or step.to, reason=step.reason, phase=step.phase, verdict=step.verdict
        )
    return TimelineEntry(kind="sub-workflow", at=at, state=step.to, trigger=step.workflow, reason=step.status)


_MOVE_KIND: dict[str, EntryKind] = {"agent": "advance", "reset": "reset", "on_error": "on_error"}
"""Timeline kinds of the steps that move the session with a reason."""


def _held_entries(mail: HeldMail) -> list[TimelineEntry]:
    """A held mail's ``quarantined`` entry, and its ``released`` entry once released."""
    entries = [
        TimelineEntry(
            kind="quarantined",
            at=mail.quarantined_at,
            reason=mail.reason,
            sender=mail.sender,
            delivery_id=mail.delivery_id,
        )
    ]
    if mail.released_at:
        entries.append(
            TimelineEntry(kind="released", at=mail.released_at, sender=mail.sender, delivery_id=mail.delivery_id)
        )
    return entries


def _graph_states(states: Mapping[str, Any], path: list[str], current: str | None) -> list[GraphState]:
    """The workflow's states, marked ``visited`` (on the path) and ``current``."""
    return [
        GraphState(
            slug=st.slug,
            type=st.type,
            terminal=st.is_terminal,
            visited=st.slug in path,
            current=st.slug == current,
        )
        for st in states.values()
    ]


def _graph_edges(states: Mapping[str, Any], taken: set[tuple[str, str]]) -> list[GraphEdge]:
    """The workflow's transitions, marked ``taken`` when the session moved along them."""
    return [
        GraphEdge(source=st.slug, target=t.to, type=t.type, taken=(st.slug, t.to) in taken)
        for st in states.values()
        for t in st.transitions
    ]


def _in_time_order(order: list[Any]) -> None:
    """Sort the story's entries by time, stably, and number them (``seq``) in that order.

    An entry without a time sorts with the entry before it. ISO-8601 UTC instants of one format
    compare as strings.
    """
    last = ""
    keyed = []
    for n, item in enumerate(order):
        last = item.at or last
        keyed.append((last, n, item))
    keyed.sort(key=lambda k: (k[0], k[1]))
    order[:] = [item for _at, _n, item in keyed]
    for n, item in enumerate(order):
        item.seq = n + 1


def _running(record: Checkpoint) -> Running | None:
    if record.status != SessionStatus.RUNNING:
        return None
    lease = record.lease
    return Running(
        last_commit=record.updated_at,
        lease_owner=lease.owner if lease is not None else None,
        lease_until=lease.expires_at if lease is not None else None,
        failure=record.pending_failure,
    )


def _wait(record: Checkpoint, workflow: Any | None) -> Wait | None:
    if record.status == SessionStatus.AWAITING_INPUT and record.pending_input is not None:
        p = record.pending_input
        return Wait(
            channel="input",
            state=p.state,
            since=p.parked_at,
            reason=p.reason,
            resume_at=p.resume_at,
            triggers=workflow.declared_triggers() if workflow is not None else [],
        )
    if record.status == SessionStatus.AWAITING_DECISION and record.pending_decision is not None:
        d = record.pending_decision
        return Wait(
            channel="decision",
            state=d.state,
            since=d.created_at,
            transitions=[t.model_dump(exclude_none=True) for t in d.transitions],
            evidence=list(d.evidence or []),
        )
    return None


def _pin_current_park(timeline: list[TimelineEntry], wait: Wait) -> None:
    """Give the latest park its record's exact time and details, or add it when the trail had none."""
    for entry in reversed(timeline):
        if entry.kind == "park" and entry.channel == wait.channel:
            entry.at, entry.state = wait.since, wait.state
            entry.reason, entry.resume_at = wait.reason or entry.reason, wait.resume_at
            return
        if entry.kind in ("delivery", "decision", "turn"):
            break
    timeline.append(
        TimelineEntry(
            kind="park",
            at=wait.since,
            state=wait.state,
            channel=wait.channel,
            reason=wait.reason,
            resume_at=wait.resume_at,
        )
    )


def _exit(record: Checkpoint) -> Exit | None:
    if record.status == SessionStatus.COMPLETED:
        return Exit(status="completed", at=record.updated_at)
    if record.status == SessionStatus.FAILED:
        raised = record.raised
        return Exit(
            status="failed",
            at=record.updated_at,
            code=raised.code if raised else None,
            reason=raised.reason if raised else None,
        )
    if record.status == SessionStatus.REJECTED:
        return Exit(status="rejected", at=record.updated_at, reason=record.rejected)
    return None


def compact(value: Any, limit: int = 200) -> str:
    """A JSON value on one line, cut to ``limit`` characters with ``…``."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
