"""Segment items: chunks moved out of a session item into their own items of the same table (issue 24 goal 2).

A segment item is written with one PutItem *before* the session item's conditional UpdateItem that
lists it (write, then compare-and-set): a segment item no session item lists is garbage, never
state (the rule of the S3 chunk tokens, :mod:`archmax.stores.aws.layout`). Items::

    pk      S   <session id> US "segment" US <token>   (US = U+001F, which no session id holds
                (§4.1), so the key never names a session or an outbox entry's item)
    first   N   the version of the first chunk
    tokens  L   the commit attempt token of each version's chunk, in version order
    chunks  L   each version's chunk, packed (``plan.pack``: zlib-compressed JSON, binary), in version order

A segment item carries no ``status``, ``version`` nor index key: the stream's filter
(template.yaml ``FilterCriteria`` wants a ``status``), ``list``'s scan filter (``version``) and every
sparse index pass it by. It is immutable; it is deleted by the commit whose snapshot supersedes it,
by the losing attempt that wrote it, and by ``delete``; a crash between its PutItem and the
UpdateItem leaves one no item lists (never read).

Calls: :func:`put_segment` is one PutItem (billed one write unit per KB); :func:`read_segments` one
strongly consistent BatchGetItem per 100 items (again for unprocessed keys); :func:`delete_segments`
one BatchWriteItem per 25 items.

Rule source: issue 24 goal 2 (a small session item without an S3 PUT per cycle), DESIGN.md §3 "The
commit protocol" (an object nobody points at is garbage, never state).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from archmax.errors import StoreError
from archmax.stores.aws.errors import aws_call
from archmax.stores.aws.plan import Segment

SEPARATOR = "\x1f"
BATCH_GET = 100
"""Keys per BatchGetItem (DynamoDB's limit)."""
BATCH_WRITE = 25
"""Requests per BatchWriteItem (DynamoDB's limit)."""
ROUNDS = 6
"""Batch calls at most for one batch's unprocessed keys (with a short backoff between) before giving up."""


def segment_key(session_id: str, token: str) -> dict[str, Any]:
    """The key of segment item ``token`` of ``session_id``."""
    return {"pk": {"S": f"{session_id}{SEPARATOR}segment{SEPARATOR}{token}"}}


def segment_item(session_id: str, segment: Segment) -> dict[str, Any]:
    """The whole segment item of ``segment`` (see the module docstring)."""
    return {
        **segment_key(session_id, segment.token),
        "first": {"N": str(segment.first)},
        "tokens": {"L": [{"S": token} for token, _ in segment.chunks]},
        "chunks": {"L": [{"B": packed} for _, packed in segment.chunks]},
    }


def segment_of_item(item: dict[str, Any]) -> Segment:
    """The :class:`Segment` a segment item holds.

    Raises:
        StoreError: for an item that is not a whole segment item.
    """
    try:
        token = item["pk"]["S"].rsplit(SEPARATOR, 1)[1]
        tokens = [t["S"] for t in item["tokens"]["L"]]
        chunks = [bytes(c["B"]) for c in item["chunks"]["L"]]
        first = int(item["first"]["N"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise StoreError(f"not a segment item: {sorted(item)}") from exc
    if len(tokens) != len(chunks):
        raise StoreError(f"segment item {token} lists {len(tokens)} tokens for {len(chunks)} chunks")
    return Segment(token, first, tuple(zip(tokens, chunks, strict=True)))


def put_segment(ddb: Any, table: str, session_id: str, segment: Segment) -> None:
    """One PutItem of ``segment`` (before the UpdateItem that lists it).

    Raises:
        StoreError: on an AWS failure.
    """
    aws_call(
        ddb.put_item, operation="commit", session_id=session_id, TableName=table, Item=segment_item(session_id, segment)
    )


def read_segment(ddb: Any, table: str, session_id: str, token: str) -> Segment | None:
    """One strongly consistent GetItem of segment item ``token``, or ``None`` when there is none.

    Raises:
        StoreError: on an AWS failure.
    """
    answer = aws_call(
        ddb.get_item,
        operation="read",
        session_id=session_id,
        TableName=table,
        Key=segment_key(session_id, token),
        ConsistentRead=True,
    )
    item = answer.get("Item")
    return None if not item else segment_of_item(item)


def _backoff(round_: int) -> None:
    time.sleep(min(0.05 * 2**round_, 1.0))  # what AWS asks of a batch call's unprocessed part


def read_segments(ddb: Any, table: str, session_id: str, tokens: Iterable[str]) -> dict[str, Segment]:
    """The segment items ``tokens`` name that exist: strongly consistent BatchGetItems (issue 24 goal 2).

    Unprocessed keys are asked again (at most ``ROUNDS`` calls per 100 keys, a short backoff between).

    Returns:
        ``{token: Segment}``; a token whose item does not exist is left out (the caller decides).

    Raises:
        StoreError: on an AWS failure, or keys still unprocessed after ``ROUNDS`` calls.
    """
    wanted = list(dict.fromkeys(tokens))
    found: dict[str, Segment] = {}
    for start in range(0, len(wanted), BATCH_GET):
        keys = [segment_key(session_id, t) for t in wanted[start : start + BATCH_GET]]
        for round_ in range(ROUNDS):
            if round_:
                _backoff(round_)
            answer = aws_call(
                ddb.batch_get_item,
                operation="read",
                session_id=session_id,
                RequestItems={table: {"Keys": keys, "ConsistentRead": True}},
            )
            for item in answer.get("Responses", {}).get(table, []):
                segment = segment_of_item(item)
                found[segment.token] = segment
            keys = answer.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
            if not keys:
                break
        else:
            raise StoreError(f"{len(keys)} segment items still unprocessed (throttled)", session_id=session_id)
    return found


def delete_segments(ddb: Any, table: str, session_id: str, tokens: Iterable[str]) -> None:
    """Delete segment items no session item lists any more: BatchWriteItems of 25, best effort.

    A failure is swallowed: an unlisted segment item is garbage, never state (only storage is lost).
    """
    wanted = list(dict.fromkeys(tokens))
    for start in range(0, len(wanted), BATCH_WRITE):
        requests = [{"DeleteRequest": {"Key": segment_key(session_id, t)}} for t in wanted[start : start + BATCH_WRITE]]
        for round_ in range(ROUNDS):
            if round_:
                _backoff(round_)
            try:
                answer = aws_call(
                    ddb.batch_write_item,
                    operation="discard",
                    session_id=session_id,
                    RequestItems={table: requests},
                )
            except StoreError:
                return
            requests = answer.get("UnprocessedItems", {}).get(table, [])
            if not requests:
                break


__all__ = [
    "delete_segments",
    "put_segment",
    "read_segment",
    "read_segments",
    "segment_item",
    "segment_key",
    "segment_of_item",
]
