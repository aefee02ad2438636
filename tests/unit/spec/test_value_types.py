"""BEHAVIOUR.md §2.2: signature value types, no coercion, typed entries refuse null."""

from __future__ import annotations

import pytest

from archmax.spec import VALUE_TYPES, check_value_type


def _no_files(_: str) -> bool:
    return False


def ok(value, type_, file_exists=_no_files) -> bool:
    return check_value_type(value, type_, file_exists=file_exists)


def test_the_nine_types():
    assert VALUE_TYPES == (
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


@pytest.mark.parametrize("value", [None, "", 0, False, [], {}, "x"])
def test_an_untyped_entry_takes_any_value_null_included(value):
    assert ok(value, None) is True


@pytest.mark.parametrize("type_", VALUE_TYPES)
def test_typed_entries_refuse_null(type_):
    assert ok(None, type_, lambda _: True) is False


@pytest.mark.parametrize(
    ("type_", "good", "bad"),
    [
        ("string", ["", "x"], [1, True, ["x"]]),
        ("integer", [0, -4, 4.0], ["4", 4.5, True, float("inf")]),
        ("number", [0, 1.5, -2], ["1.5", True, float("nan"), float("inf")]),
        ("boolean", [True, False], [0, 1, "true"]),
        (
            "date",
            ["2024-02-29", "2026-12-31"],
            ["2026-02-30", "2026-1-01", "20260101", "2026-01-01T00:00:00Z", 20260101],
        ),
        (
            "date-time",
            ["2025-03-01T09:00:00Z", "2025-03-01T09:00:00.123+02:00", "2025-03-01t09:00:00z"],
            [
                "2025-03-01T09:00:00",
                "2025-03-01",
                "2025-02-30T09:00:00Z",
                "2025-03-01T24:00:00Z",
                "2025-03-01T09:00Z",
            ],
        ),
        ("object", [{}, {"a": 1}], [[], "{}"]),
        ("array", [[], [1]], [{}, "[]", (1,)]),
    ],
)
def test_values_conform_without_coercion(type_, good, bad):
    assert [ok(v, type_) for v in good] == [True] * len(good)
    assert [ok(v, type_) for v in bad] == [False] * len(bad)


def test_a_file_is_a_string_naming_an_existing_session_file():
    files = {"scratchpad/attachments/invoice.pdf"}
    assert ok("scratchpad/attachments/invoice.pdf", "file", files.__contains__) is True
    assert ok("scratchpad/attachments/missing.pdf", "file", files.__contains__) is False
    assert ok(3, "file", lambda _: True) is False
    assert ok("  ", "file", lambda _: True) is False


def test_an_unknown_type_is_a_programming_error():
    with pytest.raises(ValueError):
        ok("x", "text")
