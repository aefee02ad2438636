"""What a hook sees and answers: :class:`HookContext` and the verdict helpers.

Rule source: BEHAVIOUR.md §2.4. A script hook (``workflows/<slug>/hooks/<f>.py``) defines
``hook(ctx) -> verdict``; a custom kind's executor, given at ``create_agent(hooks={kind: fn})``,
is called ``fn(ctx, config)``. A verdict is ``{"verdict": "ok"}``, ``{"verdict": "correct",
"reason": ...}`` or ``{"verdict": "veto", "reason": ...}``; anything else, a raise or a missing
hook counts as a terminal veto (fail-closed).

Example (``hooks/has_order.py``)::

    from archmax.hooks import correct, ok

    def hook(ctx):
        if "order_id" in ctx.variables:
            return ok()
        return correct("set 'order_id' before finishing")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from archmax.session.records import Message

__all__ = ["HookContext", "HookExecutor", "correct", "ok", "veto"]

Phase = Literal["before", "after"]


def ok() -> dict[str, str]:
    """The verdict that lets the step go on: ``{"verdict": "ok"}`` (§2.4)."""
    return {"verdict": "ok"}


def correct(reason: str) -> dict[str, str]:
    """Ask for a correction: ``{"verdict": "correct", "reason": reason}``; spends one ``max_iterations`` (§2.4)."""
    return {"verdict": "correct", "reason": reason}


def veto(reason: str) -> dict[str, str]:
    """Refuse the step: ``{"verdict": "veto", "reason": reason}`` (§2.4)."""
    return {"verdict": "veto", "reason": reason}


@dataclass(frozen=True)
class HookContext:
    """The read-only view a hook gets (§2.4).

    Attributes:
        session_id: The session the hook runs for.
        workflow: The workflow's slug.
        state: The state whose hook this is.
        phase: ``before`` or ``after``.
        trigger: The current trigger id (a delivered one included), as ``args.trigger`` in the seed.
        variables: name → value, read-only (a copy: writes never reach the session).
        messages: The transcript, notes included and marked (``archmax = {"note": kind}``); copies.
        tools: Names offered to the model in ``state``.
        from_state / to_state / reason: Set for a hook run by ``archmax_advance``, else ``None``.
    """

    session_id: str
    workflow: str
    state: str
    phase: Phase
    trigger: str | None
    variables: Mapping[str, Any]
    messages: tuple[Message, ...]
    tools: tuple[str, ...]
    from_state: str | None = None
    to_state: str | None = None
    reason: str | None = None
    _call_tool: Callable[..., Any] | None = field(default=None, repr=False, compare=False)

    def call_tool(self, name: str, **args: Any) -> Any:
        """Run a host tool on runtime authority (§2.4): state allow/forbid lists do not bind a hook.

        Raises:
            HookToolForbiddenError: ``name`` is removed by the root ``tools.forbid_always`` /
                ``policy.forbid_tools`` lists, or is not a host tool of this agent.
            Exception: whatever the tool raises (the hook then fails closed unless it catches it).
        """
        if self._call_tool is None:
            from archmax.errors import HookToolForbiddenError

            raise HookToolForbiddenError(name, "no host tools are available to this hook")
        return self._call_tool(name, **args)


HookExecutor = Callable[[HookContext, Any], Any]
"""A custom kind's executor: ``fn(ctx, config) -> verdict`` (§2.4)."""
