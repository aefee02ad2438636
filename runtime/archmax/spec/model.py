"""The loaded workflow: frozen value objects the engine reads.

Rule source: BEHAVIOUR.md §2 (root, states, triggers, budgets, governance, hooks) and §9.4
(``spec``/``spec_hash``). Build them with :func:`archmax.spec.load_workflow` or
:func:`archmax.spec.workflow_from_dict`, which validate first; constructing them by hand skips
validation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from archmax.errors import Diagnostic
from archmax.spec.governance import NOTE_TOOL, SUBWORKFLOW_PREFIX, offered_tool_names


class _Value(BaseModel):
    # The loader checks every field itself (each problem a Diagnostic naming its path) and builds
    # these with model_construct, so no schema is built at import or load; one is built only if
    # code validates a value by hand (issue 10, cold import).
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)


class ReturnSpec(_Value):
    """One ``requires``/``returns`` entry of a trigger signature (§2.2)."""

    name: str
    """The variable's name (``^[a-z][a-z0-9_]*$``)."""
    type: str | None = None
    """One of :data:`archmax.spec.value_types.VALUE_TYPES`, or ``None`` (untyped: any value, null included)."""
    description: str | None = None
    """What the variable holds, for whoever supplies or reads it."""


class WebhookSignature(_Value):
    """``signature:`` of a trigger declaration: third parties sign their webhooks with a shared secret (issue 13 item 2).

    A request to ``POST /webhooks/{trigger}`` is accepted only when the header ``header`` holds
    ``sha256=<hex>`` (or bare hex; several comma-separated values allow secret rotation) equal to
    HMAC-SHA256(secret, ``<delivery id>.<timestamp>.<raw body>``) or HMAC-SHA256(secret,
    ``<timestamp>.<raw body>``), and the header ``timestamp_header`` holds Unix seconds within
    ``tolerance_s`` of now. The request is de-duplicated by the ``delivery_header`` value when the
    signature covers it, else by an id derived from the signed string: one signature, one event
    (issue 21 item 2, :mod:`archmax.inbound.webhook`).
    """

    secret: str
    """Where the secret is: ``ssm:<parameter>``, ``secretsmanager:<secret>`` or a bare SSM name (never the secret)."""
    header: str = "X-Archmax-Signature"
    timestamp_header: str = "X-Archmax-Timestamp"
    delivery_header: str = "X-Archmax-Delivery"
    tolerance_s: int = 300
    """Seconds a signed timestamp stays acceptable, either side of now."""


class TriggerDecl(_Value):
    """A trigger's declaration under ``states.<s>.triggers.<id>`` (§2.2). ``null`` gives all defaults."""

    session: str | None = None
    """Raw session-path text (``"triggers.-1.conversationId"``), already checked by the §4.3 parser."""
    message: str | Literal[False] | None = None
    """Host-read path to the firing's words, ``False`` for none, ``None`` when absent."""
    connection: str | None = None
    """Host-read connection slug."""
    description: str | None = None
    """Shown to callers, never to the session's own model."""
    requires: list[ReturnSpec] = Field(default_factory=list)
    """Variables a firing must supply for a turn to open (checked at turn opening, §8)."""
    returns: list[ReturnSpec] = Field(default_factory=list)
    """Variables the session guarantees when a turn completes (§5.8)."""
    signature: WebhookSignature | None = None
    """Signed third-party webhooks (issue 13 item 2); ``None``: the trigger takes no unsigned-but-signed route."""
    mail_auth: str | None = None
    """Mail authentication policy for mail firing this trigger (issue 13 item 1); ``None``: the default."""
    unauthenticated_first_mail: str | None = None
    """What a mail that would open a session and fails ``mail_auth`` gets (issue 21 item 4):
    ``quarantine`` (``None``: the default), ``refuse`` or ``open``."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Unknown declaration keys, kept as written (each produced a load warning)."""


class TriggerRef(_Value):
    """A declared trigger and the state it enters."""

    state: str
    """The entry state's slug."""
    decl: TriggerDecl
    """The declaration."""


class Transition(_Value):
    """One outgoing edge ``{to, description, type?}`` (§2.1)."""

    to: str
    """The target state's slug."""
    description: str
    """When the edge applies (non-blank)."""
    type: Literal["approve", "reject", "refine", "none"] | None = None
    """Shown to the person at a human state."""
    on_timeout: bool = False
    """The edge a human state's ``timeout`` takes when nobody decided in time (BEHAVIOUR.md §5.11)."""


class Budget(_Value):
    """``budget: {maxTurns, maxParks, timeoutMs}`` (§2.3, §5.4); ``None`` means unbounded."""

    max_turns: int | None = None
    """Model calls per state visit."""
    max_parks: int | None = None
    """Successful ``archmax_wait`` parks per state per turn."""
    timeout_ms: int | None = None
    """Milliseconds each model call may take."""


