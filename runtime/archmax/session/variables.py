"""Session variables: names, host writes (locked), the title rules, ``trigger``, ``${{...}}`` references.

Rule source: BEHAVIOUR.md §6 (variables and locking), §3.4 (host names checked before anything
is written), §3.5 (delivery variables seeded like a host's); seed "Delivering the event" (the
delivered values are seeded as locked session variables, title excepted).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from archmax.errors import InvalidSessionPathError, InvalidVariableNameError
from archmax.session.paths import UNRESOLVED, parse_session_path, resolve_path
from archmax.session.records import Variable

VARIABLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
"""A variable name (§6). Use ``fullmatch``: ``$`` alone would accept a trailing newline."""

TITLE_MAX_CHARS = 200

_OPEN = "${{"
_ESCAPED_OPEN = "$${{"
_CLOSE = "}}"


class UnresolvedReferenceError(ValueError):
    """A ``${{name.path}}`` in a tool's arguments does not resolve (§6).

    A recoverable refusal of the tool call (an ``error`` result the agent can act on), not an
    :class:`ArchmaxError`.

    Attributes:
        reference: The reference as written, ``${{...}}`` included.
    """

    def __init__(self, reference: str, detail: str) -> None:
        self.reference = reference
        super().__init__(f"The reference '{reference}' cannot be substituted: {detail}")


def is_variable_name(name: object) -> bool:
    """True when ``name`` is a string matching ``^[a-z][a-z0-9_]*$`` in full (§6)."""
    return isinstance(name, str) and VARIABLE_NAME.fullmatch(name) is not None


def check_host_variables(
    variables: Mapping[str, Any] | None,
    files: Mapping[str, Any] | None,
    *,
    source: str,
    session_id: str | None,
) -> None:
    """Check the names a host supplies, before anything is written (§3.4, §3.5).

    Args:
        variables: Variable name → JSON value, or ``None``.
        files: Variable name → file (placed path becomes the value), or ``None``.
        source: Where the names came from, read after the name in the message
            (``"delivered to session 'chat-42'"``, ``"passed to send"``).
        session_id: The session, for the error's ``.session_id``.

    Raises:
        InvalidVariableNameError: a name fails ``^[a-z][a-z0-9_]*$``, or appears in both mappings, or a
            variable's value is not JSON (:func:`json_value_problem`).
        TypeError: ``variables`` or ``files`` is neither a mapping nor ``None`` (a host bug).
    """
    for label, group in (("variables", variables), ("files", files)):
        if group is not None and not isinstance(group, Mapping):
            raise TypeError(f"{label} must be a mapping of name to value, not {type(group).__name__}")
    for group in (variables or {}, files or {}):
        for name in group:
            if not is_variable_name(name):
                raise InvalidVariableNameError(name, source, session_id=session_id)
    both = sorted(set(variables or {}) & set(files or {}))
    if both:
        raise InvalidVariableNameError(
            both[0], source, "it is supplied both as a variable and as a file", session_id=session_id
        )
    for name, value in (variables or {}).items():
        problem = json_value_problem(value)
        if problem is not None:
            # Checked here, before any claim: a value the checkpoint cannot store would otherwise
            # fail the commit mid-turn and leave the session `running` under a live lease.
            raise InvalidVariableNameError(name, source, f"its value is not JSON: {problem}", session_id=session_id)


MAX_VALUE_DEPTH = 100
"""How deeply a host value may nest (arrays and objects); the checkpoint codec cannot store much deeper."""


def json_value_problem(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` is not a JSON value a session can store, or ``None`` when it is (§6: any JSON).

    JSON here means: null, booleans, integers, finite floats, strings with a UTF-8 form (no lone
    surrogate), lists (tuples are read as lists) and objects with string keys, nested at most
    :data:`MAX_VALUE_DEPTH` levels. NaN and infinities are refused rather than stored as null.

    Returns:
        A short reason (``"NaN and infinities are not JSON numbers"``), or ``None``.
    """
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "NaN and infinities are not JSON numbers"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string holds a lone surrogate, which has no UTF-8 form"
        return None
    if depth >= MAX_VALUE_DEPTH:
        return f"it nests more than {MAX_VALUE_DEPTH} levels deep"
    if isinstance(value, (list, tuple)):
        items: Any = value
    elif isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            return "an object has a key that is not a string"
        items = [*value.keys(), *value.values()]
    else:
        return f"{type(value).__name__} is not a JSON type"
    for item in items:
        problem = json_value_problem(item, depth + 1)
        if problem is not None:
            return problem
    return None


def title_problem(value: Any) -> str | None:
    """Why ``value`` is not a usable title, or ``None`` when it is (§6).

    A title is a string that, trimmed, is non-empty, a single line and at most 200 characters.

    Returns:
        A short reason (``"a title must be a single line"``) for the ``Title ignored: <reason>``
        warning or the agent's refusal; ``None`` for a good title.
    """
    if not isinstance(value, str):
        return f"a title must be a string, not {_json_type(value)}"
    text = value.strip()
    if not text:
        return "a title must not be empty"
    if len(text.splitlines()) > 1:
        return "a title must be a single line"
    if len(text) > TITLE_MAX_CHARS:
        return f"a title must be at most {TITLE_MAX_CHARS} characters (this one has {len(text)})"
    return None


