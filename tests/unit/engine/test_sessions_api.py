"""``agent.sessions`` and the one-id-one-folder layout (BEHAVIOUR.md §3.10, §3.11, §9.2, §9.5;
seed "One id, one folder")."""

from __future__ import annotations

import json

import pytest

from archmax import (
    FilesystemStore,
    InvalidFilePathError,
    MemoryStore,
    SessionStoreCapabilityError,
    StoreCapabilities,
)
from archmax.session.ids import portable_folder_name

from ._support import CHAT, TWO, harness, wait_then


def test_get_returns_none_without_a_checkpoint_and_messages_is_empty():
    h = harness(CHAT, [])
    assert h.agent.sessions.get("nobody") is None
    assert h.agent.sessions.messages("nobody") == []


def test_a_parked_summary_carries_state_reason_resume_at_and_the_open_classification():
    h = harness(TWO, [wait_then(reason="the bank", until="2h")])
    h.agent.workflow.send("s1", "Hi", variables={"ref": "INV-1"})
    s = h.agent.sessions.get("s1")
    assert (s.status, s.classification, s.state, s.workflow_state) == (
        "awaiting_input",
        "open",
        "start",
        "start",
    )
    assert (s.wait_reason, s.resume_at) == ("the bank", "2025-01-01T02:00:00.000Z")
    assert s.exit is None and s.lease_expires_at is None
    assert s.variables["ref"] == {"value": "INV-1", "locked": True}
    assert s.usage is not None and s.usage.input_tokens > 0
    assert s.spec_hash == h.load("s1").spec_hash and s.workflow == "demo"


def test_a_finished_summary_has_no_park_fields_and_exit_only_while_failed():
    h = harness(CHAT, [{"say": "ok"}, {"call": {"archmax_raise": {"code": "nope", "reason": "cannot"}}}])
    h.agent.workflow.send("s1", "Hi")
    done = h.agent.sessions.get("s1")
    assert (done.classification, done.state, done.wait_reason, done.resume_at, done.exit) == (
        "finished",
        None,
        None,
        None,
        None,
    )
    h.agent.workflow.send("s1", "Again")
    failed = h.agent.sessions.get("s1")
    assert failed.status == "failed" and failed.exit.model_dump() == {
        "success": False,
        "code": "nope",
        "reason": "cannot",
    }


def test_list_returns_every_session_with_a_checkpoint_sorted_by_id():
    h = harness(CHAT, [{"say": "ok"}] * 3)
    for sid in ("b", "a", "c"):
        h.agent.workflow.send(sid, "Hi")
    h.agent.sessions.seed("seeded-only", {"notes.md": "x"})
    assert [s.session_id for s in h.agent.sessions.list()] == ["a", "b", "c"]


def test_list_and_delete_need_their_store_capabilities():
    h = harness(CHAT, [], store=MemoryStore(StoreCapabilities(list=False, delete=False, upload_files=True)))
    with pytest.raises(SessionStoreCapabilityError, match="list"):
        h.agent.sessions.list()
    with pytest.raises(SessionStoreCapabilityError, match="delete"):
        h.agent.sessions.delete("s1")


