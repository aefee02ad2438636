"""AwsStore S3 chunk bodies: a snapshot is put gzip-compressed, old plain-JSON objects still load, a bad body is a StoreError.

Rule source: issue 24 ("cycle bytes written at ~10 → ~1,000 msgs": a full snapshot of a long
transcript is the one large write of a cycle), BEHAVIOUR.md §9.3 (the bytes a commit writes should
not grow with the transcript), §9.2 (a session's own files are stored as written).
Against the moto server; sizes asserted, never times.
"""

from __future__ import annotations

import gzip
from typing import Any

import pytest

from archmax.errors import StoreError
from archmax.stores.aws.bodies import decode_body, encode_body
from archmax.stores.aws.plan import SEGMENT_MAX_BYTES, pack
from archmax.stores.codec import chunk_bytes, encode_chunk

from .records import record

LONG = 4000
"""Messages of a transcript whose full snapshot is too large for a segment item even packed: an S3 object."""

WRITES = {"PutObject", "PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem"}


def _chunk_objects(aws_env: Any, sid: str) -> list[str]:
    listed = aws_env.s3.list_objects_v2(Bucket=aws_env.bucket, Prefix=f"{sid}/checkpoints/")
    return [o["Key"] for o in listed.get("Contents", [])]


def _snapshot(aws_env: Any, sid: str) -> tuple[Any, bytes, str]:
    """Commit a first version of ``LONG`` messages; the record, its chunk JSON, and its one S3 object key."""
    rec = record(sid, 1, messages=LONG, writer="long")
    data = chunk_bytes(encode_chunk(rec, None, scheduled=False))
    assert len(pack(data)) > SEGMENT_MAX_BYTES  # the premise: this snapshot is an S3 object
    aws_env.store().commit(sid, rec, 0)
    (key,) = _chunk_objects(aws_env, sid)
    return rec, data, key


def test_a_snapshot_chunk_is_stored_gzip_and_loads(aws_env: Any) -> None:
    rec, data, key = _snapshot(aws_env, "gz")
    stored = aws_env.s3.get_object(Bucket=aws_env.bucket, Key=key)
    body = stored["Body"].read()
    assert body[:2] == b"\x1f\x8b" and stored["ContentEncoding"] == "gzip"
    assert stored["ContentType"] == "application/json"
    assert gzip.decompress(body) == data  # the chunk's JSON, exactly
    assert aws_env.store().load("gz") == rec  # a cold instance reads it back


def test_a_plain_json_chunk_object_written_before_compression_still_loads(aws_env: Any) -> None:
    rec, data, key = _snapshot(aws_env, "plain")
    aws_env.s3.put_object(Bucket=aws_env.bucket, Key=key, Body=data, ContentType="application/json")
    assert aws_env.store().load("plain") == rec


def test_the_form_is_told_by_the_bytes_not_by_the_metadata(aws_env: Any) -> None:
    rec, data, key = _snapshot(aws_env, "meta")
    # plain JSON mislabelled as gzip, as a copy tool might leave it: still read as plain
    aws_env.s3.put_object(Bucket=aws_env.bucket, Key=key, Body=data, ContentEncoding="gzip")
    assert aws_env.store().load("meta") == rec


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "magic only"])
def test_a_gzip_body_that_does_not_decompress_is_a_store_error(aws_env: Any, damage: str) -> None:
    _, _, key = _snapshot(aws_env, "bad")
    body = aws_env.s3.get_object(Bucket=aws_env.bucket, Key=key)["Body"].read()
    broken = {
        "truncated": body[: len(body) // 2],
        "corrupt": body[:10] + bytes(b ^ 0x5A for b in body[10:200]) + body[200:],
        "magic only": b"\x1f\x8b",
    }[damage]
    aws_env.s3.put_object(Bucket=aws_env.bucket, Key=key, Body=broken)
    with pytest.raises(StoreError, match="does not decompress") as caught:
        aws_env.store().load("bad")
    assert caught.value.session_id == "bad"


def test_the_bytes_a_snapshot_commit_writes_are_fewer_than_its_json(aws_env: Any) -> None:
    sid = "bytes"
    rec = record(sid, 1, messages=LONG)
    data = chunk_bytes(encode_chunk(rec, None, scheduled=False))
    written: dict[str, int] = {}

    def count(request: Any, operation_name: str, **_: Any) -> None:
        if operation_name in WRITES:
            body = request.body
            size = len(body) if isinstance(body, bytes | str) else len(body.read())
            written[operation_name] = written.get(operation_name, 0) + size

    clients = (aws_env.s3, aws_env.dynamodb)
    for client in clients:
        client.meta.events.register("request-created", count, unique_id="bodies-bytes")
    try:
        aws_env.store().commit(sid, rec, 0)
    finally:
        for client in clients:
            client.meta.events.unregister("request-created", unique_id="bodies-bytes")
    assert written["PutObject"] == len(encode_body(data))  # the object is the gzip body, nothing else
    assert written["PutObject"] * 4 < len(data)  # a transcript's JSON repeats its keys: gzip takes most of it
    assert sum(written.values()) < len(data) // 2  # the commit's writes, item included


def test_decode_body_passes_plain_json_through_and_round_trips_gzip() -> None:
    data = b'{"format": 1, "messages": []}'
    assert decode_body(data) == data
    assert decode_body(encode_body(data)) == data
    assert encode_body(data) == encode_body(data)  # deterministic: no timestamp in the header


@pytest.mark.parametrize("body", [b"", encode_body(b"")], ids=["empty", "gzip-of-nothing"])
def test_an_empty_chunk_body_is_a_store_error_at_every_load_of_a_warm_store(aws_env: Any, body: bytes) -> None:
    """A chunk object emptied (a copy tool, an operator's mistake): each load names it, not a KeyError (attack32)."""
    _, _, key = _snapshot(aws_env, "empty")
    aws_env.s3.put_object(Bucket=aws_env.bucket, Key=key, Body=body)
    store = aws_env.store()
    for _ in range(2):  # the second load finds the bytes the first one read in the store's chunk cache
        with pytest.raises(StoreError, match="not valid JSON"):
            store.load("empty")