class ToolRule(_Value):
    """One ``tools`` list entry: a bare name, or ``{tool, args?, paths?, connection?, source?}``."""

    tool: str
    """The tool's name; ``"*"`` (forbid lists only) means every tool."""
    args: dict[str, list[str]] | None = None
    """Per-argument glob guards (argument name → globs; may hold ``${{var}}`` references)."""
    paths: list[str] | None = None
    """Shorthand for a ``file_path`` guard."""
    connection: str | None = None
    """Host-read connection slug."""
    source: str | None = None
    """Free-form label, preserved and never read."""

    @property
    def guarded(self) -> bool:
        """True when the entry narrows by arguments (then it governs calls, not the tool's presence)."""
        return self.args is not None or self.paths is not None


class State(_Value):
    """One state of the machine (§2.1)."""

    slug: str
    """The state's key (``^[a-z0-9]+(-[a-z0-9]+)*$``)."""
    type: Literal["agent", "human"] = "agent"
    """``agent`` (default) or ``human``."""
    title: str | None = None
    instructions: str | None = None
    summary: str | None = None
    evidence: list[str] = Field(default_factory=list)
    """Baseline paths every decision record of a human state shows."""
    approvers: list[str] = Field(default_factory=list)
    """Informational (shown by the CLI; ``decide`` does not check it)."""
    triggers: dict[str, TriggerDecl] = Field(default_factory=dict)
    """Triggers entering this state, document order."""
    before: list[dict[str, Any]] = Field(default_factory=list)
    """``before`` hooks as written, one mapping per hook (a single hook becomes a one-item list)."""
    after: list[dict[str, Any]] = Field(default_factory=list)
    """``after`` hooks as written, one mapping per hook."""
    budget: Budget = Field(default_factory=Budget)
    model: str | None = None
    """Model id for this state's calls."""
    on_error: str | None = None
    """Where turn failures route (a declared state)."""
    allow_rules: list[ToolRule] = Field(default_factory=list)
    """``tools.allow`` entries as parsed."""
    forbid_rules: list[ToolRule] = Field(default_factory=list)
    """``tools.forbid`` entries as parsed."""
    requires: list[str] = Field(default_factory=list)
    """Variables that must be set before ``archmax_advance`` may leave (§5.1)."""
    transitions: list[Transition] = Field(default_factory=list)
    timeout: str | None = None
    """A human state's deadline, a §5.3 duration as written (``"3d"``), counted from the park (§5.11)."""

    @property
    def timeout_transition(self) -> Transition | None:
        """The edge marked ``on_timeout: true``, or ``None`` (then a timeout fails the turn, §5.11)."""
        return next((t for t in self.transitions if t.on_timeout), None)

    @property
    def is_terminal(self) -> bool:
        """A state with no outgoing transitions (§1)."""
        return not self.transitions

    @property
    def tools_allow(self) -> list[str]:
        """Tool names this state's ``tools.allow`` grants (guarded entries included)."""
        return [rule.tool for rule in self.allow_rules]

    @property
    def tools_forbid(self) -> list[str]:
        """Tool names this state's ``tools.forbid`` removes outright (bare denials; ``*`` = all)."""
        return [rule.tool for rule in self.forbid_rules if not rule.guarded]


UNDECLARED_TRIGGERS = ("timer", "timeout", "manual")
"""Triggers a delivery may name that no workflow declares: the sweep's wake-ups and ``manual``."""


