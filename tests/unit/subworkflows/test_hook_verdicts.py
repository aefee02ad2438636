"""Issue 22 item 5: a hook's verdict at an advance is committed before anything that can crash after it.

A custom ``after`` hook on ``work`` "opens a ticket" each time it runs. The process dies in the model
call after the advance it allowed; ``recover`` continues from the hook's verdict, so the ticket is
opened once. A ``correct`` spent before a crash stays spent: a script hook with ``max_iterations: 1``
that always corrects is terminal at its second ``correct``, the first one given before the crash.

Rule source: BEHAVIOUR.md §9.3 ("a hook's verdict" is a commit point; a crash repeats at most model
calls and control tools since the last commit), §2.4 (budgets are checkpointed), §3.12. Every store kind.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax import create_agent
from archmax.models.base import ModelRequest, ModelResponse
from archmax.session.records import SessionStatus, ToolCall
from archmax.spec import workflow_from_dict
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import DieAfterCommitWhere, Env, ProcessDied

LEASE = 60.0
TICKETED = {
    "extensions": {"hooks": ["ticket"]},
    "states": {
        "work": {
            "triggers": {"manual": None},
            "after": {"ticket": {"queue": "refunds"}},
            "transitions": [{"to": "done", "description": "The work is done."}],
        },
        "done": None,
    },
}


class Advancer:
    """In ``work`` it advances to ``done``; in ``done`` it answers.

    ``die_at`` kills the process at call n (1-based): its store (``mortal``) refuses every later write,
    as a dead process writes nothing more.
    """

    def __init__(self, die_at: int | None = None, mortal: DieAfterCommitWhere | None = None) -> None:
        self.die_at = die_at
        self.mortal = mortal
        self.calls = 0

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == self.die_at:
            assert self.mortal is not None
            self.mortal.dead = True
            raise ProcessDied(f"killed at model call {self.calls}")
        if request.state == "work":
            args = {"to": "done", "reason": "handled"}
            return ModelResponse(tool_calls=[ToolCall(id=f"a{self.calls}", name="archmax_advance", args=args)])
        return ModelResponse(text="All done.")


def _mortal(env: Env) -> DieAfterCommitWhere:
    return DieAfterCommitWhere(env.store, lambda record: False)


def _agent(env: Env, model: Any, tickets: list[str], verdicts: list[dict], store: Any = None) -> Any:
    def ticket(ctx: Any, config: dict) -> dict:
        tickets.append(f"{config['queue']}#{len(tickets) + 1}")  # a side effect outside the record
        return verdicts[min(len(tickets), len(verdicts)) - 1]

    spec = workflow_from_dict(TICKETED, "ticketed")
    return create_agent(spec, store or env.store, model, clock=env.clock, lease_ttl_s=LEASE, hooks={"ticket": ticket})


def test_recover_after_a_crash_in_the_next_model_call_does_not_run_the_after_hook_again(env: Env) -> None:
    tickets: list[str] = []
    mortal = _mortal(env)
    with pytest.raises(ProcessDied):
        _agent(env, Advancer(2, mortal), tickets, [{"verdict": "ok"}], mortal).workflow.send("t1", "Refund ORD-1")
    assert tickets == ["refunds#1"]
    env.clock.advance(timedelta(seconds=LEASE + 1))

    out = _agent(env, Advancer(), tickets, [{"verdict": "ok"}]).workflow.recover("t1")

    assert out is not None and (out.kind, out.state, out.reply) == ("completed", "done", "All done.")
    assert tickets == ["refunds#1"]  # the verdict was on record: the hook did not run again
    hooks = [s for s in env.other_store().load("t1").trail if s.kind == "hook"]
    assert [(s.state, s.phase, s.verdict) for s in hooks] == [("work", "after", "ok")]


SCRIPT = """\
from pathlib import Path

LOG = Path(__file__).with_name("tickets.log")


def hook(ctx):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(ctx.session_id + "\\n")
    return {"verdict": "correct", "reason": "name the order id"}
"""


def _script_workflow(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "corrected"
    (folder / "hooks").mkdir(parents=True)
    (folder / "hooks" / "ticket.py").write_text(SCRIPT, encoding="utf-8")
    doc = json.loads(json.dumps(TICKETED))
    del doc["extensions"]
    doc["states"]["work"]["after"] = {"script": "hooks/ticket.py", "max_iterations": 1}
    (folder / "workflow.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return folder, folder / "hooks" / "tickets.log"


def test_a_correct_spent_before_a_crash_is_remembered_by_the_recovered_turn(env: Env, tmp_path: Path) -> None:
    folder, log = _script_workflow(tmp_path)
    mortal = _mortal(env)
    with pytest.raises(ProcessDied):
        create_agent(folder, mortal, Advancer(2, mortal), clock=env.clock, lease_ttl_s=LEASE).workflow.send(
            "t2", "Refund ORD-2"
        )
    assert log.read_text().splitlines() == ["t2"]
    env.clock.advance(timedelta(seconds=LEASE + 1))

    out = create_agent(folder, env.store, Advancer(), clock=env.clock, lease_ttl_s=LEASE).workflow.recover("t2")

    # The one allowed correction was spent before the crash: the next one is terminal (§2.4).
    assert out is not None and out.status == SessionStatus.REJECTED
    assert "exhausted its correction budget (max_iterations: 1)" in (out.rejected or "")
    assert log.read_text().splitlines() == ["t2", "t2"]
