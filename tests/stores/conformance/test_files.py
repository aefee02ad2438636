"""Conformance: session files, text and bytes, create-only writes, listing (BEHAVIOUR.md §9.1, §9.2, §9.5)."""

from __future__ import annotations

import pytest

from archmax.errors import InvalidFilePathError, PathExistsError

from .conftest import make_record, requires

BINARY = bytes(range(256)) + b"\x00\xff\xfe"


def test_seeded_text_reads_back_as_its_utf8_bytes(store, session_id):
    store.seed(session_id, {"scratchpad/notes.md": "héllo — wörld\n", "README.txt": ""})
    assert store.get(session_id, "scratchpad/notes.md") == "héllo — wörld\n".encode()
    assert store.get(session_id, "README.txt") == b""


def test_missing_file_reads_as_none(store, session_id):
    assert store.get(session_id, "scratchpad/absent.txt") is None
    store.seed(session_id, {"scratchpad/a/b.txt": "x"})
    assert store.get(session_id, "scratchpad/a") is None


def test_seed_overwrites_an_existing_file(store, session_id):
    store.seed(session_id, {"artifacts/trail.json": "{}"})
    store.seed(session_id, {"artifacts/trail.json": '{"steps": []}'})
    assert store.get(session_id, "artifacts/trail.json") == b'{"steps": []}'


def test_uploaded_bytes_read_back_exactly(store, session_id):
    requires(store, "upload_files")
    store.upload_files(session_id, {"scratchpad/attachments/blob.bin": BINARY})
    assert store.get(session_id, "scratchpad/attachments/blob.bin") == BINARY


def test_create_only_seed_of_an_existing_path_is_refused_and_writes_nothing(store, session_id):
    store.seed(session_id, {"scratchpad/attachments/report.pdf": "first"})
    with pytest.raises(PathExistsError) as info:
        store.seed(
            session_id,
            {"scratchpad/attachments/new.txt": "new", "scratchpad/attachments/report.pdf": "second"},
            create_only=True,
        )
    assert info.value.path == "scratchpad/attachments/report.pdf"
    assert store.get(session_id, "scratchpad/attachments/report.pdf") == b"first"
    assert store.get(session_id, "scratchpad/attachments/new.txt") is None


def test_create_only_seed_of_free_paths_writes_them(store, session_id):
    store.seed(
        session_id,
        {"scratchpad/attachments/x.txt": "a", "scratchpad/attachments/x-1.txt": "b"},
        create_only=True,
    )
    assert store.list_files(session_id, "scratchpad/attachments") == [
        "scratchpad/attachments/x-1.txt",
        "scratchpad/attachments/x.txt",
    ]


def test_create_only_upload_of_an_existing_path_is_refused(store, session_id):
    requires(store, "upload_files")
    store.upload_files(session_id, {"scratchpad/attachments/a.bin": b"\x00one"})
    with pytest.raises(PathExistsError):
        store.upload_files(session_id, {"scratchpad/attachments/a.bin": b"\x00two"}, create_only=True)
    assert store.get(session_id, "scratchpad/attachments/a.bin") == b"\x00one"


def test_list_files_lists_a_folder_recursively_and_nothing_beside_it(store, session_id):
    store.seed(
        session_id,
        {
            "scratchpad/a.txt": "1",
            "scratchpad/deep/b.txt": "2",
            "scratchpad2/c.txt": "3",
            "root.txt": "4",
            "artifacts/graph.json": "{}",
        },
    )
    assert store.list_files(session_id, "scratchpad") == ["scratchpad/a.txt", "scratchpad/deep/b.txt"]
    assert store.list_files(session_id, "scratchpad/") == ["scratchpad/a.txt", "scratchpad/deep/b.txt"]
    assert store.list_files(session_id, "nothing-here") == []


def test_list_files_without_prefix_lists_every_session_file_but_no_checkpoint(store, session_id):
    store.commit(session_id, make_record(session_id, 1, messages=2), 0)
    store.seed(session_id, {"scratchpad/a.txt": "1", "root.txt": "2"})
    assert store.list_files(session_id) == ["root.txt", "scratchpad/a.txt"]


def test_files_of_one_session_are_invisible_to_another(store, session_id):
    store.seed(session_id, {"scratchpad/mine.txt": "x"})
    other = session_id + "-other"
    assert store.get(other, "scratchpad/mine.txt") is None
    assert store.list_files(other) == []


def test_seeding_files_creates_no_checkpoint(store, session_id):
    store.seed(session_id, {"scratchpad/a.txt": "x"})
    assert store.load(session_id) is None
    assert store.head(session_id) is None


@pytest.mark.parametrize(
    "bad_path",
    [
        "",
        "/etc/passwd",
        "../escape.txt",
        "scratchpad/../../x",
        "a//b",
        "./a",
        "a\\b",
        "a\x00b",
        "a\nb",
        "checkpoints/0000000001.json",
        "checkpoints",
    ],
)
def test_unsafe_paths_are_refused_by_every_file_method_and_nothing_is_written(store, session_id, bad_path):
    with pytest.raises(InvalidFilePathError):
        store.seed(session_id, {"scratchpad/ok.txt": "fine", bad_path: "x"})
    with pytest.raises(InvalidFilePathError):
        store.get(session_id, bad_path)
    if store.capabilities.upload_files:
        with pytest.raises(InvalidFilePathError):
            store.upload_files(session_id, {bad_path: b"x"})
    if bad_path:
        with pytest.raises(InvalidFilePathError):
            store.list_files(session_id, bad_path)
    assert store.get(session_id, "scratchpad/ok.txt") is None
    assert store.list_files(session_id) == []


def test_remove_files_removes_the_named_files_only_and_skips_absent_ones(store, session_id):
    # Not part of the protocol: the engine takes back a firing's files through it when the claim fails
    # (BEHAVIOUR.md §9.5, issue 9 item 7); every bundled store has it.
    store.commit(session_id, make_record(session_id, 1), 0)
    store.seed(session_id, {"scratchpad/attachments/a.txt": "a", "scratchpad/attachments/b.txt": "b"})
    store.remove_files(session_id, ["scratchpad/attachments/a.txt", "scratchpad/attachments/gone.txt"])
    assert store.list_files(session_id, "scratchpad/attachments") == ["scratchpad/attachments/b.txt"]
    assert store.load(session_id).version == 1  # the checkpoint is untouched


@pytest.mark.parametrize("bad_path", ["../escape.txt", "checkpoints/1.json"])
def test_remove_files_refuses_an_unsafe_path_and_removes_nothing(store, session_id, bad_path):
    store.seed(session_id, {"scratchpad/attachments/a.txt": "a"})
    with pytest.raises(InvalidFilePathError):
        store.remove_files(session_id, ["scratchpad/attachments/a.txt", bad_path])
    assert store.get(session_id, "scratchpad/attachments/a.txt") == b"a"
