"""Hooks fail closed on anything they raise, ``sys.exit()`` included, and within the state's time budget.

Rule source: BEHAVIOUR.md §2.4 (a hook that raises is a terminal veto), §5.4 (``timeoutMs``), §5.7
(a terminal hook result is a turn failure), issue 21 item 5: a hook calling ``sys.exit()`` left its
session ``running``, and every later sweep re-ran it and exited, so the sessions after it were never
recovered. Run on every store: memory, filesystem and the AWS store on moto.
"""

from __future__ import annotations

import textwrap
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax import MemoryStore, SessionStatus, create_agent
from archmax.clock import FakeClock
from archmax.hosting.sweep import recover_stale
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.stores.filesystem import FilesystemStore

from .conftest import moto_env

# An ``after`` hook of the terminal state: it exits for sessions whose id starts "a-" once the test arms it (a file beside it).
EXITING_HOOK = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    def hook(ctx):
        if ctx.session_id.startswith("a-") and Path(__file__).with_name("armed").exists():
            sys.exit(3)
        return {"verdict": "ok"}
    """
)

WORKFLOW = {
    "states": {
        "work": {
            "triggers": {"manual": None},
            "after": {"script": "hooks/gate.py"},
            "instructions": "Do the work.",
        }
    }
}


@pytest.fixture(params=["memory", "filesystem", "aws"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "filesystem":
        return FilesystemStore(tmp_path / "sessions")
    request.getfixturevalue("hosting_moto_server")
    return moto_env().fresh_env().store()


def _workflow(tmp_path: Path, doc: dict[str, Any] = WORKFLOW, hook: str = EXITING_HOOK) -> Path:
    folder = tmp_path / "workflows" / "gated"
    (folder / "hooks").mkdir(parents=True)
    (folder / "workflow.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    (folder / "hooks" / "gate.py").write_text(hook, encoding="utf-8")
    return folder


class Says:
    """Answers every call with the same text."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def complete(self, request: ModelRequest) -> ModelResponse:
        return ScriptedModel([{"say": self.answer}]).complete(request)


class DiesFirst(Says):
    """A process that dies mid-turn on its first model call per session, then answers."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.died: set[str] = set()

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.session_id not in self.died:
            self.died.add(request.session_id)
            raise RuntimeError("the process stopped")
        return super().complete(request)


def test_a_hook_calling_sys_exit_fails_the_turn_closed_and_leaves_nothing_running(store: Any, tmp_path: Path) -> None:
    folder = _workflow(tmp_path)
    (folder / "hooks" / "armed").write_text("", encoding="utf-8")
    agent = create_agent(folder, store, Says("Done."), clock=FakeClock())
    outcome = agent.workflow.send("a-1", "Please do it.")  # the attacker's side: the hook exits
    assert outcome.kind == "rejected" and "SystemExit" in (outcome.rejected or "")
    assert store.load("a-1").status == SessionStatus.REJECTED and store.load("a-1").lease is None
    legit = agent.workflow.send("b-1", "Please do it.")  # the legitimate side: same hook answers ok
    assert legit.kind == "completed" and legit.reply == "Done."


def test_the_sweep_goes_past_a_session_whose_hook_exits_and_recovers_the_next(store: Any, tmp_path: Path) -> None:
    folder = _workflow(tmp_path)
    clock = FakeClock()
    agent = create_agent(folder, store, DiesFirst("Recovered."), clock=clock)
    for sid in ("a-1", "b-2"):  # both turns die mid-way: running, with a lease nobody holds
        with pytest.raises(RuntimeError):
            agent.workflow.send(sid, "Please do it.")
        assert store.load(sid).status == SessionStatus.RUNNING
    (folder / "hooks" / "armed").write_text("", encoding="utf-8")
    clock.advance(timedelta(minutes=16))  # the 900 s leases expired
    results = recover_stale(agent)
    assert results == [("a-1", "rejected"), ("b-2", "completed")]
    assert store.load("a-1").status == SessionStatus.REJECTED
    assert store.load("b-2").status == SessionStatus.COMPLETED
    assert recover_stale(agent) == []  # nothing is left running for the next sweep to re-run


RUBRIC = {
    "states": {
        "work": {
            "triggers": {"manual": None},
            "budget": {"timeoutMs": 200},
            "after": {"rubric": {"instructions": "The answer names an order number."}},
        }
    }
}


class HangingGrader:
    """The session's model answers at once; the rubric's grader (a request with no tools) hangs."""

    def __init__(self, answer: str, verdict: str | None = None) -> None:
        self.answer, self.verdict = answer, verdict
        self.release = threading.Event()

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.tools or request.state_block:  # the session's own call
            return Says(self.answer).complete(request)
        if self.verdict is not None:
            return Says(self.verdict).complete(request)
        self.release.wait(30)  # hangs until the test lets it go
        return Says('{"verdict": "ok"}').complete(request)


def test_a_hanging_rubric_grader_fails_the_turn_within_the_states_time_budget(store: Any, tmp_path: Path) -> None:
    folder = _workflow(tmp_path, RUBRIC, hook="")
    model = HangingGrader("ORD-1 ships tomorrow.")
    agent = create_agent(folder, store, model, clock=FakeClock())
    done = threading.Event()
    outcomes: list[Any] = []

    def run() -> None:
        outcomes.append(agent.workflow.send("a-1", "Where is my order?"))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    finished = done.wait(10)
    model.release.set()
    assert finished, "the hanging grader held the turn"
    outcome = outcomes[0]
    assert outcome.kind == "rejected" and "timeoutMs: 200" in (outcome.rejected or "")
    assert store.load("a-1").status == SessionStatus.REJECTED


def test_a_rubric_grader_answering_within_the_budget_is_obeyed(store: Any, tmp_path: Path) -> None:
    folder = _workflow(tmp_path, RUBRIC, hook="")
    agent = create_agent(folder, store, HangingGrader("ORD-1 ships tomorrow.", '{"verdict": "ok"}'), clock=FakeClock())
    outcome = agent.workflow.send("a-1", "Where is my order?")
    assert outcome.kind == "completed" and outcome.reply == "ORD-1 ships tomorrow."
