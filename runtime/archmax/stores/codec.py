"""Checkpoint chunks: how every store writes a checkpoint without rewriting the transcript.

Rule source: BEHAVIOUR.md §9.3 ("a stored checkpoint may be a delta against the one before it ...
the bytes a commit writes should not grow with the length of the transcript") and §9.2 (layout).

A chunk is a JSON-able dict, one per committed version::

    {"format": 1, "version": v, "base": b, "full": bool,
     "messages_from": n, "messages": [...], "trail_from": m, "trail": [...],
     "record": {every other Checkpoint field}, "message_count": N, "trail_count": M}

Messages and trail are append-only, so a *delta* chunk carries only what was appended since
version ``v - 1`` (``messages_from`` is the index of its first message), plus the whole small
rest of the record. A *full* chunk carries everything; one is written at version 1 and every
:data:`FULL_EVERY` versions after it, so loading reads at most ``FULL_EVERY`` chunks: the latest
chunk names its ``base`` (the last scheduled full chunk), and the loader reads ``base..v``.

The append-only contract is the writer's: a committed message or trail step must never be
edited in place afterwards (a delta only carries entries past the previous count). A list that
*shrank* is detected and gets a full chunk; an in-place edit of an old entry is not detected.

This module knows nothing about files, S3 or DynamoDB: every store shares it.
"""

from __future__ import annotations

import json
from typing import Any

from archmax.errors import StoreError
from archmax.session.records import Checkpoint
from archmax.stores.base import SessionHead, head_of

FORMAT = 1
"""The chunk format written by this module."""

FULL_EVERY = 50
"""A full chunk is scheduled at versions 1, 51, 101, ...: a load reads at most this many chunks."""

_APPENDED = ("messages", "trail")


def checkpoint_name(version: int) -> str:
    """The checkpoint's path relative to the session folder (§9.2).

    Args:
        version: A committed version, >= 1.

    Returns:
        ``checkpoints/<version, 10-digit zero-padded>.json``, e.g. ``checkpoints/0000000001.json``.
    """
    if version < 1:
        raise StoreError(f"checkpoint versions start at 1, got {version}")
    return f"checkpoints/{version:010d}.json"


def scheduled_base(version: int) -> int:
    """The version of the scheduled full chunk at or before ``version`` (1, 51, 101, ...)."""
    return version - (version - 1) % FULL_EVERY


def encode_chunk(
    record: Checkpoint, previous_counts: tuple[int, int] | None, *, scheduled: bool = True
) -> dict[str, Any]:
    """Encode one committed version as a chunk (§9.3).

    Args:
        record: The whole record of the new version (``record.version`` >= 1).
        previous_counts: ``(message_count, trail_count)`` of version ``record.version - 1`` as
            stored, or ``None`` for a first version. A full chunk is written when this is
            ``None``, when the version is a scheduled full one (see :func:`scheduled_base`), or
            when a previous count exceeds the record's list (append-only was broken: a full
            chunk is the safe answer).
        scheduled: Apply the version schedule of full chunks (:func:`scheduled_base`). A store that
            decides when to write full chunks itself (``AwsStore``: by bytes) passes ``False`` and
            asks for a full chunk with ``previous_counts=None``.

    Returns:
        A JSON-able dict (see the module docstring). Its size grows with what was appended since
        the previous version, not with the transcript's length (except on full chunks).

    Raises:
        StoreError: if ``record.version`` < 1.
    """
    version = record.version
    if version < 1:
        raise StoreError(f"a committed checkpoint has version >= 1, got {version}", session_id=record.session_id)
    # Dump only what this chunk carries: the fields, and the messages/trail appended since the
    # previous version — dumping the whole transcript would make every commit O(transcript).
    dumped = record.model_dump(mode="json", exclude={"messages", "trail"})
    n_messages, n_trail = len(record.messages), len(record.trail)
    base = scheduled_base(version)
    full = (
        previous_counts is None
        or (scheduled and base == version)
        or previous_counts[0] > n_messages
        or previous_counts[1] > n_trail
    )
    if full:
        # A forced full chunk is its own base; the chunks after it still name the scheduled base,
        # and decode_chunks restarts at any full chunk, so loading stays exact.
        base = version
        messages_from, trail_from = 0, 0
    else:
        messages_from, trail_from = previous_counts  # type: ignore[misc]
    messages = [m.model_dump(mode="json") for m in record.messages[messages_from:]]
    trail = [t.model_dump(mode="json", exclude_none=True) for t in record.trail[trail_from:]]
    return {
        "format": FORMAT,
        "version": version,
        "base": base,
        "full": full,
        "messages_from": messages_from,
        "messages": messages,
        "trail_from": trail_from,
        "trail": trail,
        "record": dumped,
        "message_count": n_messages,
        "trail_count": n_trail,
    }


