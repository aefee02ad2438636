"""Tool definitions: the control tools' schemas and host tools.

Rule source: BEHAVIOUR.md §2.3 (governance), §5 (control tools). A host tool is any callable
taking keyword arguments and returning something JSON-able (or a string). Names ``archmax_*``
are reserved for the runtime.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from archmax.errors import ReservedToolNameError
from archmax.models.base import ToolSpec

_STR = {"type": "string"}

CONTROL_TOOL_SPECS: dict[str, ToolSpec] = {
    "archmax_advance": ToolSpec.model_construct(
        name="archmax_advance",
        description="Move the session along one of the current state's transitions.",
        parameters={
            "type": "object",
            "properties": {
                "to": {**_STR, "description": "The target state slug."},
                "reason": {**_STR, "description": "Why the state's work is done."},
                "evidence": {"type": "array", "items": _STR, "description": "Session file paths (human targets only)."},
            },
            "required": ["to", "reason"],
        },
    ),
    "archmax_wait": ToolSpec.model_construct(
        name="archmax_wait",
        description="Park the session until an event (a reply, a webhook, a timer) is delivered; "
        "you continue in this same state when it arrives.",
        parameters={
            "type": "object",
            "properties": {
                "reason": {**_STR, "description": "What you are waiting for."},
                "until": {**_STR, "description": "Optional wake-up: 30m, 2h, 1d or an ISO-8601 instant."},
                "timeout": {
                    **_STR,
                    "description": "Optional deadline: 30m, 2h or 3d. If nothing is delivered by then, "
                    "you continue here with the event 'timeout'.",
                },
            },
            "required": ["reason"],
        },
    ),
    "archmax_raise": ToolSpec.model_construct(
        name="archmax_raise",
        description="Declare that the work could not be done. Ends the session as failed. Call it alone.",
        parameters={
            "type": "object",
            "properties": {
                "code": {**_STR, "description": "A short token such as orders-unavailable."},
                "reason": {**_STR, "description": "What went wrong."},
            },
            "required": ["code", "reason"],
        },
    ),
    "archmax_reset": ToolSpec.model_construct(
        name="archmax_reset",
        description="Return to the state the conversation began in (keeps transcript, variables, files).",
        parameters={"type": "object", "properties": {"reason": _STR}, "required": ["reason"]},
    ),
    "archmax_set_variables": ToolSpec.model_construct(
        name="archmax_set_variables",
        description="Set session variables (atomic). Locked variables cannot be changed.",
        parameters={
            "type": "object",
            "properties": {"variables": {"type": "object"}, "lock": {"type": "boolean"}},
            "required": ["variables"],
        },
    ),
    "archmax_get_variables": ToolSpec.model_construct(
        name="archmax_get_variables",
        description="Read session variables: all of them, one by name, or a path inside one.",
        parameters={"type": "object", "properties": {"name": _STR, "path": _STR}},
    ),
}


@dataclass(frozen=True)
class HostTool:
    """A tool the host registers at assembly.

    Attributes:
        name: The tool's name (not ``archmax_*``).
        fn: Called with the call's arguments as keyword arguments.
        description: Shown to the model.
        parameters: JSON Schema of the arguments.
    """

    name: str
    fn: Callable[..., Any]
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    @property
    def spec(self) -> ToolSpec:
        """The definition the model is offered: name, description (the name when blank) and JSON Schema (§2.3)."""
        return ToolSpec(name=self.name, description=self.description or self.name, parameters=dict(self.parameters))


def _schema_of(fn: Callable[..., Any]) -> dict[str, Any]:
    types = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        props[name] = {"type": types[param.annotation]} if param.annotation in types else {}
        if param.default is param.empty:
            required.append(name)
    return {"type": "object", "properties": props, "required": required}


def host_tools_from(tools: Iterable[Any] | Mapping[str, Any] | None) -> dict[str, HostTool]:
    """Normalise ``create_agent(tools=...)``: HostTools, plain callables, or a name → callable mapping.

    Raises:
        ReservedToolNameError: a tool named ``archmax_*`` (§2.3).
    """
    if tools is None:
        return {}
    items: list[HostTool] = []
    if isinstance(tools, Mapping):
        for name, fn in tools.items():
            items.append(
                fn if isinstance(fn, HostTool) else HostTool(name, fn, inspect.getdoc(fn) or "", _schema_of(fn))
            )
    else:
        for tool in tools:
            if isinstance(tool, HostTool):
                items.append(tool)
            else:
                fn = cast(Callable[..., Any], tool)  # TOOLS entries were checked callable when loaded
                items.append(HostTool(fn.__name__, fn, inspect.getdoc(fn) or "", _schema_of(fn)))
    out: dict[str, HostTool] = {}
    for tool in items:
        if tool.name.startswith("archmax_"):
            raise ReservedToolNameError(tool.name)
        out[tool.name] = tool
    return out
