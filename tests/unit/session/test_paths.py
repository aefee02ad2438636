"""Session paths: the §4.3 parser and §4.4 resolution."""

from __future__ import annotations

import math

import pytest

from archmax.errors import InvalidSessionPathError
from archmax.session.paths import (
    UNRESOLVED,
    SessionPath,
    parse_session_path,
    resolve_path,
    resolve_relative,
    resolve_session_id,
    session_id_from_value,
)

SOURCE = "create_agent(session_path=...)"


def path(text: str) -> SessionPath:
    return parse_session_path(text, SOURCE)


# --------------------------------------------------------------------------- §4.3 parser


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("conversation_id", ("conversation_id",)),
        ("triggers.-1.conversationId", ("triggers", "-1", "conversationId")),
        ("mail.thread.id", ("mail", "thread", "id")),
        ("a", ("a",)),
        ("x9_.Any Key!", ("x9_", "Any Key!")),
    ],
)
def test_well_formed_paths_split_into_segments(text: str, segments: tuple[str, ...]) -> None:
    parsed = path(text)
    assert parsed.text == text
    assert parsed.segments == segments


def test_surrounding_whitespace_is_trimmed_before_parsing() -> None:
    parsed = path("  mail.thread.id \n")
    assert parsed.text == "mail.thread.id"
    assert parsed.segments == ("mail", "thread", "id")


def test_session_path_is_a_frozen_value() -> None:
    parsed = path("a.b")
    with pytest.raises(AttributeError):
        parsed.text = "c"  # type: ignore[misc]
    assert parsed == path("a.b")


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_empty_path_is_refused_as_empty(text: str) -> None:
    with pytest.raises(InvalidSessionPathError) as info:
        path(text)
    assert info.value.reason == "it is empty"
    assert info.value.source == SOURCE


@pytest.mark.parametrize("text", ["${{conversation_id}}", "${{ mail.id }}", "mail.${{x}}"])
def test_path_written_as_an_expression_is_refused_with_the_bare_path_hint(text: str) -> None:
    with pytest.raises(InvalidSessionPathError) as info:
        path(text)
    assert info.value.reason == "write the bare path, without ${{ }}"


@pytest.mark.parametrize("text", ["Conversation", "1st", "_x", "-1.id", ".id", "conversation-id", "é"])
def test_bad_first_segment_is_refused_and_named(text: str) -> None:
    with pytest.raises(InvalidSessionPathError) as info:
        path(text)
    first = text.split(".")[0]
    assert f"'{first}'" in info.value.reason
    assert "first segment" in info.value.reason


@pytest.mark.parametrize("text", ["mail..id", "mail.", "mail.thread."])
def test_doubled_or_trailing_dot_is_refused_as_an_empty_segment(text: str) -> None:
    with pytest.raises(InvalidSessionPathError) as info:
        path(text)
    assert "empty segment" in info.value.reason


def test_refusal_message_names_path_source_and_reason() -> None:
    with pytest.raises(InvalidSessionPathError) as info:
        parse_session_path("mail..id", "--session-path")
    assert str(info.value) == (
        "the session path 'mail..id' from --session-path is not usable: "
        "it has an empty segment (a doubled or trailing dot)"
    )
    assert info.value.path == "mail..id"


def test_non_string_path_is_refused() -> None:
    with pytest.raises(InvalidSessionPathError):
        parse_session_path(42, SOURCE)  # type: ignore[arg-type]


def test_dollar_without_braces_is_an_ordinary_segment_character() -> None:
    assert path("a.$b").segments == ("a", "$b")


# --------------------------------------------------------------------------- §4.4 resolution

VARIABLES = {
    "conversation_id": "AAQk1",
    "triggers": [{"conversationId": "first"}, {"conversationId": "middle"}, {"conversationId": "AAQk-last"}],
    "mail": {"thread": {"id": "T-77"}},
    "empty": [],
    "nothing": None,
    "text": "abc",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("conversation_id", "AAQk1"),
        ("triggers.-1.conversationId", "AAQk-last"),
        ("triggers.0.conversationId", "first"),
        ("triggers.1.conversationId", "middle"),
        ("triggers.-3.conversationId", "first"),
        ("mail.thread.id", "T-77"),
        ("mail.thread", {"id": "T-77"}),
        ("nothing", None),
    ],
)
def test_paths_resolve_to_the_raw_value(text: str, expected: object) -> None:
    assert resolve_path(path(text), VARIABLES) == expected


