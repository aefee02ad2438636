"""Files handed to a session: names, free names, text detection, seed paths and values.

Rule source: seed "Files handed to a session" (the naming table), BEHAVIOUR.md §9.5 and §3.10.
"""

from __future__ import annotations

import json
from itertools import islice

import pytest

from archmax.errors import InvalidFilePathError
from archmax.session.files import (
    ATTACHMENTS_DIR,
    attachment_path,
    candidate_names,
    check_attachment_name,
    check_seed_path,
    encode_seed_value,
    free_name,
    is_text,
    split_extension,
)


def first(name: str, n: int) -> list[str]:
    return list(islice(candidate_names(name), n))


# --------------------------------------------------------------------------- the seed's naming table


@pytest.mark.parametrize(
    ("present", "lands_at"),
    [
        (set(), "report.pdf"),
        ({"report.pdf"}, "report-1.pdf"),
        ({"report.pdf", "report-1.pdf"}, "report-2.pdf"),
    ],
)
def test_seed_naming_table(present: set[str], lands_at: str) -> None:
    assert free_name("report.pdf", present) == lands_at


def test_lowest_free_number_fills_a_gap() -> None:
    assert free_name("report.pdf", {"report.pdf", "report-2.pdf"}) == "report-1.pdf"


def test_names_compare_case_sensitively() -> None:
    assert free_name("report.pdf", {"Report.pdf", "REPORT.PDF"}) == "report.pdf"
    assert free_name("Report.pdf", {"Report.pdf", "report-1.pdf"}) == "Report-1.pdf"


def test_taken_suffixed_names_do_not_confuse_a_free_original() -> None:
    assert free_name("report.pdf", {"report-1.pdf", "report-2.pdf"}) == "report.pdf"


# --------------------------------------------------------------------------- where the suffix goes


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("report.pdf", ["report.pdf", "report-1.pdf", "report-2.pdf", "report-3.pdf"]),
        ("archive.tar.gz", ["archive.tar.gz", "archive.tar-1.gz", "archive.tar-2.gz", "archive.tar-3.gz"]),
        ("notes", ["notes", "notes-1", "notes-2", "notes-3"]),
        (".env", [".env", ".env-1", ".env-2", ".env-3"]),
        ("a.", ["a.", "a.-1", "a.-2", "a.-3"]),
        (".config.yaml", [".config.yaml", ".config-1.yaml", ".config-2.yaml", ".config-3.yaml"]),
        (
            "my report v2.final.PDF",
            ["my report v2.final.PDF", "my report v2.final-1.PDF"]
            + ["my report v2.final-2.PDF", "my report v2.final-3.PDF"],
        ),
    ],
)
def test_suffix_goes_before_the_last_extension(name: str, expected: list[str]) -> None:
    assert first(name, 4) == expected


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("archive.tar.gz", ("archive.tar", ".gz")),
        ("notes", ("notes", "")),
        (".env", (".env", "")),
        ("a.", ("a.", "")),
    ],
)
def test_extension_split(name: str, split: tuple[str, str]) -> None:
    assert split_extension(name) == split


def test_candidates_keep_counting_past_ten() -> None:
    taken = {"x.txt"} | {f"x-{n}.txt" for n in range(1, 12)}
    assert free_name("x.txt", taken) == "x-12.txt"


def test_attachment_paths_live_under_scratchpad_attachments() -> None:
    assert ATTACHMENTS_DIR == "scratchpad/attachments"
    assert attachment_path("report-1.pdf") == "scratchpad/attachments/report-1.pdf"


# --------------------------------------------------------------------------- name checks


