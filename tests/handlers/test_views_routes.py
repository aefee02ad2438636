"""The read-only session views over HTTP: page, transcript, trail, list; the 202's ``Location``.

Rule source: issue 15 items 1 and 3. Served by the resolve function (both backends: the filesystem
store, and DynamoDB + S3 on the moto server), with the events of ``events/`` moved to the new paths
as API Gateway would send them.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from .conftest import ANSWER, PARK, event

BACKENDS = ["filesystem", "aws"]
INSTANT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"


@pytest.fixture(params=BACKENDS)
def deploy(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def get(target: str) -> dict[str, Any]:
    """``apigw_get_session.json`` sent to ``GET <target>`` (path and query), as API Gateway would."""
    parts = urlsplit(target)
    evt = event("apigw_get_session.json")
    evt["rawPath"] = parts.path
    evt["requestContext"]["http"]["path"] = parts.path
    evt["rawQueryString"] = parts.query
    evt.pop("pathParameters", None)
    evt["routeKey"] = evt["requestContext"]["routeKey"] = "$default"
    if parts.query:
        evt["queryStringParameters"] = {k: ",".join(v) for k, v in parse_qs(parts.query).items()}
    return evt


def body(answer: dict[str, Any]) -> Any:
    return json.loads(answer["body"])


def _park(deploy: Any) -> Any:
    d = deploy(PARK + ANSWER)
    accepted = d.call("send", event("apigw_send_message.json"))
    return d, accepted


def test_the_202_names_a_transcript_to_poll_that_says_whether_the_firing_was_applied(deploy):
    d, accepted = _park(deploy)
    assert accepted["statusCode"] == 202
    location = accepted["headers"]["Location"]
    assert location == "/sessions/AAQk-1/transcript?delivery_id=msg-AAQk-1-0001"
    assert body(accepted)["poll"] == location
    polled = d.call("resolve", get(location))
    assert polled["statusCode"] == 200
    t = body(polled)
    assert t["delivery"] == {"id": "msg-AAQk-1-0001", "applied": True, "answered": True}
    assert t["status"] == "awaiting_input" and t["wait"]["state"] == "clarify"
    assert t["wait"]["reason"] == "the order number"
    assert t["reply"] == "Which order is this about?"
    assert [e["role"] for e in t["conversation"]] == ["person", "tool", "agent", "tool"]
    unknown = body(d.call("resolve", get("/sessions/AAQk-1/transcript?delivery_id=other")))
    assert unknown["delivery"] == {"id": "other", "applied": False, "answered": False}


def test_a_delivery_whose_turn_stopped_on_a_model_failure_is_applied_but_not_answered(deploy):
    """The poll must not hand out the previous turn's reply as this delivery's answer (user test finding 4)."""
    d = deploy(PARK)  # the script ends at the park: the next turn's model call fails, the turn stays running
    d.call("send", event("apigw_send_message.json"))
    second = event("apigw_send_message.json")
    second["headers"]["idempotency-key"] = "msg-AAQk-1-0002"
    second["body"] = json.dumps(
        {"message": "It is ORD-1001.", "trigger": "email_reply", "variables": {"conversation_id": "AAQk-1"}}
    )
    accepted = d.call("send", second)
    assert accepted["statusCode"] == 202
    t = body(d.call("resolve", get(accepted["headers"]["Location"])))
    assert t["status"] == "running"
    assert t["delivery"] == {"id": "msg-AAQk-1-0002", "applied": True, "answered": False}
    first = body(d.call("resolve", get("/sessions/AAQk-1/transcript?delivery_id=msg-AAQk-1-0001")))
    assert first["delivery"] == {"id": "msg-AAQk-1-0001", "applied": True, "answered": True}  # its turn parked


def test_the_page_is_html_with_the_graph_the_current_state_and_no_script(deploy):
    d, _ = _park(deploy)
    answer = d.call("resolve", get("/sessions/AAQk-1/view"))
    assert answer["statusCode"] == 200
    headers = {k.lower(): v for k, v in answer["headers"].items()}
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in headers["content-security-policy"] and headers["x-content-type-options"] == "nosniff"
    html = answer["body"]
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html.lower()
    assert re.search(r'<g class="state [^"]*current" data-state="clarify" aria-current="step">', html)
    assert 'data-kind="park"' in html and "the order number" in html


def test_the_trail_has_iso_times_and_the_timeline(deploy):
    d, _ = _park(deploy)
    d.call("deliver", event("apigw_deliver.json"))
    t = body(d.call("resolve", get("/sessions/AAQk-1/trail")))
    assert [s["kind"] for s in t["steps"]] == ["trigger", "agent", "trigger", "agent"]
    assert all(re.fullmatch(INSTANT, s["at"]) and "ts" not in s for s in t["steps"])
    assert [e["kind"] for e in t["timeline"]] == ["turn", "advance", "park", "delivery", "advance", "completed"]


def test_a_missing_session_is_a_404_and_a_bad_id_a_400(deploy):
    d = deploy(PARK)
    for route in ("view", "transcript", "trail"):
        missing = d.call("resolve", get(f"/sessions/nobody/{route}"))
        assert missing["statusCode"] == 404 and body(missing)["error"] == "NotFound"
        assert "does not exist" in body(missing)["message"]
        bad = d.call("resolve", get(f"/sessions/..%2Fetc/{route}"))
        assert bad["statusCode"] == 400 and body(bad)["error"] == "InvalidSessionIdError"


def test_the_list_filters_and_pages(deploy):
    d = deploy(PARK * 3)
    for sid in ("a-1", "a-2", "a-3"):
        evt = event("apigw_send_message.json")
        evt["rawPath"] = evt["requestContext"]["http"]["path"] = f"/sessions/{sid}/messages"
        evt["pathParameters"] = {"id": sid}
        evt["headers"]["idempotency-key"] = f"k-{sid}"
        assert d.call("send", evt)["statusCode"] == 202
    listed = body(d.call("resolve", get("/sessions?status=awaiting_input&limit=2")))
    assert [s["session_id"] for s in listed["sessions"]] == ["a-1", "a-2"]
    assert listed["sessions"][0]["view"] == "/sessions/a-1/view"
    assert listed["next"] == "/sessions?status=awaiting_input&limit=2&after=a-2"
    rest = body(d.call("resolve", get(listed["next"])))
    assert [s["session_id"] for s in rest["sessions"]] == ["a-3"] and "next" not in rest
    assert body(d.call("resolve", get("/sessions?status=completed")))["sessions"] == []
    assert body(d.call("resolve", get("/sessions?workflow=bank-check")))["sessions"] == []
    parked_before = body(d.call("resolve", get("/sessions?parked_before=2100-01-01T00:00:00Z")))
    assert len(parked_before["sessions"]) == 3
    assert body(d.call("resolve", get("/sessions?parked_before=2000-01-01T00:00:00Z")))["sessions"] == []
    for bad in ("status=parked", "limit=0", "limit=x", "parked_before=tomorrow", "colour=red"):
        refused = d.call("resolve", get(f"/sessions?{bad}"))
        assert refused["statusCode"] == 400 and body(refused)["error"] == "InvalidEventError", bad


def test_a_delivery_or_decision_to_a_missing_session_is_a_404_not_a_409(deploy):
    d = deploy(PARK)
    for name, route in (("apigw_deliver.json", "deliveries"), ("apigw_decision.json", "decisions")):
        evt = event(name)
        evt["rawPath"] = evt["requestContext"]["http"]["path"] = f"/sessions/nobody/{route}"
        evt["pathParameters"] = {"id": "nobody"}
        answer = d.call("deliver", evt)
        assert answer["statusCode"] == 404, (route, answer)
        assert "does not exist" in body(answer)["message"] and body(answer)["session_id"] == "nobody"
