"""Validation of ``states:``: each state's keys, transitions, budget, ``on_error``; the cross-state trigger rules.

Rule source: BEHAVIOUR.md §2.1 (state keys, transitions, human states), §2.2 (one id per state,
a start state must exist), §2.3 (budget, ``on_error``, tool lists), §2.4 (hooks), §2.5 (fixed
messages).
"""

from __future__ import annotations

from typing import Any

from archmax.session.until import TIMEOUT_HINT, UntilError, duration_ms
from archmax.spec.check_hooks import hooks
from archmax.spec.check_tools import tool_rules
from archmax.spec.check_triggers import triggers_block
from archmax.spec.checks import (
    NON_BLANK,
    STATE_SLUG,
    VARIABLE_NAME,
    Collector,
    at,
    is_non_blank,
    optional_text,
    positive_int,
    string_list,
    unknown_keys,
)
from archmax.spec.model import Budget, State, ToolRule, Transition

STATE_KEYS = (
    "type",
    "title",
    "instructions",
    "summary",
    "evidence",
    "approvers",
    "triggers",
    "before",
    "after",
    "budget",
    "model",
    "on_error",
    "tools",
    "skills",
    "mounts",
    "requires",
    "metadata",
    "transitions",
    "timeout",
)
_TRANSITION_KEYS = ("to", "description", "type", "on_timeout")
_TRANSITION_TYPES = ("approve", "reject", "refine", "none")
_BUDGET_KEYS = {"maxTurns": "max_turns", "maxParks": "max_parks", "timeoutMs": "timeout_ms"}
_STATE_TOOL_KEYS = ("allow", "forbid")

NO_START = "Workflow has no start state: no state declares a trigger"


def states_block(value: Any, out: Collector) -> dict[str, State]:
    """Parse the root ``states:`` mapping.

    Args:
        value: As written.
        out: Where problems go.

    Returns:
        Slug → :class:`State` in document order for the states that parsed (the load fails
        anyway when anything was reported).
    """
    if not isinstance(value, dict) or not value:
        out.error("states", "must be a non-empty mapping of state slug to state")
        return {}
    declared = {slug for slug in value if isinstance(slug, str)}
    states: dict[str, State] = {}
    for slug, body in value.items():
        state = _state(slug, body, declared, out)
        if state is not None:
            states[slug] = state
    _trigger_owners(value, out)
    return states


def _trigger_owners(states: dict[Any, Any], out: Collector) -> None:
    """One id, one entry state; some state must declare a trigger (§2.2).

    Read from the document as written, so a state with unrelated errors still takes part.
    """
    owners: dict[str, Any] = {}
    written = False
    for slug, body in states.items():
        triggers = body.get("triggers") if isinstance(body, dict) else None
        if not isinstance(triggers, dict):
            continue
        written = written or bool(triggers)
        for trigger in triggers:
            if not is_non_blank(trigger):
                continue
            if trigger in owners:
                out.error(
                    at("states", slug, "triggers", trigger),
                    f"Trigger '{trigger}' is declared by both '{owners[trigger]}' and '{slug}'",
                )
            else:
                owners[trigger] = slug
    if not written:
        out.error("states", NO_START)


def _state(slug: Any, body: Any, declared: set[str], out: Collector) -> State | None:
    path = at("states", slug)
    if not isinstance(slug, str) or not STATE_SLUG.fullmatch(slug):
        out.error(path, "a state slug must match ^[a-z0-9]+(-[a-z0-9]+)*$")
        return None
    if body is None:
        body = {}
    if not isinstance(body, dict):
        out.error(path, "must be a mapping (or null for an empty terminal state)")
        return None
    before = len(out.errors)
    unknown_keys(body, STATE_KEYS, path, out)
    type_ = body.get("type") or "agent"
    if type_ not in ("agent", "human"):
        out.error(at(path, "type"), "must be 'agent' or 'human'")
    edge_errors = len(out.errors)
    transitions = _transitions(slug, body.get("transitions"), declared, path, out)
    # A human state whose edges are malformed was reported there; don't pile a second error on.
    if type_ == "human" and len(out.errors) == edge_errors and not any(t.to != slug for t in transitions):
        out.error(at(path, "transitions"), "a human state needs at least one transition to another state")
    on_error = body.get("on_error")
    if on_error is not None:
        if not isinstance(on_error, str):
            out.error(at(path, "on_error"), "must name a declared state")
        elif on_error not in declared:
            out.error(at(path, "on_error"), f"State '{slug}' on_error routes to undefined state '{on_error}'")
    allow, forbid = _state_tools(body.get("tools"), at(path, "tools"), out)
    timeout = _timeout(slug, type_, body, transitions, path, out)
    state: dict[str, Any] = {
        "slug": slug,
        "type": type_,
        "title": optional_text(body, "title", path, out),
        "instructions": optional_text(body, "instructions", path, out),
        "summary": optional_text(body, "summary", path, out),
        "evidence": _evidence(body.get("evidence"), at(path, "evidence"), out),
        "approvers": string_list(body.get("approvers"), at(path, "approvers"), out),
        "triggers": triggers_block(body.get("triggers"), at(path, "triggers"), out),
        "before": hooks(body.get("before"), at(path, "before"), out, phase="before"),
        "after": hooks(body.get("after"), at(path, "after"), out, phase="after"),
        "budget": _budget(body.get("budget"), at(path, "budget"), out),
        "model": optional_text(body, "model", path, out, non_blank=True),
        "on_error": on_error if isinstance(on_error, str) else None,
        "allow_rules": allow,
        "forbid_rules": forbid,
        "requires": _requires(body.get("requires"), at(path, "requires"), out),
        "transitions": transitions,
        "timeout": timeout,
    }
    if len(out.errors) != before:
        return None
    return State.model_construct(**state)


