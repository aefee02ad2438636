"""Adversarial: hostile events through the four handlers on AwsStore + DynamoInbox + S3 (moto server).

Each event must get a clear 4xx (an HTTP answer) or a typed ``{"ok": false, ...}`` (a direct
invoke), and write nothing: every item of both tables and every object in the bucket is compared
before and after.

Rule sources: issue 4 item 3 ("every malformed event ... gets a clear 4xx and writes nothing"),
DESIGN.md §4 (bad input gets a 4xx with a JSON body naming the problem; nothing is half-written;
SES mail is read from where the receipt rule's S3 action wrote it, under ``inbound/``),
BEHAVIOUR.md §4.1 (ids checked before any key is built), CONVENTIONS.md ("A handler that catches
every exception and answers 200" is what to avoid: a caller's error is answered, never raised).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from archmax.clock import FakeClock

from ._aws_env import ANSWER, PARK, Deployment, body, event, fresh_aws, moto_env

GOOD = json.dumps({"message": "About my order", "trigger": "email_received"})
MAIL = (
    b"From: dana@example.org\r\nTo: support@example.com\r\nSubject: hi\r\nMessage-ID: <m1@example.org>\r\n\r\nHello\r\n"
)


@pytest.fixture(scope="module")
def _server() -> Any:
    env = moto_env()
    yield env.server()


@pytest.fixture
def deploy(_server: Any, clock: FakeClock) -> Any:
    env = fresh_aws()

    def make(script: list[dict[str, Any]] | None = None) -> Deployment:
        return Deployment(env, clock, list(PARK if script is None else script))

    return make


def message(raw: Any, *, headers: Any = "keep", b64: Any = False, sid: str = "AAQk-1") -> dict[str, Any]:
    """``POST /sessions/{sid}/messages`` (HTTP API v2) with this body, as API Gateway would shape it."""
    evt = event("apigw_send_message.json")
    evt["rawPath"] = evt["requestContext"]["http"]["path"] = f"/sessions/{sid}/messages"
    if headers != "keep":
        evt["headers"] = headers
    evt["body"] = raw
    evt["isBase64Encoded"] = b64
    return evt


def answered_4xx_and_wrote_nothing(d: Deployment, handler: str, evt: Any) -> dict[str, Any]:
    before = d.snapshot()
    answer = d.call(handler, evt)
    after = d.snapshot()
    assert after == before
    if "statusCode" in answer:
        assert 400 <= answer["statusCode"] < 500, answer
        payload = body(answer)
        assert payload["error"] and payload["message"]
        return {"status": answer["statusCode"], **payload}
    assert answer["ok"] is False and 400 <= answer["status"] < 500, answer
    return answer


# ---------------------------------------------------------------- JSON bodies the decoder chokes on


def test_a_body_nested_past_the_json_decoders_limit_is_a_400_not_a_crash(deploy: Any) -> None:
    d = deploy()
    out = answered_4xx_and_wrote_nothing(d, "send", message("[" * 100_000 + "]" * 100_000))
    assert out["status"] == 400 and out["error"] == "InvalidEventError" and "nests too deeply" in out["message"]


def test_a_deeply_nested_variable_inside_an_object_is_a_400_not_a_crash(deploy: Any) -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    raw = '{"message": "hi", "trigger": "email_received", "variables": {"x": ' + deep + "}}"
    out = answered_4xx_and_wrote_nothing(deploy(), "send", message(raw))
    assert out["status"] == 400 and out["error"] == "InvalidEventError"


@pytest.mark.parametrize(
    "raw",
    [
        '{"message": "hi \\ud800", "trigger": "email_received"}',
        '{"message": "hi", "trigger": "email_received", "variables": {"note": "\\udc00"}}',
        '{"message": "hi", "trigger": "email_received", "variables": {"n\\ud800": 1}}',
    ],
    ids=["in-the-message", "in-a-variable-value", "in-a-variable-name"],
)
def test_a_json_escaped_lone_surrogate_is_a_400_before_the_inbox_is_touched(deploy: Any, raw: str) -> None:
    out = answered_4xx_and_wrote_nothing(deploy(), "send", message(raw))
    assert out["status"] == 400 and out["error"] == "InvalidEventError" and "surrogate" in out["message"]


def test_an_escaped_backslash_before_u_is_ordinary_text_and_is_accepted(deploy: Any) -> None:
    d = deploy()
    answer = d.call("send", message(json.dumps({"message": "path C:\\ud800 is fine", "trigger": "email_received"})))
    assert answer["statusCode"] == 202


def test_a_delivery_body_with_a_lone_surrogate_leaves_the_park_as_it_was(deploy: Any) -> None:
    d = deploy(PARK + ANSWER)
    d.call("send", event("apigw_send_message.json"))
    evt = event("apigw_deliver.json")
    evt["body"] = '{"trigger": "email_reply", "message": "\\ud800"}'
    evt["isBase64Encoded"] = False
    answered_4xx_and_wrote_nothing(d, "deliver", evt)
    assert d.agent.sessions.get("AAQk-1").status == "awaiting_input"


# ---------------------------------------------------------------- a firing too large for one inbox item


def test_a_firing_larger_than_a_dynamodb_item_is_a_413_not_a_503_the_caller_would_retry_forever(
    deploy: Any,
) -> None:
    raw = json.dumps({"message": "x" * 450_000, "trigger": "email_received"})
    out = answered_4xx_and_wrote_nothing(deploy(), "send", message(raw))
    assert out["status"] == 413 and out["error"] == "InvalidEventError"


def test_a_firing_with_a_file_that_still_fits_one_item_is_accepted(deploy: Any) -> None:
    content = base64.b64encode(b"\x00\x01" * 100_000).decode()
    raw = json.dumps(
        {
            "message": "see attached",
            "trigger": "email_received",
            "files": {"doc": {"name": "a.bin", "content": content, "encoding": "base64"}},
        }
    )
    d = deploy()
    answer = d.call("send", message(raw))
    assert answer["statusCode"] == 202
    assert d.store.get("AAQk-1", "scratchpad/attachments/a.bin") == b"\x00\x01" * 100_000


# ---------------------------------------------------------------- forged API Gateway envelopes


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.__setitem__("body", {"message": "hi"}),
        lambda e: e.__setitem__("body", 5),
        lambda e: e.__setitem__("headers", ["content-type"]),
        lambda e: e.__setitem__("headers", {"content-type": ["application/json"]}),
        lambda e: e.__setitem__("isBase64Encoded", "false"),
        lambda e: e.__setitem__("requestContext", {}),
        lambda e: e.pop("rawPath"),
        lambda e: e.__setitem__("rawPath", None),
        lambda e: e["requestContext"].pop("stage"),
        lambda e: e["requestContext"].__setitem__("stage", None),
    ],
    ids=[
        "body-object",
        "body-number",
        "headers-list",
        "header-value-list",
        "base64-flag-string",
        "no-http-context",
        "no-rawPath",
        "rawPath-null",
        "no-stage",
        "stage-null",
    ],
)
def test_a_forged_http_api_envelope_is_a_400_before_any_route_runs(deploy: Any, mutate: Any) -> None:
    evt = message(GOOD)
    mutate(evt)
    out = answered_4xx_and_wrote_nothing(deploy(), "send", evt)
    assert out["status"] == 400 and out["error"] == "InvalidEventError"


def test_a_numeric_header_value_is_read_as_text_and_never_fails_after_the_route_wrote(deploy: Any) -> None:
    d = deploy()
    answer = d.call("send", message(GOOD, headers={"content-type": "application/json", "idempotency-key": 7}))
    assert answer["statusCode"] == 202 and body(answer)["delivery_id"] == "7"
    again = d.call("send", message(GOOD, headers={"content-type": "application/json", "idempotency-key": "7"}))
    assert body(again)["duplicate"] is True


def test_a_rest_api_event_with_junk_multi_value_headers_is_a_400(deploy: Any) -> None:
    evt = {
        "resource": "/sessions/{id}/messages",
        "path": "/sessions/AAQk-1/messages",
        "httpMethod": "POST",
        "headers": None,
        "multiValueHeaders": {"Idempotency-Key": "k1"},
        "pathParameters": {"id": "AAQk-1"},
        "requestContext": {"httpMethod": "POST", "resourcePath": "/sessions/{id}/messages", "path": "/x"},
        "body": GOOD,
        "isBase64Encoded": False,
    }
    out = answered_4xx_and_wrote_nothing(deploy(), "send", evt)
    assert out["status"] == 400 and out["error"] == "InvalidEventError"


# ---------------------------------------------------------------- direct invokes with junk payloads


JUNK = ["abc", 5, None, [1, 2], True, 1.5]


@pytest.mark.parametrize("handler", ["deliver", "resolve", "send", "timer"])
@pytest.mark.parametrize("payload", JUNK, ids=[repr(j) for j in JUNK])
def test_a_direct_invoke_whose_payload_is_not_an_object_gets_a_typed_refusal(
    deploy: Any, handler: str, payload: Any
) -> None:
    out = answered_4xx_and_wrote_nothing(deploy(), handler, payload)
    assert out["status"] == 400 and out["error"] == "InvalidEventError"


# ---------------------------------------------------------------- SES receipts that point at other objects


def _ses_with_s3_action(key: str, bucket: str) -> dict[str, Any]:
    evt = event("ses_inbound.json")
    evt["Records"][0]["ses"]["receipt"]["action"] = {"type": "S3", "bucketName": bucket, "objectKey": key}
    return evt


@pytest.mark.parametrize(
    "key",
    [
        "sessions/victim/scratchpad/secret.txt",
        "sessions/victim/checkpoints/0000000001-0123456789abcdef.json",
        "inbound/../sessions/victim/scratchpad/secret.txt",
        "inbound/",
        "inbound",
        "_specs/whatever.json",
    ],
)
def test_an_ses_receipt_naming_an_object_outside_inbound_in_the_sessions_bucket_reads_nothing(
    deploy: Any, key: str
) -> None:
    d = deploy()
    secret = "From: x@example.org\r\nMessage-ID: <stolen@example.org>\r\n\r\nTOP SECRET\r\n"
    d.store.seed("victim", {"scratchpad/secret.txt": secret})
    d.put_object("inbound/" + "k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01", MAIL)
    out = answered_4xx_and_wrote_nothing(d, "send", _ses_with_s3_action(key, d.env.bucket))
    assert out["error"] == "InvalidEventError" and "inbound/" in out["message"]
    assert d.agent.sessions.get("mail:stolen@example.org") is None  # the victim's file became nobody's mail


def test_an_ses_receipt_whose_s3_action_names_the_mail_it_wrote_under_inbound_is_read(deploy: Any) -> None:
    d = deploy()
    d.put_object("inbound/custom-key", MAIL)
    answer = d.call("send", _ses_with_s3_action("inbound/custom-key", d.env.bucket))
    assert answer["ok"] is True and answer["records"][0]["session_id"] == "mail:m1@example.org"


def test_an_ses_receipt_whose_mail_object_is_missing_is_answered_for_that_record_and_writes_nothing(
    deploy: Any,
) -> None:
    """A forged receipt (or one whose mail the lifecycle expired) names no object: retrying cannot help (issue 21 fuzz)."""
    d = deploy()
    evt = event("ses_inbound.json")
    before = d.snapshot()
    answer = d.call("send", evt)  # nothing was put under inbound/
    assert d.snapshot() == before
    assert answer["ok"] is True
    [record] = answer["records"]
    assert record["error"] == "InvalidEventError" and "holds no mail" in record["message"]


def test_an_ses_receipt_whose_mail_is_there_after_a_missing_one_is_read(deploy: Any) -> None:
    d = deploy()
    d.call("send", event("ses_inbound.json"))
    d.put_object("inbound/k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01", MAIL)
    answer = d.call("send", event("ses_inbound.json"))
    assert answer["records"][0]["session_id"] == "mail:m1@example.org"


@pytest.mark.parametrize("verdict", ["spamVerdict", "virusVerdict"])
@pytest.mark.parametrize("status", ["FAIL", "fail"])
def test_an_ses_receipt_with_a_failed_verdict_is_recorded_and_neither_read_nor_written(
    deploy: Any, verdict: str, status: str
) -> None:
    d = deploy()
    d.put_object("inbound/k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01", MAIL)
    evt = event("ses_inbound.json")
    evt["Records"][0]["ses"]["receipt"][verdict] = {"status": status}
    before = d.snapshot()
    answer = d.call("send", evt)
    assert d.snapshot() == before
    assert answer["ok"] is True and "refused" in answer["records"][0]
    assert [m.message_id for m in d.refused] == ["k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.pop("receipt"),
        lambda s: s.pop("mail"),
        lambda s: s["mail"].__setitem__("messageId", "../sessions/victim"),
        lambda s: s["mail"].__setitem__("messageId", None),
        lambda s: s["receipt"].__setitem__("action", {"type": "S3", "bucketName": "", "objectKey": ""}),
    ],
    ids=["no-receipt", "no-mail", "message-id-path", "message-id-null", "s3-action-blank"],
)
def test_an_ses_receipt_with_missing_or_unsafe_fields_is_a_typed_400(deploy: Any, mutate: Any) -> None:
    evt = event("ses_inbound.json")
    mutate(evt["Records"][0]["ses"])
    out = answered_4xx_and_wrote_nothing(deploy(), "send", evt)
    assert out["error"] == "InvalidEventError"


# ---------------------------------------------------------------- EventBridge events that are not a schedule


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.__setitem__("source", "aws.ec2"),
        lambda e: e.__setitem__("source", "custom.attacker"),
        lambda e: e.__setitem__("detail-type", "EC2 Instance State-change Notification"),
        lambda e: e.__setitem__("detail", "[1, 2]"),
        lambda e: e.__setitem__("detail", "{not json"),
        lambda e: e.__setitem__("id", ""),
        lambda e: e.__setitem__("replay-name", 7),
        lambda e: e.__setitem__("replay-name", {"name": "x"}),
        lambda e: e.__setitem__("id", ["a"]),
        lambda e: e.__setitem__("source", ["aws.events"]),
    ],
    ids=[
        "source-ec2",
        "source-custom",
        "detail-type",
        "detail-list",
        "detail-not-json",
        "blank-id",
        "replay-name-number",
        "replay-name-object",
        "id-list",
        "source-list",
    ],  # fmt: skip
)
def test_a_timer_event_of_the_wrong_shape_sweeps_nothing(deploy: Any, clock: FakeClock, mutate: Any) -> None:
    d = deploy(
        [
            {"call": {"archmax_advance": {"to": "clarify", "reason": "no order"}}},
            {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order", "until": "1h"}}},
        ]
    )
    d.call("send", event("apigw_send_message.json"))
    clock.advance(seconds=7200)  # the park is due: a real schedule would wake it
    evt = event("scheduled_sweep.json")
    mutate(evt)
    answered_4xx_and_wrote_nothing(d, "timer", evt)
    assert d.agent.sessions.get("AAQk-1").status == "awaiting_input"
