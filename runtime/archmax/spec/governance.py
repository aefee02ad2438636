"""Which tools a state offers: control tools, granted host tools, minus removals.

Rule source: BEHAVIOUR.md §2.3. Control tools are offered in every state (``archmax_advance``
only in non-terminal ones). Host tools are closed by default: a host tool is offered where root
``tools.allow_always`` or the state's ``tools.allow`` grants it. Root ``tools.forbid_always``
merged with ``policy.forbid_tools`` removes a name from every state, control tools included; a
state's ``tools.forbid`` removes it there; forbid beats allow; ``*`` in a forbid list removes
every tool. ``archmax_note`` is reserved and never offered.

Only name-level denials remove a tool here. A denial carrying argument guards (``args`` or
``paths``) leaves the tool offered: it refuses matching calls, not the tool.
"""

from __future__ import annotations

from collections.abc import Iterable

CONTROL_TOOLS: tuple[str, ...] = (
    "archmax_wait",
    "archmax_raise",
    "archmax_reset",
    "archmax_set_variables",
    "archmax_get_variables",
    "archmax_advance",
)
"""The runtime's control tools, in the order they are offered (§2.3, §5)."""

ADVANCE_TOOL = "archmax_advance"
NOTE_TOOL = "archmax_note"
"""Reserved for runtime notes (§7): never offered, ``blocked`` if called."""
RESERVED_PREFIX = "archmax_"
SUBWORKFLOW_PREFIX = "archmax_workflow_"
WILDCARD = "*"


def offered_tool_names(
    *,
    terminal: bool,
    granted: Iterable[str],
    removed: Iterable[str],
    host_tools: Iterable[str],
) -> list[str]:
    """The tool names one state offers the model (§2.3).

    Args:
        terminal: Whether the state has no outgoing transitions (then ``archmax_advance`` is absent).
        granted: Host tool names granted by root ``allow_always`` and the state's ``allow``.
        removed: Names removed by root ``forbid_always``/``policy.forbid_tools`` and the state's
            ``forbid`` (bare denials only); ``"*"`` removes everything.
        host_tools: The host's registered tool names, in registration order.

    Returns:
        Control tools in :data:`CONTROL_TOOLS` order, then granted host tools in ``host_tools``
        order, then granted sub-workflow tools ``archmax_workflow_<slug>`` in grant order (§5.10),
        each at most once. Other ``archmax_*`` host names are never offered: the runtime owns that
        prefix (``create_agent`` refuses such tools with ``ReservedToolNameError``).
    """
    removed_set = set(removed)
    if WILDCARD in removed_set:
        return []
    granted_set = set(granted)
    names = [name for name in CONTROL_TOOLS if name not in removed_set and not (terminal and name == ADVANCE_TOOL)]
    for name in host_tools:
        if name.startswith(RESERVED_PREFIX) or name in names:
            continue
        if name in granted_set and name not in removed_set:
            names.append(name)
    for name in granted:
        if is_subworkflow_tool(name) and name not in removed_set and name not in names:
            names.append(name)
    return names


def is_subworkflow_tool(name: str) -> bool:
    """Whether ``name`` is a sub-workflow tool ``archmax_workflow_<slug>`` with a non-empty slug (§5.10)."""
    return name.startswith(SUBWORKFLOW_PREFIX) and len(name) > len(SUBWORKFLOW_PREFIX)
