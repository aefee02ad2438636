"""Worker processes for the adversarial tests: run as ``python _worker.py <job> <store root> [args...]``.

Each job is one real process acting on a shared ``FilesystemStore``, so cross-process races and
crashes are exercised with the file locks and create-only links the store really uses. Clocks are
``FakeClock`` instants passed on the command line (no sleeping, no wall time).

Jobs:
    die-mid-tool <root>                 start a turn whose host tool kills the process (exit 17)
    deliver <root> <session> <now>     wait on the start file, deliver once; print ok / refused
    place <root> <session> <name>      wait on the start file, place one file; print the placed path
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from archmax import FilesystemStore, create_agent
from archmax.clock import FakeClock
from archmax.engine.placement import place_files, prepare_files
from archmax.errors import SessionNotAwaitingInputError
from archmax.models.base import ModelRequest, ModelResponse
from archmax.session.records import ToolCall
from archmax.spec import workflow_from_dict

CHAT = {"states": {"chat": {"triggers": {"manual": None}}}}
TOOLED = {"states": {"chat": {"triggers": {"manual": None}, "tools": {"allow": ["charge_card"]}}}}


class _Charge:
    def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(tool_calls=[ToolCall(id="call_1", name="charge_card", args={"amount": 5})])


class _Done:
    def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="Thanks, that settles it.")


def _wait_for_start(root: Path) -> None:
    # A barrier, not a timer: every racer spins until the parent creates the start file.
    while not (root.parent / "start").exists():
        time.sleep(0.001)


def die_mid_tool(root: Path) -> None:
    def charge_card(amount: int) -> str:
        """Charge the card."""
        os._exit(17)  # killed while the tool runs: no cleanup, no lease release

    store = FilesystemStore(root)
    clock = FakeClock("2025-01-01T00:00:00.000Z")
    agent = create_agent(workflow_from_dict(TOOLED, "demo"), store, _Charge(), clock=clock, tools=[charge_card])
    agent.workflow.send("z", "charge me")


def deliver(root: Path, session_id: str, now: str) -> None:
    agent = create_agent(workflow_from_dict(CHAT, "demo"), FilesystemStore(root), _Done(), clock=FakeClock(now))
    _wait_for_start(root)
    try:
        out = agent.workflow.deliver(session_id, trigger="timer", variables={"now": now})
    except SessionNotAwaitingInputError:
        print("refused")
        return
    print(f"ok {out.kind}")


def place(root: Path, session_id: str, name: str) -> None:
    store = FilesystemStore(root)
    prepared = prepare_files(store, session_id, {"f": {"name": name, "content": f"from {os.getpid()}"}})
    _wait_for_start(root)
    print(place_files(store, session_id, prepared)["f"])


if __name__ == "__main__":
    job, root, *rest = sys.argv[1:]
    {"die-mid-tool": die_mid_tool, "deliver": deliver, "place": place}[job](Path(root), *rest)
