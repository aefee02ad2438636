"""``mocks:`` as host tools: each call is answered by the first mock whose ``whenInput`` matches.

Rule source: BEHAVIOUR.md §10.1 (``mocks``: strict ``{tool, whenInput?, result}``; without
``whenInput`` a mock matches every call; mocks apply on every action step).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from archmax.cases.matching import partial_match
from archmax.cases.schema import Mock
from archmax.engine.tools import HostTool, host_tools_from
from archmax.spec.governance import SUBWORKFLOW_PREFIX


class NoMockMatchesError(LookupError):
    """A call to a mocked tool that no mock answers (the agent reads it as the tool's ``error`` result)."""


def mocked_tools(mocks: Iterable[Mock], real: Iterable[Any] | Mapping[str, Any] | None = None) -> dict[str, HostTool]:
    """The host tools a case registers: the real ones, with mocked names answered by their mocks.

    Args:
        mocks: The case's mocks, in file order (the first match wins).
        real: Host tools given to ``run_tests(tools=...)``; a call no mock matches falls through
            to the real tool of that name, if there is one.

    Returns:
        Tool name → :class:`HostTool`. ``archmax_workflow_<slug>`` mocks are not host tools and are
        left out (see :func:`subworkflow_mocks`).
    """
    tools = host_tools_from(real)
    by_name: dict[str, list[Mock]] = {}
    for mock in mocks:
        if not mock.tool.startswith(SUBWORKFLOW_PREFIX):
            by_name.setdefault(mock.tool, []).append(mock)
    for name, group in by_name.items():
        fallback = tools.get(name)
        tools[name] = HostTool(
            name=name,
            fn=_answer(name, group, fallback),
            description=fallback.description if fallback else f"{name} (mocked by the test case)",
            parameters=dict(fallback.parameters) if fallback else {"type": "object", "properties": {}},
        )
    return tools


def _answer(name: str, group: list[Mock], fallback: HostTool | None) -> Any:
    def call(**args: Any) -> Any:
        for mock in group:
            if mock.when_input is None or partial_match(mock.when_input, args):
                return mock.result
        if fallback is not None:
            return fallback.fn(**args)
        raise NoMockMatchesError(
            f"no mock of '{name}' matches the input {json.dumps(args, sort_keys=True, default=str)}"
        )

    return call


def subworkflow_mocks(mocks: Iterable[Mock]) -> dict[str, Any]:
    """The case's ``archmax_workflow_<slug>`` mocks: tool name → ``answer(args)`` (§10.1).

    A matching mock answers the call instead of running the child session; ``answer`` raises
    :class:`NoMockMatchesError` when none matches, and the real sub-workflow runs.
    """
    by_name: dict[str, list[Mock]] = {}
    for mock in mocks:
        if mock.tool.startswith(SUBWORKFLOW_PREFIX):
            by_name.setdefault(mock.tool, []).append(mock)
    return {name: _by_mapping(_answer(name, group, None)) for name, group in by_name.items()}


def _by_mapping(answer: Any) -> Any:
    return lambda args: answer(**args)
