"""Signed third-party webhooks (issue 13 item 2): ``POST /webhooks/{trigger}`` on moto.

The trigger declares ``signature: {secret: ssm:<name>}``; the secret lives in SSM (moto) and is read
through Powertools Parameters. A signed request is accepted; a bad signature, a stale timestamp, a
missing header and a replayed delivery id are each refused, and nothing is written. One signature is
one event (issue 21 item 2): a captured request sent again under a new delivery id is not applied again.
"""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax.inbound.secrets import read_secret
from archmax.inbound.webhook import derived_delivery_id, signature_for

from .conftest import PARK, SUPPORT_INBOX

SECRET = "whsec_test_secret_value_0001"
NOW = 1735689600  # 2025-01-01T00:00:00Z, the fixture clock


@pytest.fixture
def signed(aws: Any, tmp_path: Path) -> Any:
    workflow = tmp_path / "support-inbox"
    shutil.copytree(SUPPORT_INBOX, workflow)
    spec = yaml.safe_load((workflow / "workflow.yaml").read_text())
    spec["states"]["intake"]["triggers"]["payment_event"] = {
        "session": "conversation_id",
        "description": "A payment provider's signed webhook.",
        "signature": {"secret": "ssm:/archmax/payments-webhook", "tolerance_s": 300},
    }
    (workflow / "workflow.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    d = aws(PARK, workflow=workflow)
    ssm = importlib.import_module("stores.aws.moto_env").server().client("ssm")
    ssm.put_parameter(Name="/archmax/payments-webhook", Value=SECRET, Type="SecureString")
    d.collaborators.read_secret = lambda reference: read_secret(reference, ssm_client=ssm)
    return d


def webhook(trigger: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "POST /webhooks/{trigger}",
        "rawPath": f"/webhooks/{trigger}",
        "rawQueryString": "",
        "headers": {"content-type": "application/json", **{k.lower(): v for k, v in headers.items()}},
        "requestContext": {
            "http": {"method": "POST", "path": f"/webhooks/{trigger}", "sourceIp": "203.0.113.7"},
            "routeKey": "POST /webhooks/{trigger}",
            "stage": "$default",
            "requestId": "r1",
        },  # fmt: skip
        "body": body.decode(),
        "isBase64Encoded": False,
    }


BODY = json.dumps({"conversation_id": "pay-1", "message": "Payment pi_1 succeeded."}).encode()


def headers(
    body: bytes = BODY, *, ts: int = NOW, delivery: str = "evt_1", secret: str = SECRET, sign_id: bool = True
) -> dict[str, str]:
    """A sender's headers; ``sign_id`` signs ``<id>.<ts>.<body>``, else only ``<ts>.<body>``."""
    return {
        "X-Archmax-Timestamp": str(ts),
        "X-Archmax-Signature": signature_for(secret.encode(), str(ts), body, delivery if sign_id else None),
        "X-Archmax-Delivery": delivery,
    }


def test_a_signed_webhook_is_accepted(signed: Any) -> None:
    answer = signed.call("send", webhook("payment_event", BODY, headers()))
    assert answer["statusCode"] == 202, answer["body"]
    accepted = json.loads(answer["body"])
    assert accepted["session_id"] == "pay-1" and accepted["delivery_id"] == "evt_1"
    assert signed.collaborators.agent.sessions.get("pay-1").status == "awaiting_input"


def test_a_webhook_signing_only_timestamp_and_body_is_accepted_under_an_id_derived_from_them(signed: Any) -> None:
    answer = signed.call("send", webhook("payment_event", BODY, headers(sign_id=False)))
    assert answer["statusCode"] == 202, answer["body"]
    assert json.loads(answer["body"])["delivery_id"] == derived_delivery_id(str(NOW), BODY)


def _applied(signed: Any) -> int:
    """How many firings the session applied: one ``[event]`` note or opening message each."""
    messages = signed.collaborators.agent.sessions.messages("pay-1")
    return sum(1 for m in messages if "Payment pi_1 succeeded." in str(m.content))


@pytest.mark.parametrize(
    "resend",
    [
        lambda h: {**h, "X-Archmax-Delivery": "evt_1-replay"},
        lambda h: {**h, "Idempotency-Key": "evt_2"},
        lambda h: {**h, "X-Archmax-Delivery": "evt_2", "Idempotency-Key": "evt_2"},
        lambda h: {k: v for k, v in h.items() if k != "X-Archmax-Delivery"},
    ],
    ids=["new-delivery-header", "idempotency-key", "both", "no-delivery-header"],
)
def test_a_captured_signature_over_timestamp_and_body_is_one_event_whatever_id_it_is_resent_under(
    signed: Any, resend: Any
) -> None:
    """Mallory replays Dana's provider's request within the tolerance window under a fresh delivery id."""
    original = headers(sign_id=False)
    assert signed.call("send", webhook("payment_event", BODY, original))["statusCode"] == 202
    assert _applied(signed) == 1
    before = signed.snapshot()
    replay = signed.call("send", webhook("payment_event", BODY, resend(original)))
    assert json.loads(replay["body"])["error"] == "DuplicateDeliveryError", replay["body"]
    assert signed.snapshot() == before and _applied(signed) == 1


def test_a_signed_delivery_id_cannot_be_swapped_for_another(signed: Any) -> None:
    """The id is covered by the signature: the same request under ``evt_1-replay`` does not verify."""
    original = headers()
    assert signed.call("send", webhook("payment_event", BODY, original))["statusCode"] == 202
    before = signed.snapshot()
    for swapped in ({**original, "X-Archmax-Delivery": "evt_1-replay"}, {**original, "Idempotency-Key": "evt_2"}):
        answer = signed.call("send", webhook("payment_event", BODY, swapped))
        assert answer["statusCode"] in (200, 401), answer["body"]
        assert json.loads(answer["body"])["error"] in ("UnauthenticatedEventError", "DuplicateDeliveryError")
    assert signed.snapshot() == before and _applied(signed) == 1


@pytest.mark.parametrize("sign_id", [True, False], ids=["id-signed", "timestamp-and-body-signed"])
def test_a_second_event_with_its_own_signature_is_applied(signed: Any, sign_id: bool) -> None:
    """The legitimate sender's next event (new timestamp and body, new signature) goes through."""
    assert signed.call("send", webhook("payment_event", BODY, headers(sign_id=sign_id)))["statusCode"] == 202
    second = json.dumps({"conversation_id": "pay-1", "message": "Payment pi_2 succeeded."}).encode()
    answer = signed.call(
        "send", webhook("payment_event", second, headers(second, ts=NOW + 60, delivery="evt_2", sign_id=sign_id))
    )
    assert answer["statusCode"] == 202 and json.loads(answer["body"])["duplicate"] is False, answer["body"]
    messages = signed.collaborators.agent.sessions.messages("pay-1")
    assert any("Payment pi_2 succeeded." in str(m.content) for m in messages)


@pytest.mark.parametrize(
    "forge",
    [
        lambda: headers(secret="whsec_wrong"),  # bad signature
        lambda: {**headers(), "X-Archmax-Signature": "sha256=" + "0" * 64},
        lambda: headers(ts=NOW - 301),  # stale
        lambda: headers(ts=NOW + 301),  # from the future
        lambda: {k: v for k, v in headers().items() if k != "X-Archmax-Signature"},  # unsigned
        lambda: {k: v for k, v in headers().items() if k != "X-Archmax-Timestamp"},
        lambda: {k: v for k, v in headers().items() if k != "X-Archmax-Delivery"},  # the id it signed is gone
        lambda: {**headers(), "X-Archmax-Timestamp": "1e9"},
        lambda: {**headers(), "X-Archmax-Timestamp": "\uff11\uff17\uff13\uff15\uff16\uff18\uff19\uff16\uff10\uff10"},
        lambda: {**headers(), "X-Archmax-Timestamp": "\u0661\u0667\u0663\u0665\u0666\u0668\u0669\u0666\u0660\u0660"},
        lambda: headers(body=BODY + b" "),  # signed another body
        lambda: headers(delivery="evt.1"),  # a signed id holds no "."
    ],
    ids=[
        "wrong-secret",
        "zero-mac",
        "stale",
        "future",
        "unsigned",
        "no-timestamp",
        "no-delivery",
        "float-ts",
        "fullwidth-digits-ts",  # NOW in digits int() reads but the signed string cannot hold (issue 21 fuzz: a 500)
        "arabic-indic-digits-ts",
        "other-body",
        "dotted-id",
    ],  # fmt: skip
)
def test_a_bad_stale_or_unsigned_request_is_a_401_and_writes_nothing(signed: Any, forge: Any) -> None:
    before = signed.snapshot()
    answer = signed.call("send", webhook("payment_event", BODY, forge()))
    assert answer["statusCode"] == 401 and json.loads(answer["body"])["error"] == "UnauthenticatedEventError"
    assert signed.snapshot() == before


@pytest.mark.parametrize(
    "forge",
    [
        lambda: {},  # no signature headers at all: anyone on the internet
        lambda: {k: v for k, v in headers().items() if k != "X-Archmax-Signature"},
        lambda: headers(ts=NOW - 301),
    ],
    ids=["bare", "unsigned", "stale"],
)
def test_an_unsigned_or_stale_request_is_refused_without_reading_the_secret(signed: Any, forge: Any) -> None:
    """An anonymous caller cannot make the host read (or name) the secret: 401 before any lookup."""
    reads: list[str] = []
    signed.collaborators.read_secret = lambda reference: reads.append(reference) or SECRET.encode()
    answer = signed.call("send", webhook("payment_event", BODY, forge()))
    assert answer["statusCode"] == 401 and reads == []
    signed.call("send", webhook("payment_event", BODY, headers()))  # a signed one does read it
    assert reads == ["ssm:/archmax/payments-webhook"]


def test_a_replayed_delivery_id_is_refused_and_writes_nothing(signed: Any) -> None:
    assert signed.call("send", webhook("payment_event", BODY, headers()))["statusCode"] == 202
    before = signed.snapshot()
    replay = signed.call("send", webhook("payment_event", BODY, headers(ts=NOW + 5)))  # re-signed, same delivery id
    assert json.loads(replay["body"])["error"] == "DuplicateDeliveryError"
    assert signed.snapshot() == before


def test_a_trigger_without_a_signature_takes_no_webhooks_and_the_iam_route_stays(signed: Any) -> None:
    before = signed.snapshot()
    answer = signed.call("send", webhook("email_received", BODY, headers()))
    assert answer["statusCode"] == 401 and signed.snapshot() == before
    iam = webhook("email_received", BODY, {})
    iam["routeKey"], iam["rawPath"] = "POST /triggers/{trigger}", "/triggers/email_received"
    iam["requestContext"]["http"]["path"] = "/triggers/email_received"
    assert signed.call("send", iam)["statusCode"] == 202
