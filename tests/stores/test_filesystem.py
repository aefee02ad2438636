"""FilesystemStore specifics: the §9.2 layout on disk, immutable chunks, crash repair, paths, processes.

Rule source: BEHAVIOUR.md §9.2 (layout), §9.3 (checkpoints), §4.1 (ids never become paths
unchecked), DESIGN.md §3 (a file lock so two processes on one machine are safe).
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
from pathlib import Path

import pytest

from archmax.errors import CommitConflictError, InvalidFilePathError, InvalidSessionIdError
from archmax.session.ids import folder_name, portable_folder_name
from archmax.stores.base import Capability, SessionStore
from archmax.stores.codec import chunk_bytes, chunk_counts, chunk_from_bytes, decode_chunks, encode_chunk
from archmax.stores.filesystem import FilesystemStore

from .conformance.conftest import make_record

HASH = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def store(root: Path) -> FilesystemStore:
    return FilesystemStore(root)


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_filesystem_store_satisfies_the_protocol_with_every_capability(store):
    assert isinstance(store, SessionStore)
    assert store.capabilities == {Capability.LIST, Capability.DELETE, Capability.UPLOAD_FILES, Capability.APPEND_TEXT}
    assert store.location.root == store.root


def test_layout_on_disk_is_the_one_of_section_9_2(store, root):
    store.commit("chat-42", make_record("chat-42", 1, messages=1), 0)
    store.commit("chat-42", make_record("chat-42", 2, messages=2), 1)
    store.seed("chat-42", {"scratchpad/notes.md": "n", "artifacts/trail.json": "{}", "brief.txt": "b"})
    store.upload_files("chat-42", {"scratchpad/attachments/a.pdf": b"%PDF\x00"})
    store.put_spec(HASH, {"name": "support-inbox"})
    files = [f for f in _tree(root) if not f.startswith(".")]
    assert files == [
        f"_specs/{HASH}.json",
        "chat-42/artifacts/trail.json",
        "chat-42/brief.txt",
        "chat-42/checkpoints/0000000001.json",
        "chat-42/checkpoints/0000000002.json",
        "chat-42/checkpoints/head.json",
        "chat-42/scratchpad/attachments/a.pdf",
        "chat-42/scratchpad/notes.md",
    ]


def test_spec_snapshot_is_pretty_json(store, root):
    store.put_spec(HASH, {"name": "support-inbox", "states": {"a": {}}})
    text = (root / "_specs" / f"{HASH}.json").read_text("utf-8")
    assert text.startswith("{\n  ") and text.endswith("\n")
    assert json.loads(text) == {"name": "support-inbox", "states": {"a": {}}}


@pytest.mark.parametrize("session_id", ["mail/thread\\x", ".hidden", "100%", "ü" * 150, "x" * 300])
def test_session_folder_is_the_portable_name_of_the_id(store, root, session_id):
    store.commit(session_id, make_record(session_id, 1), 0)
    folder = portable_folder_name(session_id)
    assert (root / folder / "checkpoints" / "0000000001.json").is_file()
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == [folder]
    assert store.list() == [session_id]


def test_checkpoint_files_are_codec_chunks_and_never_change(store, root):
    store.commit("s", make_record("s", 1, messages=3), 0)
    first = (root / "s/checkpoints/0000000001.json").read_bytes()
    store.commit("s", make_record("s", 2, messages=4), 1)
    assert (root / "s/checkpoints/0000000001.json").read_bytes() == first
    chunks = [chunk_from_bytes((root / f"s/checkpoints/000000000{v}.json").read_bytes()) for v in (1, 2)]
    assert chunks[1]["full"] is False and len(chunks[1]["messages"]) == 1
    assert decode_chunks(chunks) == make_record("s", 2, messages=4)


def test_bytes_written_per_commit_do_not_grow_with_the_transcript(store, root):
    for v in range(1, 401):
        store.commit("long", make_record("long", v, messages=v), v - 1)

    def size(v: int) -> int:
        return (root / f"long/checkpoints/{v:010d}.json").stat().st_size

    assert size(400) < size(10) * 1.1
    assert store.load("long") == make_record("long", 400, messages=400)


def test_another_store_on_the_same_folder_sees_everything(store, root):
    store.commit("s", make_record("s", 1, messages=2), 0)
    store.seed("s", {"scratchpad/a.txt": "x"})
    store.put_spec(HASH, {"k": 1})
    again = FilesystemStore(root)
    assert again.load("s") == make_record("s", 1, messages=2)
    assert again.get("s", "scratchpad/a.txt") == b"x"
    assert again.get_spec(HASH) == {"k": 1}


def test_missing_head_cache_is_rebuilt_from_the_checkpoints(store, root):
    for v in (1, 2, 3):
        store.commit("s", make_record("s", v, messages=v), v - 1)
    (root / "s/checkpoints/head.json").unlink()
    assert store.head("s").version == 3
    assert store.load("s") == make_record("s", 3, messages=3)
    with pytest.raises(CommitConflictError):
        store.commit("s", make_record("s", 3), 2)
    store.commit("s", make_record("s", 4, messages=4), 3)
    assert store.load("s") == make_record("s", 4, messages=4)


def test_chunk_written_by_a_writer_that_crashed_before_its_head_update_is_still_the_latest(store, root):
    store.commit("s", make_record("s", 1, messages=1), 0)
    stale_head = (root / "s/checkpoints/head.json").read_bytes()
    store.commit("s", make_record("s", 2, messages=2), 1)
    (root / "s/checkpoints/head.json").write_bytes(stale_head)  # as if the process died after the chunk
    assert store.head("s").version == 2
    assert store.load("s") == make_record("s", 2, messages=2)
    with pytest.raises(CommitConflictError):
        store.commit("s", make_record("s", 2), 1)


def test_a_version_already_on_disk_cannot_be_created_again(store, root):
    store.commit("s", make_record("s", 1, messages=1), 0)
    chunk = encode_chunk(
        make_record("s", 2, messages=9),
        chunk_counts(chunk_from_bytes((root / "s/checkpoints/0000000001.json").read_bytes())),
    )
    (root / "s/checkpoints/0000000002.json").write_bytes(chunk_bytes(chunk))  # another writer's version 2
    with pytest.raises(CommitConflictError):
        store.commit("s", make_record("s", 2, messages=2), 1)
    assert store.load("s") == make_record("s", 2, messages=9)


def test_folders_without_checkpoints_are_not_sessions(store, root):
    store.seed("files-only", {"scratchpad/a.txt": "x"})
    (root / "stray").mkdir()
    store.commit("real", make_record("real", 1), 0)
    assert store.list() == ["real"]


def test_list_reads_the_id_stored_in_the_checkpoint_not_the_folder_name(store, root):
    long_id = "thread-" + "y" * 250
    store.commit(long_id, make_record(long_id, 1), 0)
    assert "%%" in folder_name(long_id) and "%%" in portable_folder_name(long_id)
    assert store.list() == [long_id]
    assert store.due("2030-01-01T00:00:00.000Z") == []


def test_symlink_leading_out_of_the_session_folder_is_refused(store, root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    store.seed("s", {"scratchpad/keep.txt": "x"})
    os.symlink(outside, root / "s" / "scratchpad" / "out")
    with pytest.raises(InvalidFilePathError):
        store.get("s", "scratchpad/out/secret.txt")
    with pytest.raises(InvalidFilePathError):
        store.seed("s", {"scratchpad/out/planted.txt": "x"})
    with pytest.raises(InvalidFilePathError):
        store.list_files("s", "scratchpad/out")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("bad_id", ["..", "a/../../b", "_specs", "", "x\x00"])
def test_invalid_id_creates_nothing_on_disk(store, root, bad_id):
    before = _tree(root)
    for call in (
        lambda: store.seed(bad_id, {"a.txt": "x"}),
        lambda: store.upload_files(bad_id, {"a.bin": b"x"}),
        lambda: store.commit(bad_id, make_record("placeholder", 1), 0),
        lambda: store.delete(bad_id),
    ):
        with pytest.raises(InvalidSessionIdError):
            call()
    assert _tree(root) == before
    assert not root.exists()  # not even the store's own .locks and .tmp: they come with the first write


def test_a_store_never_written_reads_as_empty_and_creates_nothing(store, root):
    assert (store.list(), store.due("2030-01-01T00:00:00.000Z"), store.outbox_pending()) == ([], [], [])
    assert store.load("s") is None and store.head("s") is None and store.get_spec(HASH) is None
    assert not root.exists()
    assert store.delete("s") is False  # nothing to delete: no lock file either (attack32)
    assert not root.exists()
    store.seed("s", {"a.txt": "x"})  # the first write creates the store's own folders
    assert sorted(p.name for p in root.iterdir()) == [".locks", ".tmp", "s"]


def test_writes_leave_no_temporary_files_behind(store, root):
    store.commit("s", make_record("s", 1), 0)
    store.seed("s", {"a.txt": "x"}, create_only=True)
    store.upload_files("s", {"b.bin": b"\x00"})
    store.put_spec(HASH, {})
    store.put_spec(HASH, {})
    store.delete("s")
    assert list((root / ".tmp").iterdir()) == []


def test_delete_removes_the_session_folder(store, root):
    store.commit("s", make_record("s", 1), 0)
    store.seed("s", {"scratchpad/a.txt": "x"})
    assert store.delete("s") is True
    assert not (root / "s").exists()


def test_processes_racing_to_commit_the_same_version_have_exactly_one_winner(root, monkeypatch):
    # spawn children import the worker by module name: put its folder on the path they inherit.
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    worker = importlib.import_module("fs_race_worker")
    FilesystemStore(root)
    ctx = multiprocessing.get_context("spawn")
    n = 4
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=worker.commit_once, args=(str(root), "raced", i, barrier, results)) for i in range(n)]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in range(n))
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(winners) == 1
    assert sorted(outcomes.values()) == ["conflict"] * (n - 1) + ["won"]
    assert FilesystemStore(root).load("raced") == worker.record_of("raced", winners[0])


def test_a_head_json_written_before_heads_carried_parked_at_still_counts_for_the_oldest_park(
    store: FilesystemStore, root: Path
) -> None:
    """A park committed by an older version has a ``head.json`` without ``parked_at`` (BEHAVIOUR.md §5.11)."""
    store.commit("old-park", make_record("old-park", 1, status="awaiting_input"), 0)
    head_file = root / folder_name("old-park") / "checkpoints" / "head.json"
    doc = json.loads(head_file.read_bytes())
    del doc["head"]["parked_at"]
    head_file.write_text(json.dumps(doc), encoding="utf-8")

    assert store.oldest_park("support-inbox") == ("old-park", "2025-01-01T00:00:00.000Z")
    assert store.head("old-park").parked_at == "2025-01-01T00:00:00.000Z"


@pytest.mark.parametrize("removed", [".tmp", ".locks", ""], ids=["tmp", "locks", "whole-store"])
def test_a_store_folder_deleted_by_hand_under_a_live_instance_is_made_again_by_the_next_write(store, root, removed):
    """``archmax serve`` keeps one store; a user who ``rm -rf`` its folder (or ``.tmp``) then writes again (attack32).

    The store makes its own folders once per instance (c103dec); one removed since must not fail
    every later write with ``No such file or directory`` until a restart.
    """
    import shutil

    store.commit("a", make_record("a", 1), 0)
    shutil.rmtree(root / removed)
    store.commit("b", make_record("b", 1), 0)
    store.commit("b", make_record("b", 2), 1)
    store.seed("b", {"notes.txt": "kept"})
    assert store.head("b").version == 2 and store.get("b", "notes.txt") == b"kept"
    assert [p.name for p in (root / ".tmp").iterdir()] == []  # no temporary file left behind