@pytest.mark.parametrize("index", ["-0", "01", "-01", "+1", " 1", "1 ", "1.0", "١", "0x1"])
def test_non_canonical_indices_do_not_resolve(index: str) -> None:
    values = {"items": ["a", "b", "c"]}
    assert resolve_path(SessionPath(text=f"items.{index}", segments=("items", index)), values) is UNRESOLVED


@pytest.mark.parametrize("index", ["3", "-4", "99"])
def test_out_of_range_indices_do_not_resolve(index: str) -> None:
    assert resolve_path(path(f"items.{index}"), {"items": ["a", "b", "c"]}) is UNRESOLVED


def test_any_index_into_an_empty_list_does_not_resolve() -> None:
    assert resolve_path(path("empty.0"), VARIABLES) is UNRESOLVED
    assert resolve_path(path("empty.-1"), VARIABLES) is UNRESOLVED


def test_missing_first_segment_does_not_resolve() -> None:
    assert resolve_path(path("absent"), VARIABLES) is UNRESOLVED


def test_missing_nested_key_does_not_resolve() -> None:
    assert resolve_path(path("mail.thread.subject"), VARIABLES) is UNRESOLVED


@pytest.mark.parametrize("name", ["__class__", "keys", "items", "get", "__dict__", "__len__"])
def test_inherited_names_and_methods_of_a_mapping_do_not_resolve(name: str) -> None:
    assert resolve_path(path(f"mail.{name}"), VARIABLES) is UNRESOLVED


@pytest.mark.parametrize("text", ["text.0", "text.upper", "nothing.x", "conversation_id.__class__"])
def test_segments_on_a_scalar_do_not_resolve(text: str) -> None:
    assert resolve_path(path(text), VARIABLES) is UNRESOLVED


def test_numeric_segment_on_a_mapping_is_an_exact_string_key() -> None:
    values = {"m": {"0": "zero", 1: "int key"}}
    assert resolve_path(path("m.0"), values) == "zero"
    assert resolve_path(path("m.1"), values) is UNRESOLVED


def test_list_segment_is_not_a_mapping_key() -> None:
    assert resolve_path(path("triggers.conversationId"), VARIABLES) is UNRESOLVED


def test_no_variables_means_unresolved() -> None:
    assert resolve_path(path("conversation_id"), None) is UNRESOLVED
    assert resolve_path(path("conversation_id"), {}) is UNRESOLVED


def test_unresolved_is_distinct_from_null() -> None:
    assert UNRESOLVED is not None
    assert repr(UNRESOLVED) == "UNRESOLVED"


def test_relative_paths_may_start_with_an_index() -> None:
    assert resolve_relative([{"id": "x"}], "0.id") == "x"
    assert resolve_relative([{"id": "x"}], "-1.id") == "x"
    assert resolve_relative({"a": 1}, "a..b") is UNRESOLVED
    assert resolve_relative({"a": 1}, "b") is UNRESOLVED


# --------------------------------------------------------------------------- §4.4 result rules


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("AAQk1", "AAQk1"),
        (" padded ", " padded "),
        (42, "42"),
        (-7, "-7"),
        (0, "0"),
        (42.0, "42"),
        (-3.0, "-3"),
        (1e20, "100000000000000000000"),
        (3.5, "3.5"),
        (0.1, "0.1"),
        (1e-7, "1e-07"),
    ],
)
def test_values_that_become_ids(value: object, expected: str) -> None:
    assert session_id_from_value(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "\n",
        True,
        False,
        None,
        {},
        {"id": "x"},
        [],
        ["x"],
        math.nan,
        math.inf,
        -math.inf,
        UNRESOLVED,
    ],
)
def test_values_that_leave_the_path_unresolved(value: object) -> None:
    assert session_id_from_value(value) is None


def test_resolve_session_id_combines_path_and_result_rules() -> None:
    variables = {"triggers": [{"conversationId": 1001}], "flag": True, "blank": " "}
    assert resolve_session_id(path("triggers.-1.conversationId"), variables) == "1001"
    assert resolve_session_id(path("flag"), variables) is None
    assert resolve_session_id(path("blank"), variables) is None
    assert resolve_session_id(path("triggers.1.conversationId"), variables) is None
    assert resolve_session_id(path("missing"), variables) is None
