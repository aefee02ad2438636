"""Artifacts are views of the checkpoint (BEHAVIOUR.md §9.5; issue 10 "no artifact writes on the hot path").

On a local store they are current when an operation ends, written once, only where they changed,
the trajectory appended line by line; ``sessions.artifact`` renders any of them from the checkpoint
on any store. The AWS side (no artifact objects at all) is in tests/stores/aws/test_aws_artifacts.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from archmax import FilesystemStore, MemoryStore
from archmax.errors import UnknownArtifactError

from ._support import CHAT, TWO, harness, wait_then


class WritesRecorded(MemoryStore):
    """A real MemoryStore that also lists every artifact path it was asked to write, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.seeded: list[str] = []
        self.appended: list[str] = []
        self.specs: list[str] = []

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        self.seeded.extend(p for p in files if p.startswith("artifacts/"))
        super().seed(session_id, files, create_only)

    def append_text(self, session_id: str, path: str, text: str) -> None:
        self.appended.append(path)
        super().append_text(session_id, path, text)

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        self.specs.append(spec_hash)
        return super().put_spec(spec_hash, doc)


def _lines(store: Any, sid: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in store.get(sid, "artifacts/trajectory.jsonl").splitlines()]


def _parks(n: int) -> list[dict[str, Any]]:
    return [wait_then(say=f"waiting {i}") for i in range(n)]


def test_each_operation_writes_only_the_artifacts_that_changed_and_appends_the_trajectory():
    store = WritesRecorded()
    h = harness(TWO, _parks(4), store=store)
    h.agent.workflow.send("s1", "Hi")
    first = list(store.seeded)
    assert sorted(first) == sorted(
        [
            "artifacts/trail.json",
            "artifacts/variables.json",
            "artifacts/metadata.json",
            "artifacts/graph.json",
            "artifacts/trajectory.jsonl",
        ]
    )
    store.seeded.clear()
    for i in range(3):
        h.agent.workflow.deliver("s1", trigger="t", message=f"again {i}")
    assert "artifacts/graph.json" not in store.seeded  # the graph is per spec, not per operation
    assert "artifacts/trajectory.jsonl" not in store.seeded  # never rewritten ...
    assert store.appended == ["artifacts/trajectory.jsonl"] * 3  # ... only appended, once per operation
    assert [m.get("content", "") for m in _lines(store, "s1")] == [m.content for m in h.load("s1").messages]


def test_the_trajectory_is_rewritten_whole_when_another_writer_moved_the_session_on(tmp_path):
    root = tmp_path / "sessions"
    a = harness(TWO, _parks(3), store=FilesystemStore(root))
    b = harness(TWO, _parks(3), store=FilesystemStore(root))  # a second process on the same folder
    a.agent.workflow.send("s1", "Hi")
    b.agent.workflow.deliver("s1", trigger="t", message="from b")
    a.agent.workflow.deliver("s1", trigger="t", message="from a")  # a's memory of s1 is stale now
    messages = a.load("s1").messages
    assert [m.get("content", "") for m in _lines(a.store, "s1")] == [m.content for m in messages]
    assert any(m.content == "from b" for m in messages)


def test_sessions_artifact_renders_each_view_from_the_checkpoint():
    h = harness(TWO, [wait_then(), {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi", variables={"ref": "R"})
    h.agent.workflow.deliver("s1", trigger="t", variables={"got": True})
    for name in ("trail", "variables", "metadata", "graph"):
        assert h.agent.sessions.artifact("s1", name) == h.store.get("s1", f"artifacts/{name}.json").decode()
    trajectory = h.agent.sessions.artifact("s1", "trajectory")
    assert trajectory == h.store.get("s1", "artifacts/trajectory.jsonl").decode()
    assert len(trajectory.splitlines()) == len(h.load("s1").messages)
    assert json.loads(h.agent.sessions.artifact("s1", "variables"))["variables"]["got"] == {
        "value": True,
        "locked": True,
    }


def test_sessions_artifact_refuses_an_unknown_name_and_answers_none_for_an_unknown_session():
    h = harness(CHAT, [{"say": "Done."}])
    h.agent.workflow.send("s1", "Hi")
    with pytest.raises(UnknownArtifactError) as caught:
        h.agent.sessions.artifact("s1", "checkpoints")
    assert "trajectory" in str(caught.value)
    assert h.agent.sessions.artifact("nobody", "trail") is None


def test_a_spec_snapshot_is_written_once_per_process_not_once_per_new_session():
    store = WritesRecorded()
    h = harness(CHAT, [{"say": "Done."}] * 3, store=store)
    for sid in ("s1", "s2", "s3"):
        h.agent.workflow.send(sid, "Hi")
    assert store.specs == [h.load("s1").spec_hash]
    assert {h.load(s).spec_hash for s in ("s1", "s2", "s3")} == {store.specs[0]}
