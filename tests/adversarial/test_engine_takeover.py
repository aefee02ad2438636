"""Adversarial: a writer that outlives its lease, and a writer whose process dies mid-turn.

Rule sources: BEHAVIOUR.md §3.12 (a commit after a takeover raises SessionNotResumableError and the
writer "stops without writing"; the winner answers unanswered calls with the interrupted result and
opens a turn with recovered=True), §9.5 (artifacts describe the session), §9.3 (a crash loses at most
the step in flight).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from archmax import FilesystemStore, create_agent
from archmax.clock import FakeClock
from archmax.engine.claims import INTERRUPTED
from archmax.errors import SessionNotResumableError
from archmax.models.base import ModelRequest, ModelResponse
from archmax.session.records import SessionStatus
from archmax.spec import workflow_from_dict

WORKER = Path(__file__).with_name("_worker.py")
CHAT = {"states": {"chat": {"triggers": {"manual": None}}}}
TOOLED = {"states": {"chat": {"triggers": {"manual": None}, "tools": {"allow": ["charge_card"]}}}}


class SlowThenTakenOver:
    """The first call outlives the lease; while it "runs", another host takes the session over."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls = 0
        self.other = None

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == 1:
            self.clock.advance(timedelta(seconds=901))
            self.takeover = self.other.workflow.send("z", "are you still there?")
            return ModelResponse(text="stale answer from the first writer")
        return ModelResponse(text="fresh answer after the takeover")


def test_a_writer_that_outlived_its_lease_writes_nothing_after_the_takeover_artifacts_included(tmp_path):
    store = FilesystemStore(tmp_path)
    clock = FakeClock("2025-01-01T00:00:00.000Z")
    model = SlowThenTakenOver(clock)
    first = create_agent(workflow_from_dict(CHAT, "demo"), store, model, clock=clock)
    model.other = create_agent(workflow_from_dict(CHAT, "demo"), store, model, clock=clock)

    with pytest.raises(SessionNotResumableError):
        first.workflow.send("z", "hello")

    assert model.takeover.recovered is True
    rec = store.load("z")
    assert rec.status == SessionStatus.COMPLETED
    assert rec.messages[-1].content == "fresh answer after the takeover"
    assert all("stale" not in m.content for m in rec.messages)
    trajectory = [json.loads(line) for line in store.get("z", "artifacts/trajectory.jsonl").splitlines()]
    assert trajectory[-1]["content"] == "fresh answer after the takeover"
    assert [m["content"] for m in trajectory] == [m.content for m in rec.messages]


# --------------------------------------------------------------------------- a process killed mid-turn


class _Finish:
    def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="I could not confirm the charge; please check before retrying.")


def test_a_process_killed_mid_tool_call_is_taken_over_after_expiry_with_the_call_answered_interrupted(
    tmp_path,
):
    proc = subprocess.run([sys.executable, str(WORKER), "die-mid-tool", str(tmp_path)], timeout=120, check=False)
    assert proc.returncode == 17

    def charge_card(amount: int) -> str:
        """Charge the card."""
        raise AssertionError("the interrupted call must not be re-run")

    store = FilesystemStore(tmp_path)
    crashed = store.load("z")
    assert crashed.status == SessionStatus.RUNNING and crashed.lease is not None
    assert crashed.messages[-1].tool_calls[0].name == "charge_card"  # committed before the tool ran

    # Within the lease the session is still held by the dead writer.
    clock = FakeClock("2025-01-01T00:10:00.000Z")
    agent = create_agent(workflow_from_dict(TOOLED, "demo"), store, _Finish(), clock=clock, tools=[charge_card])
    before = crashed.model_dump_json()
    with pytest.raises(SessionNotResumableError):
        agent.workflow.send("z", "hello?")
    assert store.load("z").model_dump_json() == before

    clock.advance(timedelta(minutes=6))  # past the 900 s lease
    out = agent.workflow.send("z", "hello?")
    assert out.recovered is True and out.kind == "completed"
    results = [m for m in out.messages if m.role == "tool" and m.tool_call_id == "call_1"]
    assert [(r.status, r.content) for r in results] == [("error", INTERRUPTED)]
