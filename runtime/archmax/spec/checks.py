"""Shared pieces of workflow validation: the diagnostic collector and small shape checks.

Rule source: BEHAVIOUR.md §2.5. Every problem is one :class:`~archmax.errors.Diagnostic` at a
dotted path built from keys, state slugs and 0-based indices (``states.a.transitions.0.to``);
all problems are collected, none stops the walk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from archmax.errors import Diagnostic

STATE_SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
"""A state slug (§1)."""
VARIABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""A variable name (§6)."""

NON_BLANK = "must be a non-blank string"


def at(*parts: Any) -> str:
    """Join path parts with dots, skipping empty ones: ``at("states", "a", "transitions", 0)``."""
    return ".".join(str(p) for p in parts if p is not None and p != "")


class Collector:
    """Accumulates diagnostics in the order found."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def error(self, path: str, message: str) -> None:
        """Record an error (it makes the load fail)."""
        self.items.append(Diagnostic(path, message, "error"))

    def warning(self, path: str, message: str) -> None:
        """Record a warning (never raised)."""
        self.items.append(Diagnostic(path, message, "warning"))

    @property
    def errors(self) -> list[Diagnostic]:
        """The error diagnostics only."""
        return [d for d in self.items if d.severity == "error"]


def unknown_keys(mapping: dict[Any, Any], allowed: Iterable[str], path: str, out: Collector) -> None:
    """Report ``Unknown key '<k>'`` at ``<path>.<k>`` for every key outside ``allowed`` (§2.5)."""
    known = set(allowed)
    for key in mapping:
        if key not in known:
            out.error(at(path, key), f"Unknown key '{key}'")


def is_non_blank(value: Any) -> bool:
    """A string with at least one non-whitespace character."""
    return isinstance(value, str) and bool(value.strip())


def optional_text(
    mapping: dict[Any, Any], key: str, path: str, out: Collector, *, non_blank: bool = False
) -> str | None:
    """Read an optional string key; ``null`` counts as absent.

    Reports ``must be a string`` (or ``must be a non-blank string`` with ``non_blank``) at
    ``<path>.<key>`` for anything else, and returns ``None`` then.
    """
    value = mapping.get(key)
    if value is None:
        return None
    if non_blank and not is_non_blank(value):
        out.error(at(path, key), NON_BLANK)
        return None
    if not isinstance(value, str):
        out.error(at(path, key), "must be a string")
        return None
    return value


def string_list(
    value: Any,
    path: str,
    out: Collector,
    *,
    what: str = "strings",
    check: Callable[[str], str | None] | None = None,
) -> list[str]:
    """Read a list of non-blank strings; ``null`` is an empty list.

    Reports ``must be a list of <what>`` at ``path`` for a non-list and ``must be a non-blank
    string`` at ``<path>.<i>`` for a bad item (which is dropped). ``check`` may refuse an item by
    returning a message, reported at ``<path>.<i>``.
    """
    if value is None:
        return []
    if not isinstance(value, list):
        out.error(path, f"must be a list of {what}")
        return []
    items: list[str] = []
    for index, item in enumerate(value):
        problem = NON_BLANK if not is_non_blank(item) else (check(item) if check else None)
        if problem is None:
            items.append(item)
        else:
            out.error(at(path, index), problem)
    return items


def positive_int(value: Any) -> bool:
    """An ``int`` above zero; ``bool`` is not an int here."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
