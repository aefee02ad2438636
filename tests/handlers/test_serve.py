"""``archmax serve``: the same handlers behind a real HTTP server on 127.0.0.1.

Rule source: issue 4 item 5 (requests turned into API Gateway v2 events; filesystem store by
default). The server listens on an OS-chosen port; the sweep thread is off (no test waits on timers).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from archmax.models.scripted import ScriptedModel
from archmax.serve import http_event, serve

from .conftest import PARK, SUPPORT_INBOX


def request(url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_post_a_message_then_get_the_session_over_http(tmp_path: Path, clock: Any) -> None:
    server = serve(SUPPORT_INBOX, root=tmp_path / "sessions", port=0, sweep_interval_s=None,
                   model=ScriptedModel(PARK), clock=clock, env={})  # fmt: skip
    try:
        status, accepted = request(
            f"{server.url}/sessions/chat-42/messages",
            "POST",
            {"message": "About the thing we discussed", "trigger": "email_received"},
            {"Content-Type": "application/json", "Idempotency-Key": "m-1"},
        )
        assert status == 202 and accepted["session_id"] == "chat-42" and accepted["delivery_id"] == "m-1"
        status, summary = request(f"{server.url}/sessions/chat-42")
        assert status == 200 and summary["status"] == "awaiting_input" and summary["state"] == "clarify"
        status, refused = request(f"{server.url}/sessions/chat-42/messages", "POST", b"foo=bar",
                                  {"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        assert status == 415 and refused["error"] == "InvalidEventError"
        status, missing = request(f"{server.url}/nowhere")
        assert status == 404 and missing["error"] == "NotFound"
    finally:
        server.stop()
    assert (tmp_path / "sessions").is_dir()


def test_a_request_becomes_a_v2_event_with_decoded_path_parameters() -> None:
    evt = http_event("POST", "/sessions/a%2Fb/deliveries?x=1", {"Content-Type": "application/json"}, b"\xff")
    assert evt["routeKey"] == "POST /sessions/{id}/deliveries"
    assert evt["pathParameters"] == {"id": "a/b"}
    assert evt["rawQueryString"] == "x=1" and evt["headers"] == {"content-type": "application/json"}
    assert evt["isBase64Encoded"] is True and evt["body"] == "/w=="


def test_an_id_with_a_space_and_an_at_sign_is_one_session_over_http_and_a_traversal_is_a_400(
    tmp_path: Path, clock: Any
) -> None:
    root = tmp_path / "sessions"
    server = serve(SUPPORT_INBOX, root=root, port=0, sweep_interval_s=None,
                   model=ScriptedModel(PARK), clock=clock, env={})  # fmt: skip
    try:
        status, accepted = request(f"{server.url}/sessions/x%20y%40z/messages", "POST",
                                   {"message": "Where is my parcel?"}, {"Content-Type": "application/json"})  # fmt: skip
        assert status == 202 and accepted["session_id"] == "x y@z"
        status, summary = request(f"{server.url}/sessions/x%20y%40z")
        assert status == 200 and summary["session_id"] == "x y@z" and summary["status"] == "awaiting_input"
        before = sorted(p.relative_to(root) for p in root.rglob("*"))
        status, refused = request(f"{server.url}/sessions/..%2Fetc")
        assert status == 400 and refused["error"] == "InvalidSessionIdError"
        status, refused = request(f"{server.url}/sessions/..%2Fetc/messages", "POST", {"message": "hi"},
                                  {"Content-Type": "application/json"})  # fmt: skip
        assert status == 400 and refused["error"] == "InvalidSessionIdError"
        assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    finally:
        server.stop()


def test_a_decision_is_posted_over_http_to_the_deliver_handler(tmp_path: Path, clock: Any) -> None:
    from .test_decisions import APPROVED, REFUND, TO_REVIEW

    folder = tmp_path / "refund"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(json.dumps(REFUND))  # JSON is YAML
    server = serve(folder, root=tmp_path / "sessions", port=0, sweep_interval_s=None,
                   model=ScriptedModel(TO_REVIEW + APPROVED), clock=clock, env={})  # fmt: skip
    try:
        server.collaborators.agent.workflow.send("refund-7", "Please refund ORD-7.")
        status, refused = request(f"{server.url}/sessions/refund-7/decisions", "POST", {"to": "paid"},
                                  {"Content-Type": "application/json"})  # fmt: skip
        assert status == 400 and refused["error"] == "InvalidDecisionTargetError"
        status, out = request(f"{server.url}/sessions/refund-7/decisions", "POST",
                              {"to": "approved", "comment": "ok"}, {"Content-Type": "application/json"})  # fmt: skip
        assert status == 200 and out["kind"] == "completed" and out["reply"] == APPROVED[0]["say"]
        status, again = request(f"{server.url}/sessions/refund-7/decisions", "POST", {"to": "approved"},
                                {"Content-Type": "application/json"})  # fmt: skip
        assert status == 409 and again["error"] == "SessionNotParkedError"
    finally:
        server.stop()


def test_a_handler_that_raises_is_answered_500_json_and_the_server_keeps_serving(tmp_path: Path, clock: Any) -> None:
    """What Lambda does with a raised error (API Gateway answers 500), not a dropped connection."""
    from archmax.errors import ConfigurationError

    server = serve(SUPPORT_INBOX, root=tmp_path / "sessions", port=0, sweep_interval_s=None,
                   model=ScriptedModel(PARK), clock=clock, env={})  # fmt: skip
    resolve = server.handlers["resolve"]
    raised: list[Exception] = [
        RuntimeError("a bug's private detail"),
        ConfigurationError("no region to read the secret"),
    ]

    def failing(event: Any, context: Any) -> Any:
        raise raised.pop(0)

    try:
        server.handlers["resolve"] = failing
        status, body = request(f"{server.url}/sessions/chat-1")
        assert (status, body) == (500, {"error": "InternalError", "message": "internal error"})
        status, body = request(f"{server.url}/sessions/chat-1")
        assert status >= 500 and body["error"] == "ConfigurationError" and "no region" in body["message"]
        server.handlers["resolve"] = resolve
        status, body = request(f"{server.url}/sessions/chat-1")
        assert status == 404 and body["session_id"] == "chat-1"
    finally:
        server.stop()


def test_a_server_error_the_handler_answers_itself_is_logged(tmp_path: Path, clock: Any, caplog: Any) -> None:
    """A typed 5xx (a secret that cannot be read, a store outage) is seen by the operator, not only the caller."""
    server = serve(SUPPORT_INBOX, root=tmp_path / "sessions", port=0, sweep_interval_s=None,
                   model=ScriptedModel(PARK), clock=clock, env={})  # fmt: skip
    answered = {"statusCode": 503, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"error": "StoreError", "message": "the store is unreachable"})}  # fmt: skip
    try:
        server.handlers["resolve"] = lambda event, context: answered
        with caplog.at_level("WARNING", logger="archmax.serve"):
            status, body = request(f"{server.url}/sessions/chat-1")
        assert status == 503 and body["error"] == "StoreError"
        assert any("answered 503" in r.getMessage() and "StoreError" in r.getMessage() for r in caplog.records)
    finally:
        server.stop()


def test_a_delivery_whose_idempotency_key_waits_in_the_inbox_is_a_409_naming_it_and_changes_nothing(
    tmp_path: Path, clock: Any
) -> None:
    """Issue 22: ``POST /sessions/{id}/deliveries`` never overtakes what waits in the session's inbox."""
    from archmax.clock import format_instant

    from .conftest import ANSWER, _fs_snapshot

    root = tmp_path / "sessions"
    server = serve(SUPPORT_INBOX, root=root, port=0, sweep_interval_s=None,
                   model=ScriptedModel(PARK + ANSWER), clock=clock, env={})  # fmt: skip
    try:
        json_headers = {"Content-Type": "application/json"}
        status, _ = request(f"{server.url}/sessions/chat-42/messages", "POST",
                            {"message": "Where is my parcel?", "trigger": "email_received"}, json_headers)  # fmt: skip
        assert status == 202
        inbox = server.collaborators.host.inbox
        assert inbox.try_acquire("chat-42", "drain-elsewhere", format_instant(clock.now()), 900)  # a drain stalls
        for key, text in (("m-2", "It is ORD-1001."), ("m-3", "Any news?")):
            status, _ = request(f"{server.url}/sessions/chat-42/messages", "POST",
                                {"message": text, "trigger": "email_reply"}, {**json_headers, "Idempotency-Key": key})  # fmt: skip
            assert status == 202
        before = _fs_snapshot(root)
        status, refused = request(f"{server.url}/sessions/chat-42/deliveries", "POST",
                                  {"trigger": "email_reply", "message": "Any news?"},
                                  {**json_headers, "Idempotency-Key": "m-3"})  # fmt: skip
        assert status == 409 and refused["error"] == "DeliveryQueuedError", refused
        assert "'m-3' waits in the inbox of session 'chat-42'" in refused["message"]
        assert _fs_snapshot(root) == before
    finally:
        server.stop()
