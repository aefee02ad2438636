"""Argument guards on ``tools`` entries: ``{tool, args: {name: [globs]}, paths: [globs]}``.

Rule source: BEHAVIOUR.md §2.3 (forbid beats allow) and the seed ("A downstream tools.allow
guard can then bind to them": delivered values are locked variables a guard may reference).

* A guard maps an argument name to globs; ``paths`` is shorthand for a ``file_path`` guard. A
  call matches an entry when every guarded argument is a string matching one of its globs.
* Globs: ``**`` spans ``/``, ``*`` and ``?`` stay inside one segment; dot-prefixed segments
  match like any other. ``${{name.path}}`` in a glob is replaced by the variable's value, matched
  literally, so a value can never widen the guard it lands in.
* Allow: the state's entries for the tool, if it has any, else ``allow_always``'s (narrower
  wins). An unguarded entry permits every call; guarded ones permit matching calls only.
* Forbid: any guarded denial (root or state; ``*`` names every tool) matching the call blocks
  it. A call without a guarded argument matches neither. Fail-closed: a guard that cannot be
  evaluated (a non-string argument, an unresolvable reference) counts as a match for a denial
  and as no match for a grant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from archmax.session.paths import UNRESOLVED, resolve_segments
from archmax.spec.governance import WILDCARD

if TYPE_CHECKING:  # the model imports this module to check its rules
    from archmax.spec.model import ToolRule

_REFERENCE = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def _value_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return None


def _glob_regex(glob: str, variables: Mapping[str, Any]) -> re.Pattern[str] | None:
    """Compile a guard glob; ``None`` when a ``${{...}}`` reference does not resolve."""
    parts: list[str] = []
    position = 0
    for match in _REFERENCE.finditer(glob):
        parts.append(_wildcards(glob[position : match.start()]))
        value = resolve_segments(variables, match.group(1).split("."))
        text = None if value is UNRESOLVED else _value_text(value)
        if text is None:
            return None
        parts.append(re.escape(text))
        position = match.end()
    parts.append(_wildcards(glob[position:]))
    return re.compile("".join(parts), re.DOTALL)


def _wildcards(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        if text.startswith("**", index):
            out.append(".*")
            index += 2
        elif text[index] == "*":
            out.append("[^/]*")
            index += 1
        elif text[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(text[index]))
            index += 1
    return "".join(out)


def _guards(rule: ToolRule) -> dict[str, list[str]]:
    guards = dict(rule.args or {})
    if rule.paths is not None:
        guards["file_path"] = list(guards.get("file_path", [])) + list(rule.paths)
    return guards


def _matches(rule: ToolRule, args: Mapping[str, Any], variables: Mapping[str, Any], *, fail: bool) -> bool:
    """Whether the call's arguments match every guard of ``rule``; ``fail`` is the answer when unsure."""
    for name, globs in _guards(rule).items():
        if name not in args:
            return False  # a call without the argument is outside what the guard names
        value = args[name]
        if not isinstance(value, str):
            return fail
        compiled = [_glob_regex(glob, variables) for glob in globs]
        if any(pattern is None for pattern in compiled):
            return fail
        if not any(pattern.fullmatch(value) for pattern in compiled if pattern is not None):
            return False
    return True


def guard_refusal(
    *,
    tool: str,
    args: Mapping[str, Any],
    variables: Mapping[str, Any],
    state_allow: Iterable[ToolRule],
    allow_always: Iterable[ToolRule],
    forbid: Iterable[ToolRule],
) -> str | None:
    """Why a call is refused by argument guards, or ``None`` when the guards let it through.

    Call this only for a tool the state offers (see ``Workflow.offered_tools``); name-level
    governance is not repeated here.

    Args:
        tool: The tool's name.
        args: The call's arguments after ``${{...}}`` substitution.
        variables: Plain variable values (name → JSON value) for references inside globs.
        state_allow: The state's ``tools.allow`` entries.
        allow_always: Root ``tools.allow_always`` entries.
        forbid: Root and state denials (guarded ones matter here).

    Returns:
        A short reason (for the ``blocked`` result), or ``None``.
    """
    for rule in forbid:
        if rule.guarded and rule.tool in (tool, WILDCARD) and _matches(rule, args, variables, fail=True):
            return f"'{tool}' is forbidden for these arguments in this state"
    local = [r for r in state_allow if r.tool == tool]
    grants = local or [r for r in allow_always if r.tool == tool]
    if not grants or any(not r.guarded for r in grants):
        return None
    if any(_matches(r, args, variables, fail=False) for r in grants):
        return None
    return f"'{tool}' is allowed here only for arguments matching its guards"
