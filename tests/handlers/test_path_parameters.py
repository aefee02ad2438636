"""Percent-encoded session ids in URL paths reach the handlers decoded exactly once, then validated.

Rule source: issue "HTTP handlers, serve and the CLI" item 1 (the Powertools router reads path
parameters from ``rawPath``, still encoded; ``GET /sessions/x%20y%40z`` must find session
``x y@z`` and ``/sessions/..%2Fetc`` must be a 400 InvalidSessionIdError) and BEHAVIOUR.md §4.1
(which ids are valid). The events are the files of ``events/`` moved to another path, as API
Gateway would send them: ``rawPath`` encoded, ``pathParameters`` decoded.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import PARK, event

BACKENDS = ["filesystem", "aws"]


@pytest.fixture(params=BACKENDS)
def deploy(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def at(name: str, raw_path: str, **params: str) -> dict[str, Any]:
    """The event file ``name`` sent to ``raw_path`` instead (API Gateway decodes ``pathParameters``)."""
    evt = event(name)
    evt["rawPath"] = raw_path
    evt["requestContext"]["http"]["path"] = raw_path
    evt["pathParameters"] = params
    return evt


def body(answer: dict[str, Any]) -> dict[str, Any]:
    return json.loads(answer["body"])


# (session id, how it appears in the URL path)
ENCODED_IDS = [
    ("x y@z", "x%20y%40z"),
    ("team/a", "team%2Fa"),
    ("50%off", "50%25off"),
    ("a%20b", "a%2520b"),  # a literal '%20' in the id: decoded once, never into a space
]


@pytest.mark.parametrize(("session_id", "encoded"), ENCODED_IDS)
def test_a_session_id_encoded_in_the_path_is_the_same_session_for_post_and_get(
    deploy: Any, session_id: str, encoded: str
) -> None:
    d = deploy(PARK)
    posted = d.call("send", at("apigw_send_message.json", f"/sessions/{encoded}/messages", id=session_id))
    assert posted["statusCode"] == 202 and body(posted)["session_id"] == session_id
    assert d.collaborators.agent.sessions.get(session_id) is not None
    found = d.call("resolve", at("apigw_get_session.json", f"/sessions/{encoded}", id=session_id))
    assert found["statusCode"] == 200
    assert body(found)["session_id"] == session_id and body(found)["status"] == "awaiting_input"


def test_a_percent_escape_in_an_id_is_not_decoded_twice(deploy: Any) -> None:
    d = deploy(PARK)
    d.call("send", at("apigw_send_message.json", "/sessions/a%20b/messages", id="a b"))
    literal = d.call("resolve", at("apigw_get_session.json", "/sessions/a%2520b", id="a%20b"))
    assert literal["statusCode"] == 404 and body(literal)["session_id"] == "a%20b"


@pytest.mark.parametrize("encoded", ["..%2Fetc", "%2E%2E%2Fetc", "a%2F..%2F..%2Fb", "..%5Cwin"])
def test_a_traversal_attempt_in_the_path_is_a_400_and_writes_nothing(deploy: Any, encoded: str) -> None:
    d = deploy(PARK)
    before = d.snapshot()
    got = d.call("resolve", at("apigw_get_session.json", f"/sessions/{encoded}", id="(ignored)"))
    posted = d.call("send", at("apigw_send_message.json", f"/sessions/{encoded}/messages", id="(ignored)"))
    delivered = d.call("deliver", at("apigw_deliver.json", f"/sessions/{encoded}/deliveries", id="(ignored)"))
    decided = d.call("deliver", at("apigw_decision.json", f"/sessions/{encoded}/decisions", id="(ignored)"))
    for answer in (got, posted, delivered, decided):
        assert answer["statusCode"] == 400 and body(answer)["error"] == "InvalidSessionIdError"
    assert d.snapshot() == before


def test_an_encoded_trigger_name_in_the_path_is_decoded_before_it_is_looked_up(filesystem: Any) -> None:
    d = filesystem([{"call": {"archmax_advance": {"to": "answer", "reason": "names ORD-1001"}}}, {"say": "Shipped."}])
    before = d.snapshot()
    unknown = d.call("send", at("apigw_trigger_webhook.json", "/triggers/no%20such", trigger="no such"))
    assert unknown["statusCode"] == 400 and "'no such'" in body(unknown)["message"]
    assert d.snapshot() == before
    known = d.call("send", at("apigw_trigger_webhook.json", "/triggers/email%5Freceived", trigger="email_received"))
    assert known["statusCode"] == 202 and body(known)["session_id"] == "AAQk-2"
