"""Validation of tool-governance lists: state and root ``tools`` lists, and ``policy.forbid_tools``.

The lists are ``tools.{allow,forbid}`` (per state), ``tools.{allow_always,forbid_always}`` (root) and
``policy.forbid_tools`` (root).

Rule source: BEHAVIOUR.md §2.3. An entry is a tool name or a strict mapping
``{tool, args?, paths?, connection?, source?}``; ``*`` is accepted only in forbid lists.
"""

from __future__ import annotations

from typing import Any

from archmax.spec.checks import NON_BLANK, Collector, at, is_non_blank, optional_text, unknown_keys
from archmax.spec.governance import WILDCARD
from archmax.spec.model import ToolRule

_RULE_KEYS = ("tool", "args", "paths", "connection", "source")


def tool_rules(value: Any, path: str, out: Collector, *, forbid: bool) -> list[ToolRule]:
    """Parse one governance list.

    Args:
        value: The list as written (``null`` is an empty list).
        path: Its dotted path (``states.a.tools.allow``).
        out: Where problems go.
        forbid: Whether this is a forbid list (the only place ``*`` is accepted).

    Returns:
        The well-formed entries as :class:`ToolRule` (bad ones are reported and dropped).
    """
    if value is None:
        return []
    if not isinstance(value, list):
        out.error(path, "must be a list of tool names or {tool, args?, paths?} entries")
        return []
    rules: list[ToolRule] = []
    for index, entry in enumerate(value):
        rule = _rule(entry, at(path, index), out)
        if rule is None:
            continue
        if rule.tool == WILDCARD and not forbid:
            out.error(at(path, index), "'*' is accepted only in forbid lists")
            continue
        rules.append(rule)
    return rules


def _rule(entry: Any, path: str, out: Collector) -> ToolRule | None:
    if isinstance(entry, str):
        if not is_non_blank(entry):
            out.error(path, "must be a non-blank tool name")
            return None
        return ToolRule.model_construct(tool=entry.strip())
    if not isinstance(entry, dict):
        out.error(path, "must be a tool name or a {tool, args?, paths?} mapping")
        return None
    before = len(out.errors)
    unknown_keys(entry, _RULE_KEYS, path, out)
    tool = entry.get("tool")
    if not is_non_blank(tool):
        out.error(at(path, "tool"), NON_BLANK if "tool" in entry else "is required")
    args = _guards(entry.get("args"), at(path, "args"), out)
    paths = entry.get("paths")
    if paths is not None and not (isinstance(paths, list) and all(is_non_blank(p) for p in paths)):
        out.error(at(path, "paths"), "must be a list of non-blank globs")
        paths = None
    connection = optional_text(entry, "connection", path, out, non_blank=True)
    source = optional_text(entry, "source", path, out)
    if len(out.errors) != before or not isinstance(tool, str):  # a missing or blank tool was reported above
        return None
    return ToolRule.model_construct(tool=tool.strip(), args=args, paths=paths, connection=connection, source=source)


def _guards(value: Any, path: str, out: Collector) -> dict[str, list[str]] | None:
    """``args: {name: glob | [globs]}`` → ``{name: [globs]}``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        out.error(path, "must map argument names to globs")
        return None
    guards: dict[str, list[str]] = {}
    for name, globs in value.items():
        items = [globs] if isinstance(globs, str) else globs
        if not isinstance(name, str) or not isinstance(items, list) or not all(isinstance(g, str) for g in items):
            out.error(at(path, name), "must be a glob or a list of globs")
            continue
        guards[name] = list(items)
    return guards
