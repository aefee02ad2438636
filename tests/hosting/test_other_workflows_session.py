"""A host of workflow ``x`` over a store and inbox shared with workflow ``y`` (attack32).

Two ``archmax serve`` on one workspace share its ``sessions/`` and ``sessions/.inbox``: ``x``'s host
must neither resume ``y``'s sessions (the engine's door refuses with ``OtherWorkflowSessionError``,
HTTP 409, changing nothing) nor mark ``y``'s waiting events failed (they stay pending for ``y``'s
own host). Rule source: BEHAVIOUR.md §3.3 (a refused firing changes nothing), DESIGN.md §3 "Inbox"
(an accepted event is applied once and never lost), §4 (typed refusals as 4xx JSON naming the class).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.errors import OtherWorkflowSessionError
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox, FilesystemInbox, MemoryInbox
from archmax.models.scripted import ScriptedModel
from archmax.serve import serve
from archmax.session.firing import Firing
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

from .conftest import INBOX_TABLE

ASKING = {"states": {"ask": {"triggers": {"manual": None}}}}
WORKING = {"states": {"work": {"triggers": {"manual": None}}}}
WAITS = [{"call": {"archmax_wait": {"reason": "the order id"}}}, {"say": "Which order?"}, {"say": "Thanks."}]
SID = "s1"


@pytest.fixture(params=["memory", "filesystem", "aws"])
def shared(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> tuple[Any, Any]:
    """One store and one inbox of a kind, shared by both workflows' hosts."""
    if request.param == "memory":
        return MemoryStore(), MemoryInbox()
    if request.param == "filesystem":
        return FilesystemStore(tmp_path / "sessions"), FilesystemInbox(tmp_path / "sessions")
    env = request.getfixturevalue("aws")
    return env.store(), DynamoInbox(INBOX_TABLE, client=env.dynamodb, clock=clock)


def hosts(store: Any, inbox: Any, clock: FakeClock) -> tuple[Host, Host]:
    """``y``'s host (its wake does nothing: the item waits) and ``x``'s (its model is never called)."""
    y = create_agent(workflow_from_dict(ASKING, "y"), store, ScriptedModel(WAITS), clock=clock)
    x = create_agent(workflow_from_dict(WORKING, "x"), store, ScriptedModel([]), clock=clock)
    return Host(y, inbox, waker=lambda _sid: None), Host(x, inbox)


def record(store: Any) -> tuple[Any, Any]:
    return store.head(SID), store.load(SID).model_dump(mode="json")


def test_another_workflows_host_refuses_at_accept_and_leaves_the_others_events_pending(
    shared: tuple[Any, Any], clock: FakeClock
) -> None:
    store, inbox = shared
    host_y, host_x = hosts(store, inbox, clock)
    assert host_y.agent.workflow.send(SID, "hi").kind == "parked"
    before = record(store)

    with pytest.raises(OtherWorkflowSessionError, match="belongs to workflow 'y', not 'x'"):
        host_x.accept(Firing(message="ORD-1", session_id=SID, delivery_id="via-x"))
    assert inbox.get(SID, "via-x") is None  # nothing inboxed

    host_y.accept(Firing(message="ORD-1", session_id=SID, delivery_id="via-y"))  # waits: y's wake did nothing
    results = host_x.drain(SID)  # x's sweep re-drives every queue of the shared inbox
    assert [type(r).__name__ for r in results] == ["OtherWorkflowSessionError"]
    assert inbox.get(SID, "via-y").status == "pending"  # y's event is not x's to refuse
    assert record(store) == before

    [outcome] = host_y.drain(SID)
    assert outcome.kind == "completed" and outcome.reply == "Thanks."
    assert inbox.get(SID, "via-y").status == "done"


def post(url: str, body: Any) -> tuple[int, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("deliveries", {"trigger": "manual", "message": "ORD-1"}),
        ("messages", {"message": "ORD-1"}),
        ("decisions", {"to": "work"}),
    ],
)
def test_archmax_serve_x_answers_409_naming_both_workflows_for_a_session_of_y(
    tmp_path: Path, clock: FakeClock, route: str, body: dict[str, Any]
) -> None:
    for slug, doc in (("x", WORKING), ("y", ASKING)):
        (tmp_path / "workflows" / slug).mkdir(parents=True)
        (tmp_path / "workflows" / slug / "workflow.yaml").write_text(yaml.safe_dump(doc))
    sessions = tmp_path / "sessions"
    asking = create_agent(tmp_path / "workflows" / "y", FilesystemStore(sessions), ScriptedModel(WAITS), clock=clock)
    assert asking.workflow.send(SID, "hi").kind == "parked"
    before = tree(sessions)
    server = serve(tmp_path / "workflows" / "x", root=sessions, port=0, sweep_interval_s=None,
                   model=ScriptedModel([]), clock=clock, env={})  # fmt: skip
    try:
        status, answer = post(f"{server.url}/sessions/{SID}/{route}", body)
    finally:
        server.stop()
    assert status == 409, answer
    assert answer["error"] == "OtherWorkflowSessionError" and answer["session_id"] == SID
    assert f"session '{SID}' belongs to workflow 'y', not 'x'" in answer["message"]
    assert tree(sessions) == before
