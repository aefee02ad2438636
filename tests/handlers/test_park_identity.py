"""Park identity over HTTP and direct invokes (BEHAVIOUR.md §5.11, issue 21 item 6).

``GET /sessions/{id}`` and the transcript a webhook's 202 points at name the current park; a
delivery or a decision whose ``park_id`` names a park that is no longer current is a 409 and writes
nothing, and one naming the current park is applied. On the filesystem and the AWS (moto) backends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import ANSWER, PARK, event
from .test_decisions import APPROVED, decision, parked_for_review, refund  # noqa: F401 - fixture

BACKENDS = ["filesystem", "aws"]
SID = "AAQk-1"  # the session of events/apigw_get_session.json and apigw_deliver.json


@pytest.fixture(params=BACKENDS)
def deploy(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def body(answer: dict[str, Any]) -> dict[str, Any]:
    return json.loads(answer["body"])


def delivery(**payload: Any) -> dict[str, Any]:
    evt = event("apigw_deliver.json")
    evt["headers"] = {k: v for k, v in evt["headers"].items() if k.lower() != "idempotency-key"}  # each its own
    evt["body"] = json.dumps({"trigger": "email_reply", "variables": {"reply_body": "It's ORD-1001."}, **payload})
    return evt


def test_the_session_summary_and_the_transcript_name_the_current_park(deploy: Any) -> None:
    d = deploy(PARK)
    out = d.collaborators.agent.workflow.send(SID, "Where is my order?", trigger="email_received")
    summary = body(d.call("resolve", event("apigw_get_session.json")))
    assert out.park_id and summary["park_id"] == out.park_id
    poll = event("apigw_get_session.json")
    poll["rawPath"] = poll["requestContext"]["http"]["path"] = f"/sessions/{SID}/transcript"
    poll["routeKey"] = poll["requestContext"]["routeKey"] = "GET /sessions/{id}/transcript"
    assert body(d.call("resolve", poll))["park_id"] == out.park_id


def test_a_delivery_naming_a_stale_park_is_a_409_and_one_naming_the_current_park_is_applied(deploy: Any) -> None:
    d = deploy([*PARK, {"call": {"archmax_wait": {"reason": "the address"}}, "say": "And the address?"}, *ANSWER[1:]])
    agent = d.collaborators.agent
    first = agent.workflow.send(SID, "Where is my order?", trigger="email_received")
    second = d.call("deliver", delivery(park_id=first.park_id))  # the answer to the first question
    assert second["statusCode"] == 200, second["body"]
    current = body(second)["park_id"]
    assert current and current != first.park_id
    before = d.snapshot()
    late = d.call("deliver", delivery(park_id=first.park_id))  # the first answer, delivered again late
    assert late["statusCode"] == 409 and body(late)["error"] == "SessionNotAwaitingInputError"
    assert first.park_id in body(late)["message"] and current in body(late)["message"]
    assert d.snapshot() == before
    direct = d.call("deliver", {"session_id": SID, "trigger": "email_reply", "park_id": first.park_id})
    assert direct["ok"] is False and direct["error"] == "SessionNotAwaitingInputError"
    assert d.snapshot() == before
    applied = d.call("deliver", delivery(park_id=current, variables={"reply_body": "12 Main St"}))
    assert applied["statusCode"] == 200, applied["body"]


def test_a_decision_naming_a_stale_park_is_a_409(deploy: Any, refund: Path) -> None:  # noqa: F811
    d = parked_for_review(deploy, refund, [{"say": "Please review it again."}, *APPROVED])
    agent = d.collaborators.agent
    stale = agent.sessions.get("refund-7").park_id
    again = agent.invoke("refund-7", message="Look again")  # re-presented: a new park
    before = d.snapshot()
    refused = d.call("deliver", decision(to="approved", park_id=stale))
    assert refused["statusCode"] == 409 and body(refused)["error"] == "SessionNotAwaitingInputError"
    assert d.snapshot() == before
    moved = d.call("deliver", decision(to="approved", park_id=again.park_id))
    assert moved["statusCode"] == 200 and body(moved)["status"] == "completed"


def test_serve_refuses_a_stale_park_id_and_applies_the_current_one(tmp_path: Path, clock: Any) -> None:
    """``archmax serve``: the same deliveries route, ``park_id`` in the JSON body (BEHAVIOUR.md §5.11)."""
    from archmax.models.scripted import ScriptedModel
    from archmax.serve import serve

    from .conftest import SUPPORT_INBOX
    from .test_serve import request

    ask_again = {"call": {"archmax_wait": {"reason": "the address"}}, "say": "And the address?"}
    server = serve(SUPPORT_INBOX, root=tmp_path / "sessions", port=0, sweep_interval_s=None,
                   model=ScriptedModel([*PARK, ask_again, *ANSWER[1:]]), clock=clock, env={})  # fmt: skip
    try:
        first = server.collaborators.agent.workflow.send("chat-42", "Where is it?", trigger="email_received")
        url, json_type = f"{server.url}/sessions/chat-42/deliveries", {"Content-Type": "application/json"}
        status, second = request(url, "POST", {"trigger": "email_reply", "message": "ORD-1", "park_id": first.park_id},
                                 json_type)  # fmt: skip
        assert status == 200 and second["park_id"] != first.park_id
        status, late = request(url, "POST", {"trigger": "email_reply", "message": "ORD-1", "park_id": first.park_id},
                               json_type)  # fmt: skip
        assert status == 409 and late["error"] == "SessionNotAwaitingInputError"
        status, applied = request(url, "POST", {"trigger": "email_reply", "message": "12 Main St",
                                                "park_id": second["park_id"]}, json_type)  # fmt: skip
        assert status == 200 and applied["kind"] == "completed"
    finally:
        server.stop()
