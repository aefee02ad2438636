"""Session paths: the parser every path source shares, and resolution against variables.

Rule source: BEHAVIOUR.md §4.3 (grammar and parser), §4.4 (resolution); seed "Sessions: which
session does this event belong to?" and "Supplying the path from outside the workflow". The
same parser reads all four sources (per-firing path, assembly path, trigger ``session:``, CLI
``--session-path``), so a path means one thing everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from archmax.errors import InvalidSessionPathError

_FIRST_SEGMENT = re.compile(r"[a-z][a-z0-9_]*")
# Canonical list indices only: "0", "7", "12" from the start, "-1", "-12" from the end.
_INDEX = re.compile(r"0|[1-9][0-9]*|-[1-9][0-9]*")


class _Unresolved(Enum):
    UNRESOLVED = "UNRESOLVED"

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED: Literal[_Unresolved.UNRESOLVED] = _Unresolved.UNRESOLVED
"""Sentinel: the path does not resolve. Distinct from ``None``, which is a JSON value (null)."""

Unresolved = Literal[_Unresolved.UNRESOLVED]


@dataclass(frozen=True)
class SessionPath:
    """A parsed session path (§4.3).

    Attributes:
        text: The path as written, surrounding whitespace trimmed (``"triggers.-1.conversationId"``).
        segments: ``text`` split on ``.`` (``("triggers", "-1", "conversationId")``); the first
            segment is a variable name, the others keys or list indices.
    """

    text: str
    segments: tuple[str, ...]

    def __str__(self) -> str:
        return self.text


def parse_session_path(path: str, source: str) -> SessionPath:
    """Parse a session path by the grammar ``first ("." segment)*`` (§4.3).

    Args:
        path: The path as written by the caller, assembly, trigger declaration or CLI.
        source: Where it was written, for the message (``"create_agent(session_path=...)"``,
            ``"--session-path"``, ``"states.intake.triggers.email_reply.session"``).

    Returns:
        The parsed :class:`SessionPath`.

    Raises:
        InvalidSessionPathError: ``the session path '<p>' from <source> is not usable: <reason>``,
            the reason being ``it is empty``, ``write the bare path, without ${{ }}``, a bad first
            segment, or an empty segment (a doubled or trailing dot).
    """
    if not isinstance(path, str):
        raise InvalidSessionPathError(str(path), source, f"it must be a string, not {type(path).__name__}")
    text = path.strip()
    if not text:
        raise InvalidSessionPathError(path, source, "it is empty")
    if "${{" in text:
        raise InvalidSessionPathError(path, source, "write the bare path, without ${{ }}")
    segments = tuple(text.split("."))
    if not _FIRST_SEGMENT.fullmatch(segments[0]):
        raise InvalidSessionPathError(
            path,
            source,
            f"its first segment '{segments[0]}' is not a variable name (it must match ^[a-z][a-z0-9_]*$)",
        )
    if any(segment == "" for segment in segments[1:]):
        raise InvalidSessionPathError(path, source, "it has an empty segment (a doubled or trailing dot)")
    return SessionPath(text=text, segments=segments)


def resolve_segments(value: Any, segments: Iterable[str]) -> Any | Unresolved:
    """Walk ``segments`` down from ``value`` by the rules of §4.4.

    On a mapping a segment must be an exact key (no attribute access, no inherited names); on a
    list it must be a canonical index (``0``, ``[1-9][0-9]*``, or ``-[1-9][0-9]*`` from the end);
    on anything else the walk stops unresolved.

    Args:
        value: Any JSON value.
        segments: Keys and indices to apply, in order; none applied returns ``value``.

    Returns:
        The raw value reached (``None`` included), or :data:`UNRESOLVED`.
    """
    current = value
    for segment in segments:
        if isinstance(current, Mapping):
            if segment not in current:
                return UNRESOLVED
            current = current[segment]
        elif isinstance(current, (list, tuple)):
            if not _INDEX.fullmatch(segment):
                return UNRESOLVED
            index = int(segment)
            if not -len(current) <= index < len(current):
                return UNRESOLVED
            current = current[index]
        else:
            return UNRESOLVED
    return current


def resolve_path(path: SessionPath, variables: Mapping[str, Any] | None) -> Any | Unresolved:
    """The raw value at ``path`` in the firing's variables (§4.4).

    Args:
        path: A parsed path; its first segment names the variable.
        variables: Variable name → plain JSON value (the variables passed with the firing).

    Returns:
        The value reached (``None`` included), or :data:`UNRESOLVED` when the first segment is not
        a key of ``variables`` or a later segment does not apply.
    """
    if not isinstance(variables, Mapping):
        return UNRESOLVED
    return resolve_segments(variables, path.segments)


def resolve_relative(value: Any, path: str) -> Any | Unresolved:
    """Resolve a dotted sub-path inside one value (``archmax_get_variables {name, path}``, §5.9).

    Unlike a session path, the first segment here is applied to ``value`` itself, so it may be
    an index (``"0.id"`` on a list).

    Args:
        value: The variable's value.
        path: Dot-separated keys and indices; an empty segment never resolves.

    Returns:
        The value reached, or :data:`UNRESOLVED`.
    """
    segments = path.strip().split(".")
    if any(segment == "" for segment in segments):
        return UNRESOLVED
    return resolve_segments(value, segments)


def session_id_from_value(value: Any) -> str | None:
    """Turn a resolved value into a session id candidate (§4.4 result rules).

    A non-blank string is the id as is (never trimmed); an int, or a float with an integral
    value, becomes its decimal digits (``42`` and ``42.0`` give ``"42"``); any other finite
    float becomes ``repr(x)``. Everything else — a blank string, a bool, null, a mapping, a
    list, NaN or infinity, :data:`UNRESOLVED` — gives ``None``.

    The candidate is not yet checked by §4.1; the caller validates it.
    """
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, bool):  # bool subclasses int, yet True is not the id "1"
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    return None


def resolve_session_id(path: SessionPath, variables: Mapping[str, Any] | None) -> str | None:
    """The session id a path yields from the firing's variables, or ``None`` when unresolved (§4.4).

    Args:
        path: A parsed path.
        variables: Variable name → plain JSON value.

    Returns:
        The id candidate (see :func:`session_id_from_value`), or ``None``; a ``None`` means the
        firing gets a minted id plus a warning (§4.2).
    """
    value = resolve_path(path, variables)
    if value is UNRESOLVED:
        return None
    return session_id_from_value(value)
