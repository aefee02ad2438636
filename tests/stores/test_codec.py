"""The checkpoint chunk codec: deltas, scheduled full chunks, exact round trips (BEHAVIOUR.md §9.3)."""

from __future__ import annotations

import json

import pytest

from archmax.errors import StoreError
from archmax.session.records import Message
from archmax.stores.codec import (
    FULL_EVERY,
    checkpoint_name,
    chunk_bytes,
    chunk_counts,
    chunk_from_bytes,
    chunk_versions_to_load,
    decode_chunks,
    encode_chunk,
    head_of_chunk,
)

from .conformance.conftest import make_record

SID = "chat-42"


def _history(versions: int, *, per_version: int = 1):
    """Records 1..versions of one session, each appending ``per_version`` messages, and their chunks."""
    records, chunks, previous = [], [], None
    for v in range(1, versions + 1):
        record = make_record(SID, v, messages=v * per_version, trail=v // 4)
        chunk = chunk_from_bytes(chunk_bytes(encode_chunk(record, previous)))
        records.append(record)
        chunks.append(chunk)
        previous = chunk_counts(chunk)
    return records, chunks


def _load(chunks, version):
    latest = chunks[version - 1]
    return decode_chunks([chunks[v - 1] for v in chunk_versions_to_load(latest)])


def test_first_version_is_a_full_chunk_carrying_everything():
    record = make_record(SID, 1, messages=3, trail=2)
    chunk = encode_chunk(record, None)
    assert chunk["format"] == 1
    assert (chunk["version"], chunk["base"], chunk["full"]) == (1, 1, True)
    assert (chunk["messages_from"], len(chunk["messages"]), chunk["message_count"]) == (0, 3, 3)
    assert (chunk["trail_from"], len(chunk["trail"]), chunk["trail_count"]) == (0, 2, 2)
    assert "messages" not in chunk["record"] and "trail" not in chunk["record"]
    assert chunk["record"]["session_id"] == SID


def test_later_version_is_a_delta_carrying_only_what_was_appended():
    first = encode_chunk(make_record(SID, 1, messages=3, trail=1), None)
    chunk = encode_chunk(make_record(SID, 2, messages=5, trail=2), chunk_counts(first))
    assert (chunk["full"], chunk["base"]) == (False, 1)
    assert chunk["messages_from"] == 3
    assert [m["content"] for m in chunk["messages"]] == ["message 3: where is my order?", "looking 4"]
    assert (chunk["trail_from"], len(chunk["trail"])) == (1, 1)
    assert chunk["record"]["variables"]["n"] == {"value": 2, "locked": False}


def test_full_chunks_are_scheduled_every_full_every_versions():
    _, chunks = _history(2 * FULL_EVERY + 2)
    full = [c["version"] for c in chunks if c["full"]]
    assert full == [1, FULL_EVERY + 1, 2 * FULL_EVERY + 1]
    assert chunks[FULL_EVERY + 5]["base"] == FULL_EVERY + 1


def test_no_load_reads_more_than_full_every_chunks():
    _, chunks = _history(3 * FULL_EVERY)
    assert max(len(chunk_versions_to_load(c)) for c in chunks) == FULL_EVERY


def test_every_version_of_a_long_history_decodes_to_its_record():
    records, chunks = _history(2 * FULL_EVERY + 3, per_version=2)
    for v in (1, 2, FULL_EVERY, FULL_EVERY + 1, FULL_EVERY + 2, 2 * FULL_EVERY + 3):
        assert _load(chunks, v) == records[v - 1]


def test_commit_bytes_do_not_grow_with_the_transcript_in_a_500_message_session():
    records, chunks = _history(500)
    assert records[-1].messages and len(records[-1].messages) == 500
    # Versions 10 and 399 each append one message and no trail step (the trail grows every 4th
    # version), so the two deltas carry the same kind of content at very different transcript lengths.
    size_10, size_400 = len(chunk_bytes(chunks[9])), len(chunk_bytes(chunks[398]))
    assert size_400 < size_10 * 1.1
    # ... while a full chunk at that length is many times larger, so the delta is doing the work.
    assert len(chunk_bytes(chunks[400])) > 20 * size_400
    assert _load(chunks, 400) == records[399]
    assert _load(chunks, 500) == records[499]


def test_shrunken_transcript_forces_a_full_chunk_that_decodes_exactly():
    first = encode_chunk(make_record(SID, 1, messages=6, trail=3), None)
    shrunk = make_record(SID, 2, messages=2, trail=3)
    chunk = encode_chunk(shrunk, chunk_counts(first))
    assert (chunk["full"], chunk["base"]) == (True, 2)
    after = encode_chunk(make_record(SID, 3, messages=3, trail=3), chunk_counts(chunk))
    assert after["full"] is False
    # The chunk after a forced full one still names the scheduled base; decoding restarts at the full chunk.
    assert decode_chunks([first, chunk, after]) == make_record(SID, 3, messages=3, trail=3)


def test_shrunken_trail_alone_forces_a_full_chunk():
    first = encode_chunk(make_record(SID, 1, messages=2, trail=3), None)
    assert encode_chunk(make_record(SID, 2, messages=3, trail=1), chunk_counts(first))["full"] is True


def test_unicode_and_note_markers_survive_the_round_trip():
    record = make_record(SID, 1).model_copy(
        update={
            "messages": [
                Message(
                    role="assistant",
                    content="",
                    archmax={"note": "event"},
                    additional_kwargs={"archmax": {"note": "event"}},
                ),
                Message(role="user", content="naïve café — 日本語 \U0001f600"),
            ]
        }
    )
    data = chunk_bytes(encode_chunk(record, None))
    assert "日本語".encode() in data
    assert decode_chunks([chunk_from_bytes(data)]) == record


def test_chunk_bytes_are_compact_json():
    data = chunk_bytes(encode_chunk(make_record(SID, 1, messages=1), None))
    assert data == json.dumps(json.loads(data), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert len(data) < len(json.dumps(json.loads(data), indent=1).encode("utf-8"))


def test_head_of_a_chunk_needs_no_transcript():
    chunk = encode_chunk(
        make_record(SID, 1, messages=3, status="awaiting_input", resume_at="2025-01-02T00:00:00.000Z"), None
    )
    head = head_of_chunk({**chunk, "messages": None, "trail": None})
    assert (head.session_id, head.version, head.status, head.resume_at) == (
        SID,
        1,
        "awaiting_input",
        "2025-01-02T00:00:00.000Z",
    )


def test_checkpoint_names_are_ten_digit_zero_padded():
    assert checkpoint_name(1) == "checkpoints/0000000001.json"
    assert checkpoint_name(1234567890) == "checkpoints/1234567890.json"
    with pytest.raises(StoreError):
        checkpoint_name(0)


def test_decoding_a_delta_without_its_full_chunk_is_a_store_error():
    _, chunks = _history(3)
    with pytest.raises(StoreError):
        decode_chunks(chunks[1:])


def test_decoding_chunks_with_a_gap_is_a_store_error():
    _, chunks = _history(4)
    with pytest.raises(StoreError):
        decode_chunks([chunks[0], chunks[1], chunks[3]])


def test_decoding_nothing_or_an_unknown_format_is_a_store_error():
    with pytest.raises(StoreError):
        decode_chunks([])
    with pytest.raises(StoreError):
        decode_chunks([{**encode_chunk(make_record(SID, 1), None), "format": 2}])


def test_bytes_that_are_not_a_json_object_are_a_store_error():
    for data in (b"\xff", b"not json", b"[1, 2]"):
        with pytest.raises(StoreError):
            chunk_from_bytes(data)


def test_encoding_an_uncommitted_version_is_a_store_error():
    with pytest.raises(StoreError):
        encode_chunk(make_record(SID, 0), None)
