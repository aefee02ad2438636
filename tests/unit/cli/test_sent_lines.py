"""``archmax run``, ``deliver`` and ``decide`` list what their operation sent, the sub-workflow child's too.

One operation commits messages for a caller and its child (BEHAVIOUR.md §5.10); the in-process
dispatch sends both outboxes (README "Outbound messages"). The CLI prints one ``sent:`` line per
lifecycle event that went to a bus, for every session the operation committed messages for: the
Outcome's session first, then the child's, in the order they were sent, and nothing an earlier
command sent (attack31 finding). Real parts: the CLI in-process, a filesystem store, and the
EventBridge publisher on boto3 against the moto server of ``tests/stores/aws/moto_env.py``.
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archmax.outbound.dispatch import Sent, describe
from archmax.stores.filesystem import FilesystemStore

from ._support import Run, make_workspace

Script = Callable[[list[dict[str, Any]]], str]
BUS = "archmax-cli-test"
CALLER, CHILD = "s", "s~work:b:1"
CALLING = {
    "states": {
        "work": {"instructions": "Ask b.", "triggers": {"manual": None}, "tools": {"allow": ["archmax_workflow_b"]}}
    }
}
CALLED = {"states": {"work": {"instructions": "Do it.", "triggers": {"manual": None}}}}
REVIEWED = {
    "states": {
        "look": {
            "instructions": "Look.",
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "Check."}],
        },
        "review": {"type": "human", "transitions": [{"to": "approved", "description": "Approved."}]},
        "approved": {"summary": "Done."},
    }
}


@pytest.fixture
def bus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """A fresh moto with an event bus that the CLI's dispatcher (``ARCHMAX_EVENT_BUS``) publishes to."""
    env = importlib.import_module("stores.aws.moto_env")
    srv = env.fresh_env().server
    monkeypatch.setenv("AWS_ENDPOINT_URL", srv.endpoint_url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", env.REGION)
    for key, value in env.CREDENTIALS.items():
        monkeypatch.setenv(key.upper(), value)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"archmax-sent-{uuid.uuid4().hex[:8]}")
    for key in ("ARCHMAX_OUTBOUND", "ARCHMAX_MAIL_TRANSPORT", "ARCHMAX_SMTP_URL", "INBOX_TABLE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ARCHMAX_EVENT_BUS", BUS)
    srv.client("events").create_event_bus(Name=BUS)
    return srv


WAITS = [  # one script for the pair across commands: each session walks its own copy (TranscriptScriptedModel)
    {"call": {"archmax_workflow_b": {}}},  # the caller calls b (the child's first answer is refused: not its tool)
    {"call": {"archmax_wait": {"reason": "the order id"}}},  # the child parks: the pair waits
    {"say": "Which order?"},  # the child's park message
    {"say": "Done."},
]
REVIEWS = [
    {"call": {"archmax_workflow_b": {}}},
    {"call": {"archmax_advance": {"to": "review", "reason": "ready"}}},  # the child parks at its review
    {"say": "Please review."},
    {"say": "Noted."},  # the child's answer to a reply at its review
    {"say": "Done."},
]


class Pair:
    """A workspace where ``a`` calls ``b``, its store, and the CLI with one script for every command."""

    def __init__(self, cli: Callable[..., Run], tmp: Path, b: dict[str, Any], model: str) -> None:
        root = make_workspace(tmp / "ws", a=CALLING, b=b)
        self.cli = cli
        self.flags = ["--root", str(root), "--store", str(tmp / "store"), "--model", model]
        self.store = FilesystemStore(tmp / "store")

    def __call__(self, *args: str) -> Run:
        run = self.cli(*self.flags, *args)
        assert run.code == 0, run.err
        return run

    def lines_of(self, session_id: str) -> list[str]:
        """The ``sent:`` lines of ``session_id``'s latest commit, from the results the dispatcher recorded."""
        record = self.store.load(session_id)
        lines = []
        for entry in record.outbox:
            if entry.version == record.version:
                data = self.store.outbox_result(session_id, entry.id, created_at=record.created_at)
                assert data is not None, f"{session_id}/{entry.id} was not sent"
                lines.append(describe(Sent.model_validate_json(data)))
        return lines


def sent(run: Run) -> list[str]:
    """The ``sent:`` and ``outbox:`` lines a command printed, in order."""
    return [line for line in run.err.splitlines() if line.startswith(("sent:", "outbox:"))]


def test_run_lists_the_callers_event_then_its_childs(
    cli: Callable[..., Run], script: Script, tmp_path: Path, bus: Any
) -> None:
    """The child finishes inside the call, then the caller: both completions went to the bus."""
    pair = Pair(cli, tmp_path, CALLED, script([{"call": {"archmax_workflow_b": {}}}, {"say": "Done."}]))
    lines = sent(pair("run", "a", "go", "--session", CALLER))
    assert lines == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(lines) == 2 and all(f"event 'Session Completed' -> eventbridge {BUS} (id " in x for x in lines)


def test_deliver_lists_the_pairs_events_of_this_delivery_only(
    cli: Callable[..., Run], script: Script, tmp_path: Path, bus: Any
) -> None:
    """The pair parks through the child; ``deliver`` at the caller finishes both: two lines, none of the run's."""
    pair = Pair(cli, tmp_path, CALLED, script(WAITS))
    parked = sent(pair("run", "a", "go", "--session", CALLER))
    assert parked == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(parked) == 2 and all("event 'Session Parked'" in x for x in parked)
    delivered = sent(pair("deliver", CALLER, "--trigger", "manual", "--message", "ORD-1"))
    assert delivered == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(delivered) == 2 and all("event 'Session Completed'" in x for x in delivered)


def test_reply_and_decide_at_the_childs_review_list_what_each_sent(
    cli: Callable[..., Run], script: Script, tmp_path: Path, bus: Any
) -> None:
    """The child parks at a human review; a reply and then ``decide`` at the caller's id reach it (§5.10)."""
    pair = Pair(cli, tmp_path, REVIEWED, script(REVIEWS))
    pair("run", "a", "go", "--session", CALLER)
    replied = sent(pair("reply", CALLER, "One more thing."))
    assert replied == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(replied) == 2 and all("event 'Session Parked'" in x for x in replied)
    decided = sent(pair("decide", CALLER, "--to", "approved"))
    assert decided == pair.lines_of(CALLER) + pair.lines_of(CHILD)
    assert len(decided) == 2 and all("event 'Session Completed'" in x for x in decided)