def _transitions(slug: str, value: Any, declared: set[str], path: str, out: Collector) -> list[Transition]:
    path = at(path, "transitions")
    if value is None:
        return []
    if not isinstance(value, list):
        out.error(path, "must be a list of {to, description, type?}")
        return []
    edges: list[Transition] = []
    for index, edge in enumerate(value):
        edge_path = at(path, index)
        if not isinstance(edge, dict):
            out.error(edge_path, "must be a mapping {to, description, type?}")
            continue
        before = len(out.errors)
        unknown_keys(edge, _TRANSITION_KEYS, edge_path, out)
        to = edge.get("to")
        if to is None:
            out.error(at(edge_path, "to"), "is required")
        elif not isinstance(to, str) or to not in declared:
            out.error(at(edge_path, "to"), f"State '{slug}' transitions to undefined state '{to}'")
        if not is_non_blank(edge.get("description")):
            out.error(at(edge_path, "description"), NON_BLANK)
        type_ = edge.get("type")
        if type_ is not None and type_ not in _TRANSITION_TYPES:
            out.error(at(edge_path, "type"), f"must be one of {'|'.join(_TRANSITION_TYPES)}")
        on_timeout = edge.get("on_timeout", False)
        if not isinstance(on_timeout, bool):
            out.error(at(edge_path, "on_timeout"), "must be a boolean")
        if len(out.errors) == before and isinstance(to, str):  # a missing or odd target was reported above
            edges.append(
                Transition.model_construct(
                    to=to, description=edge["description"], type=type_, on_timeout=on_timeout is True
                )
            )
    return edges


def _timeout(
    slug: str, type_: Any, body: dict[str, Any], transitions: list[Transition], path: str, out: Collector
) -> str | None:
    """A human state's ``timeout`` and its ``on_timeout`` edge (BEHAVIOUR.md §5.11).

    ``timeout`` is a §5.3 duration, exactly, and only a human state takes one (an agent's wait
    takes ``archmax_wait``'s own ``timeout``). At most one edge is marked ``on_timeout: true``; it
    leads to another state, and it needs the state's ``timeout``.
    """
    value = body.get("timeout")
    if "timeout" in body:
        if type_ != "human":
            out.error(
                at(path, "timeout"), "only a human state takes a timeout: an agent waits with archmax_wait's timeout"
            )
            value = None
        else:
            try:
                duration_ms(value)
            except UntilError as exc:
                out.error(at(path, "timeout"), f"{exc} {TIMEOUT_HINT}")
                value = None
    marked = [
        i
        for i, edge in enumerate(body.get("transitions") or [])
        if isinstance(edge, dict) and edge.get("on_timeout") is True
    ]
    for n, index in enumerate(marked):
        edge_path = at(path, "transitions", index, "on_timeout")
        if type_ != "human":
            out.error(edge_path, "only a human state's transition can be taken on a timeout")
        elif "timeout" not in body:
            out.error(edge_path, f"State '{slug}' marks a transition on_timeout but declares no timeout")
        elif n > 0:
            out.error(edge_path, f"State '{slug}' marks more than one transition on_timeout")
        elif body["transitions"][index].get("to") == slug:
            out.error(edge_path, "the on_timeout transition must lead to another state")
    return value.strip() if isinstance(value, str) else None


def _budget(value: Any, path: str, out: Collector) -> Budget:
    if value is None:
        return Budget.model_construct()
    if not isinstance(value, dict):
        out.error(path, "must be a mapping {maxTurns?, maxParks?, timeoutMs?}")
        return Budget.model_construct()
    unknown_keys(value, _BUDGET_KEYS, path, out)
    fields: dict[str, Any] = {}  # only the limits given: model_construct fills the defaults of the rest
    for key, field in _BUDGET_KEYS.items():
        if key not in value:
            continue
        if positive_int(value[key]):
            fields[field] = value[key]
        else:
            out.error(at(path, key), "must be a positive integer")
    return Budget.model_construct(**fields)


def _state_tools(value: Any, path: str, out: Collector) -> tuple[list[ToolRule], list[ToolRule]]:
    if value is None:
        return [], []
    if not isinstance(value, dict):
        out.error(path, "must be a mapping {allow?, forbid?}")
        return [], []
    unknown_keys(value, _STATE_TOOL_KEYS, path, out)
    allow = tool_rules(value.get("allow"), at(path, "allow"), out, forbid=False)
    forbid = tool_rules(value.get("forbid"), at(path, "forbid"), out, forbid=True)
    return allow, forbid


def _requires(value: Any, path: str, out: Collector) -> list[str]:
    def valid(name: str) -> str | None:
        if VARIABLE_NAME.fullmatch(name):
            return None
        return f"'{name}' is not a variable name: names match ^[a-z][a-z0-9_]*$"

    return string_list(value, path, out, what="variable names", check=valid)


def _evidence(value: Any, path: str, out: Collector) -> list[str]:
    r"""Workspace-relative paths: no leading ``/`` or ``\``, no ``..`` segment."""

    def valid(item: str) -> str | None:
        if item.startswith(("/", "\\")) or ".." in item.replace("\\", "/").split("/"):
            return "must be a workspace-relative path with no leading '/' and no '..'"
        return None

    return string_list(value, path, out, what="workspace-relative paths", check=valid)
