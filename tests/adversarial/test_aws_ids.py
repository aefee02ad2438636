"""Adversarial: session and delivery ids that stress the AWS keys (S3 folders, DynamoDB items, inbox sort keys).

Rule sources: BEHAVIOUR.md §4.1 (ids are never trimmed or normalised; at most 512 UTF-8 bytes),
§9.2 (one id, one folder: ``%``/``/``/``\\``/leading ``.`` escaped, long names hashed; the AWS item is
keyed by the raw id), DESIGN.md §3 "Inbox" (items keyed by session id + delivery id, a duplicate is
a no-op; ``~drain`` is the inbox's own record).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest

from archmax.clock import FakeClock

from ._aws_env import ANSWER, INBOX_TABLE, PARK, Deployment, body, event, fresh_aws, moto_env

LOOKALIKES = [
    "a/b",
    "a%2Fb",
    "a%252Fb",
    "a\\b",
    "a%5Cb",
    ".x",
    "%2Ex",
    "sessions",
    "inbound",
    "~drain",
    "x#y",
    "日本語",
    "é" * 256,
    " lead",
    "lead ",
    "a:b~c:d:1",
    "..a",
    "a/./b",
    "p" * 160 + "A" + "q" * 300,
    "p" * 160 + "B" + "q" * 300,
]


@pytest.fixture(scope="module")
def _server() -> Any:
    yield moto_env().server()


@pytest.fixture
def d(_server: Any, clock: FakeClock) -> Deployment:
    return Deployment(fresh_aws(), clock, PARK + ANSWER)


def test_lookalike_ids_each_get_their_own_folder_and_deleting_one_leaves_the_others(d: Deployment) -> None:
    for sid in LOOKALIKES:
        d.store.seed(sid, {"scratchpad/who.txt": sid})
    assert [d.store.get(sid, "scratchpad/who.txt") for sid in LOOKALIKES] == [s.encode() for s in LOOKALIKES]
    keys = [o["Key"] for o in d.env.s3.list_objects_v2(Bucket=d.env.bucket)["Contents"]]
    assert len(keys) == len(LOOKALIKES) and all(k.startswith("sessions/") for k in keys)
    for gone in ("a/b", "p" * 160 + "A" + "q" * 300):
        assert d.store.delete(gone) is True
    left = [sid for sid in LOOKALIKES if sid not in ("a/b", "p" * 160 + "A" + "q" * 300)]
    assert [d.store.get(sid, "scratchpad/who.txt") for sid in left] == [s.encode() for s in left]


@pytest.mark.parametrize("sid", ["x#y", "日本語", "a%2Fb", "~drain", "sessions", "inbound", "é" * 256])
def test_a_webhook_to_an_odd_but_valid_id_parks_that_exact_session(d: Deployment, sid: str) -> None:
    evt = event("apigw_send_message.json")
    evt["rawPath"] = evt["requestContext"]["http"]["path"] = f"/sessions/{quote(sid, safe='')}/messages"
    answer = d.call("send", evt)
    assert answer["statusCode"] == 202 and body(answer)["session_id"] == sid
    assert d.agent.sessions.get(sid).status == "awaiting_input"


@pytest.mark.parametrize("key", ["~drain", "d#x", "#", "~", "a" * 256, "é" * 256])
def test_an_idempotency_key_shaped_like_the_inbox_keys_is_an_ordinary_item_and_a_duplicate_is_a_no_op(
    d: Deployment, key: str
) -> None:
    evt = event("apigw_send_message.json")
    evt["headers"]["idempotency-key"] = key
    assert body(d.call("send", evt))["delivery_id"] == key
    items = d.env.dynamodb.scan(TableName=INBOX_TABLE)["Items"]
    assert sorted(i["sk"]["S"] for i in items) == sorted(["d#" + key, "~drain"])
    assert {i["sk"]["S"]: i.get("status", {}).get("S") for i in items}["d#" + key] == "done"
    before = d.snapshot()
    assert body(d.call("send", evt))["duplicate"] is True
    assert d.snapshot() == before


def test_a_direct_delivery_id_of_512_bytes_is_kept_and_one_more_byte_is_refused_before_any_write(
    d: Deployment,
) -> None:
    d.call("send", event("apigw_send_message.json"))
    before = d.snapshot()
    refused = d.call("deliver", {"session_id": "AAQk-1", "trigger": "email_reply", "delivery_id": "x" * 513})
    assert refused["ok"] is False and refused["error"] == "InvalidDeliveryIdError"
    assert d.snapshot() == before
    answer = d.call("deliver", {"session_id": "AAQk-1", "trigger": "email_reply", "delivery_id": "x" * 512})
    assert answer["ok"] is True, json.dumps(answer)[:300]