def has_title(variables: Mapping[str, Variable]) -> bool:
    """Whether the session already holds a title (a host title then no longer applies, §6)."""
    current = variables.get("title")
    return current is not None and current.value is not None


def seed_host_variables(variables: dict[str, Variable], new: Mapping[str, Any]) -> list[str]:
    """Apply host writes to a session's variables, in place (§6).

    Each value is stored locked and replaces the earlier one, locked or not; the last host write
    wins. ``title`` is the exception: it is stored trimmed and unlocked, and only when the
    session has no title yet (so the agent's refinement wins); a malformed host title is skipped
    with a warning while the other variables still apply. Values are deep-copied so a host that
    later mutates its own objects changes nothing stored.

    Args:
        variables: The session's variables (name → :class:`Variable`); mutated.
        new: Host-supplied name → JSON value, in the order given (assembly seeds, firing or
            delivery variables, file variables, sub-workflow arguments).

    Returns:
        Warnings, each ``Title ignored: <reason>``; empty when all applied.

    Raises:
        InvalidVariableNameError: a name is malformed; raised before anything is written.
    """
    for name in new:
        if not is_variable_name(name):
            raise InvalidVariableNameError(name, "seeded as a host variable")
    warnings: list[str] = []
    for name, value in new.items():
        if name == "title":
            problem = title_problem(value)
            if problem is not None:
                warnings.append(f"Title ignored: {problem}")
            elif not has_title(variables):
                variables["title"] = Variable(value=value.strip(), locked=False)
            continue
        variables[name] = Variable(value=copy.deepcopy(value), locked=True)
    return warnings


def set_trigger_variable(variables: dict[str, Variable], trigger_id: str) -> None:
    """Set ``trigger`` to the current trigger id, locked (§6: at every turn opening and delivery)."""
    variables["trigger"] = Variable(value=trigger_id, locked=True)


def substitute_references(args: Any, variables: Mapping[str, Any]) -> Any:
    """Substitute ``${{name.path}}`` references in a tool call's arguments (§6).

    Paths use the session-path syntax (§4.3) and resolve by §4.4. A string that is exactly one
    reference becomes the raw value, keeping its JSON type; a reference inside longer text is
    replaced by the value's text (a string as is, anything else as compact JSON). ``$${{``
    writes a literal ``${{``. Mapping values and list items are walked recursively; keys and
    non-string scalars are left alone; the input is not mutated.

    Args:
        args: The tool call's arguments (any JSON).
        variables: The session's variables: name → :class:`Variable`, or name → plain value.

    Returns:
        A new structure with every reference substituted.

    Raises:
        UnresolvedReferenceError: a reference is unterminated, malformed, names an unset
            variable or a path that does not resolve.
    """
    values = {name: v.value if isinstance(v, Variable) else v for name, v in variables.items()}
    return _walk(args, values)


def _walk(node: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(node, str):
        return _substitute_text(node, values)
    if isinstance(node, Mapping):
        return {key: _walk(item, values) for key, item in node.items()}
    if isinstance(node, (list, tuple)):
        return [_walk(item, values) for item in node]
    return node


def _substitute_text(text: str, values: Mapping[str, Any]) -> Any:
    if _OPEN not in text:
        return text
    if text.startswith(_OPEN) and text.find(_CLOSE, len(_OPEN)) == len(text) - len(_CLOSE):
        return copy.deepcopy(_lookup(text, values))  # a whole-string reference keeps its type
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith(_ESCAPED_OPEN, i):
            out.append(_OPEN)
            i += len(_ESCAPED_OPEN)
        elif text.startswith(_OPEN, i):
            end = text.find(_CLOSE, i + len(_OPEN))
            if end < 0:
                raise UnresolvedReferenceError(text[i:], "it has no closing '}}' (write '$${{' for a literal '${{')")
            value = _lookup(text[i : end + len(_CLOSE)], values)
            out.append(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))
            i = end + len(_CLOSE)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _lookup(reference: str, values: Mapping[str, Any]) -> Any:
    inner = reference[len(_OPEN) : -len(_CLOSE)]
    try:
        path = parse_session_path(inner, "a tool argument")
    except InvalidSessionPathError as exc:
        raise UnresolvedReferenceError(reference, f"'{inner.strip()}' is not a usable path: {exc.reason}") from None
    name = path.segments[0]
    if name not in values:
        known = ", ".join(sorted(values)) or "(none set yet)"
        raise UnresolvedReferenceError(reference, f"variable '{name}' is not set. Set: {known}")
    value = resolve_path(path, values)
    if value is UNRESOLVED:
        raise UnresolvedReferenceError(reference, f"path '{path.text}' does not resolve against variable '{name}'")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__
