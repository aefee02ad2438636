"""The value types of trigger signatures (``requires``/``returns`` entries).

Rule source: BEHAVIOUR.md §2.2: a type is one of
``string|integer|number|boolean|date|date-time|object|array|file``; values are never coerced;
typed entries refuse null; an untyped entry takes any value, null included; a ``file`` is a
string naming an existing file of the session.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable
from typing import Any

VALUE_TYPES: tuple[str, ...] = (
    "string",
    "integer",
    "number",
    "boolean",
    "date",
    "date-time",
    "object",
    "array",
    "file",
)
"""Every accepted ``type`` word, in the order messages list them."""

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
# RFC 3339 date-time: the offset is required (Z or ±hh:mm); a leap second (60) is allowed.
_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))")


def _is_real_date(year: str, month: str, day: str) -> bool:
    try:
        _dt.date(int(year), int(month), int(day))
    except ValueError:
        return False
    return True


def _is_date(value: str) -> bool:
    match = _DATE.fullmatch(value)
    return match is not None and _is_real_date(*match.groups())


def _is_date_time(value: str) -> bool:
    match = _DATE_TIME.fullmatch(value)
    if not match:
        return False
    year, month, day, hour, minute, second, _frac, _zone, off_h, off_m = match.groups()
    if not _is_real_date(year, month, day):
        return False
    if int(hour) > 23 or int(minute) > 59 or int(second) > 60:
        return False
    return off_h is None or (int(off_h) <= 23 and int(off_m) <= 59)


def _is_number(value: Any) -> bool:
    # bool subclasses int, yet true is not a number in JSON.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_value_type(value: Any, type_: str | None, *, file_exists: Callable[[str], bool]) -> bool:
    """Whether ``value`` conforms to a signature entry's ``type`` (§2.2). Nothing is coerced.

    Args:
        value: A plain JSON value (``None`` for null).
        type_: One of :data:`VALUE_TYPES`, or ``None`` for an untyped entry.
        file_exists: Called with a string value for ``type_ == "file"``; answers whether the
            session holds a file at that path (``"scratchpad/attachments/x.pdf"``).

    Returns:
        ``True`` when the value conforms. Untyped: always ``True``, null included. Typed: null
        never conforms; ``integer`` takes an int or an integral finite float (``4`` and ``4.0``,
        not ``"4"``); ``number`` a finite int or float; ``boolean`` only ``True``/``False``;
        ``date`` a ``YYYY-MM-DD`` string naming a real calendar day; ``date-time`` an RFC 3339
        date-time string with ``Z`` or ``±hh:mm``; ``object`` a mapping; ``array`` a list;
        ``file`` a non-blank string for which ``file_exists`` is true.

    Raises:
        ValueError: ``type_`` is not one of :data:`VALUE_TYPES` (the loader never lets one through).
    """
    if type_ is None:
        return True
    if type_ not in VALUE_TYPES:
        raise ValueError(f"unknown value type {type_!r}; expected one of {', '.join(VALUE_TYPES)}")
    if value is None:
        return False
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "integer":
        return _is_number(value) and (isinstance(value, int) or float(value).is_integer())
    if type_ == "number":
        return _is_number(value)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "date":
        return isinstance(value, str) and _is_date(value)
    if type_ == "date-time":
        return isinstance(value, str) and _is_date_time(value)
    if type_ == "object":
        return isinstance(value, dict)
    if type_ == "array":
        return isinstance(value, list)
    # type_ == "file"
    return isinstance(value, str) and bool(value.strip()) and bool(file_exists(value))