class Workflow(_Value):
    """A validated workflow (§2), with its stripped spec and hash (§9.4)."""

    slug: str
    """The ``workflows/<slug>/`` folder name."""
    root: Path | None = None
    """The workflow folder (hooks resolve under ``root/hooks``); ``None`` for an in-memory spec."""
    title: str | None = None
    instructions: str | None = None
    disabled: bool = False
    """``True`` refuses new turns; resumes still work (§2.1)."""
    states: dict[str, State]
    """Every state, in document order."""
    allow_always: list[ToolRule] = Field(default_factory=list)
    """Root ``tools.allow_always``."""
    forbid_always: list[ToolRule] = Field(default_factory=list)
    """Root ``tools.forbid_always`` merged with ``policy.forbid_tools`` (§2.3)."""
    hook_kinds: list[str] = Field(default_factory=list)
    """Custom hook kinds declared in root ``extensions.hooks`` (§2.4); each needs an executor at assembly."""
    spec: dict[str, Any]
    """The loaded document with ``metadata`` stripped (§9.4); JSON-able."""
    spec_hash: str
    """First 32 hex characters of the sha256 of ``spec`` as canonical JSON (§9.4)."""
    warnings: list[Diagnostic] = Field(default_factory=list)
    """Load warnings (never raised)."""

    # ------------------------------------------------------------------ triggers

    def triggers(self) -> dict[str, TriggerRef]:
        """Every declared trigger id → :class:`TriggerRef`, in document order (§2.2)."""
        return {
            trigger: TriggerRef.model_construct(state=state.slug, decl=decl)
            for state in self.states.values()
            for trigger, decl in state.triggers.items()
        }

    def declared_triggers(self) -> list[str]:
        """Declared trigger ids in document order (an undeclared ``manual`` is not listed)."""
        return list(self.triggers())

    def near_miss_trigger(self, trigger: str) -> str | None:
        """The known trigger ``trigger`` looks like a typo of, or ``None`` (issue 25 item 4).

        A delivery's trigger is never matched against the workflow (§3.5): any event name of the
        host's own is delivered as given. Only an id that is not known but within a typo of a
        declared one (or of ``timer``, ``timeout``, ``manual``: §5.11, §2.2) is taken for a typo by
        the hosts (CLI ``deliver``, ``POST /sessions/{id}/deliveries``), which refuse it.
        """
        import difflib

        known = [*self.declared_triggers(), *(t for t in UNDECLARED_TRIGGERS if t not in self.declared_triggers())]
        if not trigger or trigger.strip() in known:
            return None
        close = difflib.get_close_matches(trigger, known, n=1, cutoff=0.8)
        return close[0] if close else None

    def entry_state_for(self, trigger: str) -> str | None:
        """The state a turn under ``trigger`` opens in (§2.2).

        Returns:
            The declaring state's slug. For an undeclared ``manual``: the first state, in document
            order, declaring any trigger. ``None`` for any other undeclared id.
        """
        ref = self.triggers().get(trigger)
        if ref is not None:
            return ref.state
        if trigger == "manual":
            return next((s.slug for s in self.states.values() if s.triggers), None)
        return None

    def is_declared(self, trigger: str) -> bool:
        """Whether a turn may open under ``trigger``; ``manual`` always has an entry (§2.2)."""
        return self.entry_state_for(trigger) is not None

    def trigger_decl(self, trigger: str) -> TriggerDecl | None:
        """The declaration of ``trigger``; an undeclared ``manual`` gets an empty one, others ``None``."""
        ref = self.triggers().get(trigger)
        if ref is not None:
            return ref.decl
        return TriggerDecl.model_construct() if trigger == "manual" and self.is_declared("manual") else None

    # ------------------------------------------------------------------ governance

    def offered_tools(self, state: str, host_tools: Iterable[str]) -> list[str]:
        """The tool names the model is offered in ``state`` (§2.3).

        Args:
            state: A declared state slug.
            host_tools: The host's tool names, in registration order.

        Returns:
            Control tools (``archmax_advance`` only in a non-terminal state), then the host tools
            granted by root ``allow_always`` or the state's ``allow``, minus every name removed by
            root ``forbid_always``/``policy.forbid_tools`` or the state's ``forbid`` (``*`` removes
            all). Host tools are closed by default: an ungranted host tool is not offered.

        Raises:
            KeyError: ``state`` is not declared.
        """
        node = self.states[state]
        removed = [r.tool for r in self.forbid_always if not r.guarded] + node.tools_forbid
        granted = [r.tool for r in self.allow_always] + node.tools_allow
        return offered_tool_names(terminal=node.is_terminal, granted=granted, removed=removed, host_tools=host_tools)

    def tool_allowed(self, state: str, name: str, host_tools: Iterable[str]) -> bool:
        """Whether a call to ``name`` in ``state`` may run; ``False`` means a ``blocked`` result (§2.3).

        ``archmax_note`` is never allowed. Argument guards are not evaluated here.

        Raises:
            KeyError: ``state`` is not declared.
        """
        if name == NOTE_TOOL:
            return False
        return name in self.offered_tools(state, host_tools)

    def guard_refusal(self, state: str, name: str, args: Mapping[str, Any], variables: Mapping[str, Any]) -> str | None:
        """Why argument guards refuse this call, or ``None`` (see :mod:`archmax.spec.guards`).

        Use after :meth:`tool_allowed`: guarded grants permit only matching calls, guarded
        denials block matching ones, and ``${{var}}`` in a glob binds to the variable's value.

        Args:
            state: A declared state slug.
            name: The tool called.
            args: Its arguments (after ``${{...}}`` substitution).
            variables: Plain variable values, name → JSON value.

        Raises:
            KeyError: ``state`` is not declared.
        """
        from archmax.spec.guards import guard_refusal  # guards import this module

        node = self.states[state]
        return guard_refusal(
            tool=name,
            args=args,
            variables=variables,
            state_allow=node.allow_rules,
            allow_always=self.allow_always,
            forbid=list(self.forbid_always) + list(node.forbid_rules),
        )

    # ------------------------------------------------------------------ features

    def uses_hooks(self) -> bool:
        """Whether any state declares a ``before`` or ``after`` hook (§2.4)."""
        return any(s.before or s.after for s in self.states.values())

    def uses_subworkflows(self) -> bool:
        """Whether any allow list grants an ``archmax_workflow_<slug>`` tool (§5.10)."""
        rules = list(self.allow_always) + [r for s in self.states.values() for r in s.allow_rules]
        return any(r.tool.startswith(SUBWORKFLOW_PREFIX) for r in rules)

    def subworkflows_for(self, state: str) -> list[str]:
        """Slugs of the sub-workflows ``state`` may call (granted ``archmax_workflow_<slug>`` tools)."""
        node = self.states[state]
        names = [r.tool for r in list(self.allow_always) + node.allow_rules]
        seen: list[str] = []
        for name in names:
            slug = name[len(SUBWORKFLOW_PREFIX) :]
            if name.startswith(SUBWORKFLOW_PREFIX) and slug and slug not in seen:
                seen.append(slug)
        return seen