def test_messages_returns_the_committed_transcript_with_notes():
    h = harness(TWO, [wait_then(), {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    h.agent.workflow.deliver("s1", trigger="t")
    msgs = h.agent.sessions.messages("s1")
    assert msgs == h.load("s1").messages
    assert any(m.name == "archmax_note" for m in msgs)


def test_seed_writes_files_without_a_checkpoint_or_variable_and_overwrites():
    h = harness(CHAT, [])
    h.agent.sessions.seed(
        "s1", {"notes.md": "v1", "scratchpad/data/x.json": {"a": [1]}, "scratchpad/b.bin": b"\x00\xff"}
    )
    h.agent.sessions.seed("s1", {"notes.md": "v2"})
    assert h.store.get("s1", "notes.md") == b"v2"
    assert h.store.get("s1", "scratchpad/data/x.json") == (json.dumps({"a": [1]}, indent=2) + "\n").encode()
    assert h.store.get("s1", "scratchpad/b.bin") == b"\x00\xff"
    assert h.load("s1") is None and h.agent.sessions.get("s1") is None


@pytest.mark.parametrize(
    "path",
    [
        "checkpoints/0000000001.json",
        "artifacts/x.json",
        "../x",
        "/etc/passwd",
        "deep/file.txt",
        "scratchpad/../../x",
    ],
)
def test_seed_refuses_paths_outside_root_files_and_the_scratchpad_and_writes_nothing(path):
    h = harness(CHAT, [])
    with pytest.raises(InvalidFilePathError):
        h.agent.sessions.seed("s1", {"ok.md": "fine", path: "x"})
    assert h.store.list_files("s1", "") == []


def test_seed_of_bytes_needs_upload_files_and_names_the_path():
    h = harness(CHAT, [], store=MemoryStore(StoreCapabilities(list=True, delete=True, upload_files=False)))
    with pytest.raises(SessionStoreCapabilityError, match="scratchpad/b.bin"):
        h.agent.sessions.seed("s1", {"scratchpad/b.bin": b"\x00"})
    assert h.store.list_files("s1", "") == []


def test_delete_removes_everything_and_the_id_starts_over():
    h = harness(CHAT, [{"say": "one"}, {"say": "fresh", "expect_state": "chat"}])
    h.agent.workflow.send("s1", "Hi", variables={"x": 1})
    assert h.agent.sessions.delete("s1") is True
    assert h.agent.sessions.get("s1") is None and h.store.list_files("s1", "") == []
    assert h.agent.sessions.delete("s1") is False
    out = h.agent.workflow.send("s1", "Again")
    assert "x" not in out.variables and [m.content for m in out.messages if m.role == "user"] == ["Again"]


def test_the_filesystem_layout_is_one_folder_per_id_with_checkpoints_artifacts_and_scratchpad(tmp_path):
    root = tmp_path / "sessions"
    h = harness(TWO, [{"say": "ok"}], store=FilesystemStore(root))
    h.agent.workflow.send("chat/42", "Hi", files={"doc": {"name": "a.txt", "content": "A"}})
    folder = root / portable_folder_name("chat/42")  # §9.2's name, made case-fold-proof (issue 13 item 4)
    assert (folder / "checkpoints" / "0000000001.json").is_file()
    assert (folder / "scratchpad" / "attachments" / "a.txt").read_bytes() == b"A"
    names = sorted(p.name for p in (folder / "artifacts").iterdir())
    assert names == ["graph.json", "metadata.json", "trail.json", "trajectory.jsonl", "variables.json"]
    spec_hash = h.load("chat/42").spec_hash
    assert (root / "_specs" / f"{spec_hash}.json").is_file()


def test_artifacts_describe_the_session_after_every_operation():
    h = harness(TWO, [wait_then(), {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi", variables={"ref": "R"})
    h.agent.workflow.deliver("s1", trigger="t", variables={"got": True})

    def art(name):
        return json.loads(h.store.get("s1", f"artifacts/{name}.json"))

    assert art("trail")["steps"][-1]["reason"] == "t" and art("trail")["session_id"] == "s1"
    assert art("variables")["variables"]["got"] == {"value": True, "locked": True}
    assert set(art("metadata")) >= {"session_id", "workflow", "package_version", "spec_hash", "usage"}
    trajectory = [json.loads(line) for line in h.store.get("s1", "artifacts/trajectory.jsonl").splitlines()]
    assert any(m.get("archmax") == {"note": "event"} for m in trajectory)
    graph = art("graph")
    assert {"slug": "done", "type": "agent", "terminal": True} in graph["states"]
    assert graph["edges"] == [{"from": "start", "to": "done", "type": None}]