def chunk_counts(chunk: dict[str, Any]) -> tuple[int, int]:
    """``(message_count, trail_count)`` of a chunk: the ``previous_counts`` of the next commit."""
    return int(chunk["message_count"]), int(chunk["trail_count"])


def chunk_versions_to_load(latest: dict[str, Any]) -> range:
    """The versions a loader reads to rebuild ``latest``'s record: ``base .. version`` inclusive."""
    return range(int(latest["base"]), int(latest["version"]) + 1)


def decode_chunks(chunks: list[dict[str, Any]]) -> Checkpoint:
    """Rebuild the whole record of the last chunk (§9.3: ``load`` returns the whole record).

    Args:
        chunks: A full chunk followed by the consecutive chunks after it, in version order. A full
            chunk met later in the list restarts the rebuild from it.

    Returns:
        The record of the last chunk, equal to the record that was encoded.

    Raises:
        StoreError: if the list is empty, does not start with a full chunk, skips a version, has an
            unknown format, or a delta does not continue the messages or trail it follows.
    """
    if not chunks:
        raise StoreError("no checkpoint chunks to decode")
    messages: list[Any] = []
    trail: list[Any] = []
    previous_version: int | None = None
    for chunk in chunks:
        if chunk.get("format") != FORMAT:
            raise StoreError(f"unknown checkpoint chunk format {chunk.get('format')!r}")
        version = chunk["version"]
        if chunk["full"]:
            messages, trail = [], []
        elif previous_version is None:
            raise StoreError(f"checkpoint chunk {version} is a delta with no full chunk before it")
        elif version != previous_version + 1:
            raise StoreError(f"checkpoint chunk {version} does not follow chunk {previous_version}")
        if chunk["messages_from"] != len(messages) or chunk["trail_from"] != len(trail):
            raise StoreError(f"checkpoint chunk {version} does not continue the transcript before it")
        messages.extend(chunk["messages"])
        trail.extend(chunk["trail"])
        previous_version = version
    last = chunks[-1]
    if len(messages) != last["message_count"] or len(trail) != last["trail_count"]:
        raise StoreError(f"checkpoint chunk {last['version']} counts do not match its rebuilt transcript")
    return Checkpoint.model_validate({**last["record"], "messages": messages, "trail": trail})


def head_of_chunk(chunk: dict[str, Any]) -> SessionHead:
    """The :class:`SessionHead` of a chunk's version, read from the chunk alone (no transcript needed)."""
    record = Checkpoint.model_validate({**chunk["record"], "messages": [], "trail": []})
    return head_of(record)


def chunk_bytes(chunk: dict[str, Any]) -> bytes:
    r"""Compact UTF-8 JSON of a chunk (no spaces, non-ASCII kept as UTF-8).

    A string holding a lone surrogate (a provider's JSON may carry ``"\ud83d"``, half an emoji) has
    no UTF-8 form; such a chunk is written with ``\uXXXX`` escapes instead, which
    :func:`chunk_from_bytes` reads back to the very same string, so the commit never fails on it.
    """
    text = json.dumps(chunk, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(chunk, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def chunk_from_bytes(data: bytes) -> dict[str, Any]:
    """Parse :func:`chunk_bytes` output.

    Raises:
        StoreError: if the bytes are not a JSON object.
    """
    try:
        chunk = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"a checkpoint chunk is not valid JSON: {exc}") from exc
    if not isinstance(chunk, dict):
        raise StoreError("a checkpoint chunk must be a JSON object")
    return chunk
