"""``archmax_wait``'s ``until``: a relative duration or an ISO-8601 instant, normalised to ``resume_at``.

Rule source: BEHAVIOUR.md §5.3 (forms, refusals, examples) and §5.2 (the refusal is a tool
error, ``archmax_wait rejected: ...`` ending with :data:`UNTIL_HINT`); seed "Waiting for a time,
not a reply"; issue 25 item 9 (ISO-8601 durations such as ``PT2M``, compound forms such as
``2h30m`` and weeks, ``1w``, are accepted too). A relative duration means little to the process
that reads the checkpoint tomorrow, so the park records an absolute instant.

The grammar, as implemented (docs/workflow.md states the same):

* short duration: one or more ``<digits><unit>`` parts, units ``w d h m s ms`` (lowercase), each
  unit at most once and largest first, no spaces: ``30m``, ``2h30m``, ``1d12h``, ``1w``, ``1m30s``;
* ISO-8601 duration: ``P[nW][nD][T[nH][nM][nS]]`` (uppercase designators, whole numbers, at
  least one part, ``T`` only before a time part): ``PT2M``, ``P1DT2H``, ``P1W``. Years and months
  (``P1Y``, ``P1M``) have no fixed length and are refused;
* an instant (unchanged): ``YYYY-MM-DD[(T| )HH:MM[:SS[.f]]][Z|±HH:MM|±HHMM]``.

A duration whose parts add up to 0 is refused as not positive; anything else is neither.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from archmax.clock import format_instant

UNTIL_HINT = (
    "Expected a duration such as 30m, 2h30m, 1d or 1w (units w, d, h, m, s, ms, largest first), "
    "an ISO-8601 duration such as PT2M, P1DT2H or P1W, or an ISO-8601 date or date-time."
)

# Each unit at most once, largest first ("ms" is tried before "m" so "500ms" is not "500m" + "s").
_DURATION = re.compile(
    r"(?:(?P<w>[0-9]+)w)?(?:(?P<d>[0-9]+)d)?(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m(?!s))?"
    r"(?:(?P<s>[0-9]+)s)?(?:(?P<ms>[0-9]+)ms)?"
)
_ISO_DURATION = re.compile(
    r"P(?:(?P<w>[0-9]+)W)?(?:(?P<d>[0-9]+)D)?(?:T(?=[0-9])(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+)S)?)?"
)
_UNIT_MS = {"w": 604_800_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
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

    * a short duration: ``<n><unit>`` parts with units ``w d h m s ms`` (lowercase, each at most
      once, largest first, no spaces, no decimals): ``30m``, ``2h30m``, ``1w``;
    * an ISO-8601 duration ``P[nW][nD][T[nH][nM][nS]]`` (whole numbers): ``PT2M``, ``P1DT2H``, ``P1W``;
      either duration must add up to more than 0 and gives ``now + duration``;
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
            for a duration adding up to 0; ``'until' value '<v>' is neither a duration nor an instant.``
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
        duration = _DURATION.fullmatch(text) or _ISO_DURATION.fullmatch(text)
        if duration and any(duration.groupdict().values()):  # "" and "P" match with no part
            return _format(_after(text, now, _milliseconds(duration)))
        instant = _INSTANT.fullmatch(text)
        if instant:
            return _format(_instant(text, instant))
    raise _neither(value)


def _neither(value: object) -> UntilError:
    return UntilError(f"'until' value '{value}' is neither a duration nor an instant.")


def _milliseconds(match: re.Match[str]) -> int:
    """The duration a short or ISO-8601 match names, in milliseconds (group names are the units)."""
    return sum(int(amount) * _UNIT_MS[unit] for unit, amount in match.groupdict().items() if amount)


def _after(text: str, now: datetime, milliseconds: int) -> datetime:
    if milliseconds == 0:
        raise UntilError(f"'until' value '{text}' must be a positive duration.")
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    try:
        moment = now.astimezone(UTC) + timedelta(milliseconds=milliseconds)
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