@pytest.mark.parametrize(
    "name", ["report.pdf", ".env", "a.", "x" * 255, "é" * 127, "naïve café.txt", "..hidden", "a..b", "-"]
)
def test_acceptable_attachment_names_are_returned_unchanged(name: str) -> None:
    assert check_attachment_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".",
        "..",
        "a/b.txt",
        "/etc/passwd",
        "a\\b.txt",
        "..\\x",
        "tab\there",
        "line\nbreak",
        "nul\x00",
        "del\x7f",
        "c1\x85",
        "x" * 256,
        "é" * 128,
        "\ud800.txt",
        None,
        42,
        b"report.pdf",
    ],
)
def test_unusable_attachment_names_are_refused(name: object) -> None:
    with pytest.raises(InvalidFilePathError) as info:
        check_attachment_name(name, session_id="chat-42")
    assert info.value.path == name
    assert info.value.session_id == "chat-42"


# --------------------------------------------------------------------------- text or binary


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("", True),
        ("plain", True),
        ("with \x00 NUL in a str", True),
        (b"", True),
        (b"hello\n", True),
        ("héllo ✓".encode(), True),
        (bytearray(b"abc"), True),
        (b"\x00", False),
        (b"abc\x00def", False),
        (b"\xff\xfe\xfd", False),
        ("héllo".encode("latin-1"), False),
        (b"%PDF-1.7\n\xe2\xe3\xcf\xd3", False),
        (b"\xe2\x82", False),
    ],
)
def test_text_detection(content: object, text: bool) -> None:
    assert is_text(content) is text  # type: ignore[arg-type]


def test_text_detection_refuses_other_types() -> None:
    with pytest.raises(TypeError):
        is_text(123)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- sessions.seed paths


@pytest.mark.parametrize(
    "path",
    [
        "notes.md",
        ".env",
        "scratchpad/data.json",
        "scratchpad/attachments/report.pdf",
        "scratchpad/a/b/c.txt",
        "scratchpad/..hidden",
    ],
)
def test_root_level_files_and_scratchpad_paths_are_seedable(path: str) -> None:
    assert check_seed_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "checkpoints/0000000001.json",
        "artifacts/trail.json",
        "_specs/abc.json",
        "_specs",
        "checkpoints",
        "artifacts",
        "scratchpad",
        "large_tool_results",
        "conversation_history",
        "other/file.txt",
        "Scratchpad/file.txt",
        "../escape.txt",
        "scratchpad/../checkpoints/x.json",
        "scratchpad/./x.txt",
        "/etc/passwd",
        "/scratchpad/x.txt",
        "scratchpad\\x.txt",
        "scratchpad//x.txt",
        "scratchpad/",
        "",
        ".",
        "..",
        "scratchpad/bad\nname",
        "scratchpad/" + "x" * 256,
        None,
    ],
)
def test_internal_escaping_or_malformed_seed_paths_are_refused(path: object) -> None:
    with pytest.raises(InvalidFilePathError) as info:
        check_seed_path(path, session_id="chat-42")
    assert info.value.session_id == "chat-42"


# --------------------------------------------------------------------------- sessions.seed values


def test_str_is_written_verbatim() -> None:
    assert encode_seed_value("no newline added") == "no newline added"
    assert encode_seed_value('{"looks": "like json"}') == '{"looks": "like json"}'


def test_bytes_are_written_raw() -> None:
    assert encode_seed_value(b"\x00\xff") == b"\x00\xff"
    assert encode_seed_value(bytearray(b"ab")) == b"ab"
    assert isinstance(encode_seed_value(bytearray(b"ab")), bytes)


@pytest.mark.parametrize("value", [{"a": [1, 2], "b": None}, [1, "x"], 42, 1.5, True, None, {"é": "ü"}])
def test_other_values_are_pretty_json_with_a_final_newline(value: object) -> None:
    written = encode_seed_value(value)
    assert written == json.dumps(value, indent=2) + "\n"
    assert json.loads(written) == value


def test_nested_json_is_indented_by_two_spaces() -> None:
    assert encode_seed_value({"a": {"b": 1}}) == '{\n  "a": {\n    "b": 1\n  }\n}\n'
