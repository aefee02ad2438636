"""Matchers the case format shares: text tokens, ``/regex/flags``, partial input, JSON deep-equality.

Rule source: BEHAVIOUR.md §10.2 (``reply`` tokens, ``raised.reason``, ``calledTool.input``,
``mocks.whenInput``, ``variables.expect``).
"""

from __future__ import annotations

import re
from typing import Any

_REGEX_FORM = re.compile(r"^/(.+)/([a-z]*)$", re.DOTALL)
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}


class BadPatternError(ValueError):
    """A ``/pattern/flags`` token that does not compile, or uses an unknown flag (a static case error)."""


def compile_token(token: str) -> re.Pattern[str] | None:
    r"""The compiled regex of a ``/pattern/flags`` token, or ``None`` for a plain substring token.

    Args:
        token: ``"ORD-1001"`` (substring) or ``"/ord-\d+/i"`` (regex; flags from ``imsxu``).

    Returns:
        A compiled pattern, or ``None`` when the token is not in regex form.

    Raises:
        BadPatternError: the regex form does not compile or names an unknown flag.
    """
    found = _REGEX_FORM.match(token)
    if found is None:
        return None
    body, flags = found.group(1), found.group(2)
    bits = 0
    for flag in flags:
        if flag not in _FLAGS:
            raise BadPatternError(f"unknown regex flag '{flag}' in {token!r} (known: {''.join(_FLAGS)})")
        bits |= _FLAGS[flag]
    try:
        return re.compile(body, bits)
    except re.error as exc:
        raise BadPatternError(f"bad regex {token!r}: {exc}") from exc


def token_in(token: str, text: str) -> bool:
    """Whether a token (substring or ``/re/flags``, searched anywhere) occurs in ``text``."""
    pattern = compile_token(token)
    return pattern.search(text) is not None if pattern else token in text


def text_matches(expected: str, actual: str) -> bool:
    """Exact equality, or a regex search when ``expected`` is written ``/re/flags`` (``raised.reason``)."""
    pattern = compile_token(expected)
    return pattern.search(actual) is not None if pattern else expected == actual


def json_equal(a: Any, b: Any) -> bool:
    """JSON deep-equality: ``True`` is not ``1``, ``1`` equals ``1.0``, mappings compare by keys."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def partial_match(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` satisfies ``expected`` partially (§10.2 ``input`` / ``whenInput``).

    A mapping needs each expected key, matched recursively (extra actual keys are fine); a list
    matches element by element (same length); a ``/re/flags`` string is searched in the actual
    string; anything else must be JSON-equal.
    """
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and partial_match(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(partial_match(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, str):
        pattern = compile_token(expected)
        if pattern is not None:
            return isinstance(actual, str) and pattern.search(actual) is not None
    return json_equal(expected, actual)


def check_patterns(value: Any) -> None:
    """Compile every ``/re/flags`` string inside ``value`` now, so a bad one is a static error.

    Raises:
        BadPatternError: the first bad pattern found.
    """
    if isinstance(value, str):
        compile_token(value)
    elif isinstance(value, dict):
        for item in value.values():
            check_patterns(item)
    elif isinstance(value, list):
        for item in value:
            check_patterns(item)
