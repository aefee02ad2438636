"""``archmax_wait``'s ``until``: a relative duration or an ISO-8601 instant, normalised to ``resume_at``.

Rule source: BEHAVIOUR.md §5.3 (forms, refusals, examples) and §5.2 (the refusal is a tool
error, ``archmax_wait rejected: ...`` ending with :data:`UNTIL_HINT`); seed "Waiting for a time,
not a reply". A relative duration means little to the process that reads the checkpoint
tomorrow, so the park records an absolute instant.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from archmax.clock import format_instant

UNTIL_HINT = "Expected a duration such as 30m, 2h or 1d (units ms, s, m, h, d) or an ISO-8601 date or date-time."

_DURATION = re.compile(r"([0-9]+)(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_INSTANT = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:[T ](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{1,9}))?)?"
    r"(?P<tz>Z|[+-][0-9]{2}:[0-9]{2}|[+-][0-9]{4})?)?"
)
# The latest instant a resume_at may name; anything after it is malformed (§5.3).
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)


class UntilError(ValueError):
    """An ``until`` the runtime cannot use.

    It is a tool-argument refusal (an ``error`` result, no park), not an :class:`ArchmaxError`:
    the agent can recover by calling ``archmax_wait`` again. ``str(error)`` is the §5.3 text.
    """


def parse_until(value: str, now: datetime) -> str:
    """Normalise ``until`` to the ``resume_at`` instant string (§5.3).

    Forms (after trimming):

    * a duration ``^[0-9]+(ms|s|m|h|d)$`` (lowercase, no spaces, no decimals), amount > 0:
      ``now + amount × unit``;
    * an instant ``YYYY-MM-DD``, optionally followed by ``T`` or one space and
      ``HH:MM[:SS[.f{1,9}]]``, the time optionally followed by ``Z``, ``±HH:MM`` or ``±HHMM``.
      A date alone is midnight UTC, a date-time without offset is UTC, fractions are truncated
      to milliseconds. Past instants are accepted (due at once).

    Args:
        value: The agent's ``until`` argument.
        now: The injected clock's current instant (aware; a naive value is read as UTC).

    Returns:
        ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC.

    Raises:
        UntilError: ``'until' is empty.``; ``'until' value '<v>' must be a positive duration.``
            for an amount of 0; ``'until' value '<v>' is neither a duration nor an instant.``
            for anything else, impossible calendar dates and results after
            ``9999-12-31T23:59:59.999Z`` included.

    Example:
        >>> parse_until("2025-03-01 09:00+02:00", datetime(2025, 1, 1, tzinfo=timezone.utc))
        '2025-03-01T07:00:00.000Z'
    """
    text = value.strip() if isinstance(value, str) else None
    if text == "":
        raise UntilError("'until' is empty.")
    if text is not None:
        duration = _DURATION.fullmatch(text)
        if duration:
            moment = _after(text, now, int(duration.group(1)), duration.group(2))
            return _format(moment)
        instant = _INSTANT.fullmatch(text)
        if instant:
            return _format(_instant(text, instant))
    raise _neither(value)


def _neither(value: object) -> UntilError:
    return UntilError(f"'until' value '{value}' is neither a duration nor an instant.")


def _after(text: str, now: datetime, amount: int, unit: str) -> datetime:
    if amount == 0:
        raise UntilError(f"'until' value '{text}' must be a positive duration.")
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    try:
        moment = now.astimezone(UTC) + timedelta(milliseconds=amount * _UNIT_MS[unit])
    except OverflowError:
        raise _neither(text) from None
    return _bounded(text, moment)


def _instant(text: str, match: re.Match[str]) -> datetime:
    g = match.groupdict()
    fraction = (g["f"] or "").ljust(3, "0")[:3]  # truncate, never round, to milliseconds
    try:
        offset = _offset(g["tz"])
        local = datetime(
            int(g["y"]),
            int(g["mo"]),
            int(g["d"]),
            int(g["h"] or 0),
            int(g["mi"] or 0),
            int(g["s"] or 0),
            int(fraction) * 1000,
            tzinfo=offset,
        )
        moment = local.astimezone(UTC)
    except (ValueError, OverflowError):  # impossible date or time, offset out of range, year 0 / 10000
        raise _neither(text) from None
    return _bounded(text, moment)


def _offset(tz: str | None) -> timezone:
    if tz is None or tz == "Z":
        return UTC
    digits = tz[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if minutes > 59:
        raise ValueError("offset minutes out of range")
    delta = timedelta(hours=hours, minutes=minutes)
    return timezone(-delta if tz[0] == "-" else delta)  # raises ValueError from 24:00 on


def _bounded(text: str, moment: datetime) -> datetime:
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    if moment > _LATEST:
        raise _neither(text)
    return moment


def _format(moment: datetime) -> str:
    text = format_instant(moment)
    # strftime writes years before 1000 unpadded on glibc ('999-...'); pad so string order holds.
    return text if moment.year >= 1000 else f"{moment.year:04d}{text[text.index('-') :]}"


TIMEOUT_HINT = "Expected a duration such as 30m, 2h or 1d (units ms, s, m, h, d)."


def duration_ms(value: object, name: str = "timeout") -> int:
    """Milliseconds of a §5.3 duration: a wait's or a human state's ``timeout`` (BEHAVIOUR.md §5.11).

    Only the duration form of §5.3, exactly: ``^[0-9]+(ms|s|m|h|d)$`` after trimming, amount > 0.
    An instant is not a timeout (a deadline is counted from the park).

    Args:
        value: The value as written.
        name: The key's name, for the message (``timeout``).

    Returns:
        The duration in milliseconds (> 0).

    Raises:
        UntilError: ``'<name>' is empty.``; ``'<name>' value '<v>' must be a positive duration.``;
            ``'<name>' value '<v>' is not a duration.`` (anything else, a non-string included).
    """
    text = value.strip() if isinstance(value, str) else None
    if text == "":
        raise UntilError(f"'{name}' is empty.")
    match = _DURATION.fullmatch(text) if text is not None else None
    if match is None:
        raise UntilError(f"'{name}' value '{value}' is not a duration.")
    amount = int(match.group(1))
    if amount == 0:
        raise UntilError(f"'{name}' value '{text}' must be a positive duration.")
    return amount * _UNIT_MS[match.group(2)]


def deadline(value: str, parked_at: datetime) -> str:
    """The instant a ``timeout`` passes: ``parked_at + duration`` (§5.11), ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    Raises:
        UntilError: as :func:`duration_ms`, or a result after ``9999-12-31T23:59:59.999Z``.
    """
    ms = duration_ms(value)
    start = parked_at if parked_at.tzinfo is not None else parked_at.replace(tzinfo=UTC)
    try:
        moment = start.astimezone(UTC) + timedelta(milliseconds=ms)
    except OverflowError:
        raise UntilError(f"'timeout' value '{value}' is not a duration.") from None
    if moment > _LATEST:
        raise UntilError(f"'timeout' value '{value}' is not a duration.")
    return _format(moment.replace(microsecond=moment.microsecond // 1000 * 1000))
