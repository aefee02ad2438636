"""``until``: durations, instants and every refusal of BEHAVIOUR.md §5.3."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from archmax.clock import FakeClock
from archmax.errors import ArchmaxError
from archmax.session.until import UNTIL_HINT, UntilError, parse_until

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def neither(value: str) -> str:
    return f"'until' value '{value}' is neither a duration nor an instant."


# --------------------------------------------------------------------------- the three examples


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-03-01", "2025-03-01T00:00:00.000Z"),
        ("2025-03-01T09:00", "2025-03-01T09:00:00.000Z"),
        ("2025-03-01 09:00+02:00", "2025-03-01T07:00:00.000Z"),
    ],
)
def test_the_documented_examples(value: str, expected: str) -> None:
    assert parse_until(value, NOW) == expected


# --------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1ms", "2025-01-01T12:00:00.001Z"),
        ("1500ms", "2025-01-01T12:00:01.500Z"),
        ("45s", "2025-01-01T12:00:45.000Z"),
        ("30m", "2025-01-01T12:30:00.000Z"),
        ("2h", "2025-01-01T14:00:00.000Z"),
        ("1d", "2025-01-02T12:00:00.000Z"),
        ("400d", "2026-02-05T12:00:00.000Z"),
        ("007m", "2025-01-01T12:07:00.000Z"),
    ],
)
def test_durations_are_added_to_now(value: str, expected: str) -> None:
    assert parse_until(value, NOW) == expected


def test_duration_reads_the_injected_clock(clock: FakeClock) -> None:
    assert parse_until("1d", clock.now()) == "2025-01-02T00:00:00.000Z"
    clock.advance(hours=5)
    assert parse_until("1d", clock.now()) == "2025-01-02T05:00:00.000Z"


def test_surrounding_whitespace_is_trimmed() -> None:
    assert parse_until("  30m\n", NOW) == "2025-01-01T12:30:00.000Z"


def test_now_with_microseconds_is_truncated_to_milliseconds() -> None:
    now = NOW + timedelta(microseconds=123_999)
    assert parse_until("1s", now) == "2025-01-01T12:00:01.123Z"


def test_now_in_another_offset_gives_a_utc_instant() -> None:
    now = datetime(2025, 1, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert parse_until("1h", now) == "2025-01-01T13:00:00.000Z"


@pytest.mark.parametrize("value", ["0ms", "0s", "0m", "0h", "0d", "000m"])
def test_zero_amount_is_not_a_positive_duration(value: str) -> None:
    with pytest.raises(UntilError) as info:
        parse_until(value, NOW)
    assert str(info.value) == f"'until' value '{value}' must be a positive duration."
    assert "must be a positive duration" in str(info.value)


@pytest.mark.parametrize(
    "value",
    [
        "30M",
        "2H",
        "1D",
        "30 m",
        "1.5h",
        "-1h",
        "+1h",
        "30",
        "m",
        "1w",
        "1y",
        "30min",
        "1h30m",
        "PT1H",
        "1e3s",
        "١d",
    ],
)
def test_malformed_durations_are_neither(value: str) -> None:
    with pytest.raises(UntilError) as info:
        parse_until(value, NOW)
    assert str(info.value) == neither(value)


def test_duration_landing_after_the_last_instant_is_malformed() -> None:
    with pytest.raises(UntilError) as info:
        parse_until("99999999999999d", NOW)
    assert str(info.value) == neither("99999999999999d")
    with pytest.raises(UntilError):
        parse_until("3000000d", NOW)


def test_duration_landing_on_the_last_instant_is_accepted() -> None:
    now = datetime(9999, 12, 31, 23, 59, 59, 998000, tzinfo=UTC)
    assert parse_until("1ms", now) == "9999-12-31T23:59:59.999Z"
    with pytest.raises(UntilError):
        parse_until("2ms", now)


# --------------------------------------------------------------------------- instants


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-03-01T09:00Z", "2025-03-01T09:00:00.000Z"),
        ("2025-03-01T09:00:30", "2025-03-01T09:00:30.000Z"),
        ("2025-03-01T09:00:30Z", "2025-03-01T09:00:30.000Z"),
        ("2025-03-01 09:00:30", "2025-03-01T09:00:30.000Z"),
        ("2025-03-01T09:00:30.5", "2025-03-01T09:00:30.500Z"),
        ("2025-03-01T09:00:30.12", "2025-03-01T09:00:30.120Z"),
        ("2025-03-01T09:00:30.123", "2025-03-01T09:00:30.123Z"),
        ("2025-03-01T09:00:30.1239", "2025-03-01T09:00:30.123Z"),
        ("2025-03-01T09:00:30.999999999", "2025-03-01T09:00:30.999Z"),
        ("2025-03-01T09:00:30.999999999Z", "2025-03-01T09:00:30.999Z"),
        ("2025-03-01T09:00+02:00", "2025-03-01T07:00:00.000Z"),
        ("2025-03-01T09:00+0200", "2025-03-01T07:00:00.000Z"),
        ("2025-03-01T09:00-05:30", "2025-03-01T14:30:00.000Z"),
        ("2025-03-01T09:00-0530", "2025-03-01T14:30:00.000Z"),
        ("2025-03-01T01:00+02:00", "2025-02-28T23:00:00.000Z"),
        ("2025-03-01T09:00:00.250+01:00", "2025-03-01T08:00:00.250Z"),
        ("2025-03-01T09:00+00:00", "2025-03-01T09:00:00.000Z"),
        ("2025-03-01T09:00-00:00", "2025-03-01T09:00:00.000Z"),
        ("2025-03-01T09:00+23:59", "2025-02-28T09:01:00.000Z"),
        ("2024-02-29", "2024-02-29T00:00:00.000Z"),
        ("2000-02-29T23:59:59", "2000-02-29T23:59:59.000Z"),
        ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),
        ("9999-12-31T23:59:59.9999999", "9999-12-31T23:59:59.999Z"),
    ],
)
def test_instants_normalise_to_utc_milliseconds(value: str, expected: str) -> None:
    assert parse_until(value, NOW) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2020-01-01", "2020-01-01T00:00:00.000Z"),
        ("1970-01-01T00:00Z", "1970-01-01T00:00:00.000Z"),
        ("0999-06-01", "0999-06-01T00:00:00.000Z"),
        ("0001-01-01", "0001-01-01T00:00:00.000Z"),
    ],
)
def test_past_instants_are_accepted_and_keep_a_four_digit_year(value: str, expected: str) -> None:
    result = parse_until(value, NOW)
    assert result == expected
    assert result < "2025-01-01T12:00:00.000Z"  # string order is time order: due at once


@pytest.mark.parametrize(
    "value",
    [
        "2025-02-29",
        "2025-02-30",
        "2025-13-01",
        "2025-00-10",
        "2025-04-31",
        "2025-01-00",
        "0000-01-01",
        "2025-03-01T24:00",
        "2025-03-01T23:60",
        "2025-03-01T23:59:60",
        "2025-03-01T09:00+24:00",
        "2025-03-01T09:00+02:60",
        "2025-03-01T09:00+9999",
    ],
)
def test_impossible_dates_times_and_offsets_are_malformed(value: str) -> None:
    with pytest.raises(UntilError) as info:
        parse_until(value, NOW)
    assert str(info.value) == neither(value)


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:59:59-00:01",
        "9999-12-31T23:30-01:00",
        "0001-01-01T00:00+01:00",
    ],
)
def test_instants_outside_the_representable_range_are_malformed(value: str) -> None:
    with pytest.raises(UntilError) as info:
        parse_until(value, NOW)
    assert str(info.value) == neither(value)


@pytest.mark.parametrize(
    "value",
    [
        "tomorrow",
        "2025-3-1",
        "25-03-01",
        "2025/03/01",
        "20250301",
        "2025-03-01T09",
        "2025-03-01T9:00",
        "2025-03-01T09:00:3",
        "2025-03-01T09:00:30.",
        "2025-03-01T09:00:30.1234567890",
        "2025-03-01  09:00",
        "2025-03-01t09:00",
        "2025-03-01T09:00z",
        "2025-03-01T09:00+2",
        "2025-03-01T09:00+02",
        "2025-03-01T09:00+02:0",
        "2025-03-01T09:00 +02:00",
        "2025-03-01T09:00UTC",
        "2025-03-01Z",
        "2025-03-01T",
        "2025-03-01T09:00:30,5",
        "2025-W09-6",
        "1740819600",
    ],
)
def test_other_shapes_are_neither_a_duration_nor_an_instant(value: str) -> None:
    with pytest.raises(UntilError) as info:
        parse_until(value, NOW)
    assert str(info.value) == neither(value)


# --------------------------------------------------------------------------- refusals in general


@pytest.mark.parametrize("value", ["", "   ", "\n\t"])
def test_blank_until_is_empty(value: str) -> None:
    with pytest.raises(UntilError) as info:
        parse_until(value, NOW)
    assert str(info.value) == "'until' is empty."


@pytest.mark.parametrize("value", [30, 1.5, None, ["1d"]])
def test_non_string_until_is_neither(value: object) -> None:
    with pytest.raises(UntilError) as info:
        parse_until(value, NOW)  # type: ignore[arg-type]
    assert str(info.value) == f"'until' value '{value}' is neither a duration nor an instant."


def test_refusal_is_a_tool_argument_error_not_an_archmax_error() -> None:
    with pytest.raises(ValueError) as info:
        parse_until("soon", NOW)
    assert not isinstance(info.value, ArchmaxError)


def test_the_hint_is_the_documented_sentence() -> None:
    assert UNTIL_HINT == (
        "Expected a duration such as 30m, 2h or 1d (units ms, s, m, h, d) or an ISO-8601 date or date-time."
    )
