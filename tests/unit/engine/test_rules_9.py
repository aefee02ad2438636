"""Rules of BEHAVIOUR.md §9 (checkpoint record, commit points, spec snapshots, artifacts) that the rule
audit (tests/RULES.md) found without a test.

The failing stores below are fakes: a real :class:`MemoryStore` whose one write path raises, the way a
full disk or a read-only bucket would.
"""

from __future__ import annotations

import json
from typing import Any

from archmax import HostTool, MemoryStore
from archmax.models.scripted import ScriptedModel

from ._support import CHAT, HUMAN, harness, results_of

CHECKPOINT_FIELDS = [
    "session_id",
    "version",
    "workflow",
    "spec_hash",
    "status",
    "position",
    "entry_state",
    "trigger",
    "messages",
    "variables",
    "trail",
    "pending_decision",
    "pending_input",
    "park_phase",
    "reply_only",
    "park_counts",
    "state_turns",
    "decision_count",
    "rejected",
    "raised",
    "hook_iterations",
    "before_done",
    "usage",
    "lease",
    "created_at",
    "updated_at",
]


def test_a_stored_checkpoint_carries_every_field_of_the_record():
    h = harness(CHAT, [{"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    dumped = json.loads(h.load("s1").model_dump_json())
    assert [f for f in CHECKPOINT_FIELDS if f not in dumped] == []
    assert (dumped["session_id"], dumped["workflow"], dumped["entry_state"]) == ("s1", "demo", "chat")


# ------------------------------------------------------------------------------ §9.3 commit points


def test_each_model_answer_and_each_tool_batch_is_committed_before_the_next_step_runs():
    seen: list[dict[str, Any]] = []
    holder: dict[str, Any] = {}

    def probe(n: int) -> str:
        rec = holder["h"].load("s1")
        seen.append(
            {
                "version": rec.version,
                "status": rec.status,
                "calls": [c.args.get("n") for m in rec.messages if m.role == "assistant" for c in m.tool_calls],
                "results": [m.content for m in results_of(rec.messages, "probe")],
            }
        )
        return f"probed {n}"

    h = harness(
        {"tools": {"allow_always": ["probe"]}, **CHAT},
        [{"call": {"probe": {"n": 1}}}, {"call": {"probe": {"n": 2}}}, {"say": "done"}],
        tools=[HostTool("probe", probe)],
    )
    holder["h"] = h
    h.agent.workflow.send("s1", "Hi")
    first, second = seen
    # the answer holding call 1 was committed before call 1 ran
    assert first["calls"] == [1] and first["results"] == [] and first["status"] == "running"
    # call 1's result (the tool batch) and the answer holding call 2 were committed before call 2 ran
    assert second["calls"] == [1, 2] and second["results"] == ["probed 1"]
    assert second["version"] >= first["version"] + 2
    final = h.load("s1")
    assert final.status == "completed" and final.version > second["version"]


def test_the_turn_opening_is_committed_before_the_first_model_call():
    versions: list[int] = []
    holder: dict[str, Any] = {}

    class Peek:
        def complete(self, request):
            rec = holder["h"].load("s1")
            versions.append(rec.version)
            assert rec.status == "running" and rec.messages[-1].content == "Hi"
            return holder["inner"].complete(request)

    holder["inner"] = ScriptedModel([{"say": "ok"}])
    h = harness(CHAT, model=Peek())
    holder["h"] = h
    assert h.agent.workflow.send("s1", "Hi").kind == "completed"
    assert versions and versions[0] >= 1


# ------------------------------------------------------------------------------ §9.4 snapshots


class NoSpecsStore(MemoryStore):
    """A store whose spec snapshots cannot be written."""

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        raise OSError("disk full")


def test_a_spec_snapshot_that_cannot_be_written_warns_and_never_fails_the_turn():
    h = harness(CHAT, [{"say": "Answered anyway."}], store=NoSpecsStore())
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.reply) == ("completed", "Answered anyway.")
    (warning,) = h.events_of("warning")
    assert warning["scope"] == "spec_snapshot" and "disk full" in warning["message"]
    assert h.load("s1").spec_hash == h.agent.spec.spec_hash


def test_a_changed_spec_runs_the_next_turn_and_records_and_snapshots_its_new_hash():
    store = MemoryStore()
    old = harness(CHAT, [{"say": "Under the old spec."}], store=store)
    old.agent.workflow.send("s1", "Hi")
    old_hash = store.load("s1").spec_hash
    new = harness({"instructions": "Be brief.", **CHAT}, [{"say": "Under the new spec."}], store=store, clock=old.clock)
    out = new.agent.workflow.send("s1", "Again")
    new_hash = store.load("s1").spec_hash
    assert out.reply == "Under the new spec."
    assert new_hash != old_hash and new_hash == new.agent.spec.spec_hash
    assert store.get_spec(old_hash) is not None
    assert store.get_spec(new_hash)["instructions"] == "Be brief."
    assert "Be brief." in new.model.requests[0].system


# ------------------------------------------------------------------------------ §9.5 artifacts


class NoArtifactsStore(MemoryStore):
    """A store that refuses writes under ``artifacts/`` and takes every other file."""

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        if any(path.startswith("artifacts/") for path in files):
            raise OSError("artifacts are read-only")
        super().seed(session_id, files, create_only)


def test_artifacts_that_cannot_be_written_warn_and_never_fail_the_operation():
    h = harness(CHAT, [{"say": "Done."}], store=NoArtifactsStore())
    out = h.agent.workflow.send("s1", "Hi", files={"doc": {"name": "a.txt", "content": "A"}})
    assert (out.kind, out.reply) == ("completed", "Done.")
    assert h.store.get("s1", "scratchpad/attachments/a.txt") == b"A"
    assert h.store.list_files("s1", "artifacts/") == []
    scopes = [e["scope"] for e in h.events_of("warning")]
    assert scopes == ["artifacts"]


def test_artifacts_are_rewritten_by_a_reply_and_a_decision_too():
    h = harness(
        HUMAN,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "r"}}},
            {"say": "Please review."},
            {"say": "Soon."},
            {"say": "Approved.", "expect_state": "approved"},
        ],
    )
    h.agent.workflow.send("s1", "Refund")

    def trajectory_length() -> int:
        return len(h.store.get("s1", "artifacts/trajectory.jsonl").splitlines())

    after_send = trajectory_length()
    h.agent.workflow.reply("s1", "Any news?")
    after_reply = trajectory_length()
    h.agent.workflow.decide("s1", to="approved")
    trail = json.loads(h.store.get("s1", "artifacts/trail.json"))["steps"]
    assert after_send < after_reply < trajectory_length()
    assert trail[-1]["kind"] == "human" and trail[-1]["to"] == "approved"
