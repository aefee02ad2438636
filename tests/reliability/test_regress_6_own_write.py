"""Issue 9, scenario 6: a store knows its own landed write (AWS only: the others have no retried request).

DynamoDB applies a commit's UpdateItem, the response is lost (a read timeout) and botocore retries; the
retry fails its condition against the write that already landed. The commit must count as done and the
chunk the item now points to must stay. Rule source: BEHAVIOUR.md §9.1/§9.2 (a commit creates the next
version; the item points at its body), issue 9 item 6.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax.errors import CommitConflictError
from archmax.session.records import Message
from archmax.stores.aws.plan import INLINE_BUDGET_BYTES, SEGMENT_MAX_BYTES, entry_item_segment, entry_token
from archmax.stores.aws.segments import SEPARATOR
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import AwsFault
from stores.aws.records import filler, record


def _chunk_keys(env: Any, sid: str) -> list[str]:
    listed = env.aws.s3.list_objects_v2(Bucket=env.aws.bucket, Prefix="")
    return sorted(o["Key"] for o in listed.get("Contents", []) if "/checkpoints/" in o["Key"])


def test_a_commit_whose_response_was_lost_counts_as_landed_and_its_chunk_stays(aws_env: Any) -> None:
    sid = "lost-1"
    store = aws_env.store
    store.commit(sid, record(sid, 1, writer="first", pad=2 * SEGMENT_MAX_BYTES), 0)  # an S3 object, like version 2

    with AwsFault(aws_env.aws.dynamodb, "UpdateItem", "lost_response") as fault:
        # padded: the delta goes to S3, so the chunk object's fate is checked too (small ones ride in the item)
        store.commit(
            sid, record(sid, 2, messages=2, writer="second", pad=2 * SEGMENT_MAX_BYTES), 1
        )  # no conflict raised

    assert fault.fired == 1
    fresh = aws_env.other_store()  # no cached chunk: reads S3 like any other process
    loaded = fresh.load(sid)
    assert loaded is not None and loaded.version == 2 and loaded.variables["writer"].value == "second"
    assert len(_chunk_keys(aws_env, sid)) == 2


def test_a_first_commit_whose_response_was_lost_creates_the_session_once(aws_env: Any) -> None:
    sid = "lost-new"
    with AwsFault(aws_env.aws.dynamodb, "UpdateItem", "lost_response"):
        aws_env.store.commit(sid, record(sid, 1, writer="only"), 0)
    assert aws_env.other_store().load(sid).variables["writer"].value == "only"


def test_a_real_conflict_is_still_refused_and_its_orphan_chunk_deleted(aws_env: Any) -> None:
    sid = "lost-conflict"
    winner, loser = aws_env.store, aws_env.other_store()
    winner.commit(sid, record(sid, 1, pad=2 * SEGMENT_MAX_BYTES), 0)  # an S3 object: small ones ride in the item
    loser.load(sid)
    winner.commit(sid, record(sid, 2, messages=2, writer="winner", pad=2 * SEGMENT_MAX_BYTES), 1)

    with pytest.raises(CommitConflictError):
        loser.commit(sid, record(sid, 2, messages=2, writer="loser", pad=2 * SEGMENT_MAX_BYTES), 1)

    assert aws_env.other_store().load(sid).variables["writer"].value == "winner"
    assert len(_chunk_keys(aws_env, sid)) == 2  # the loser's chunk was tidied, the winner's kept


def _grown(sid: str, version: int, writer: str = "") -> Any:
    """Version ``version`` of a session whose every commit appends a message of ``PAD`` noise characters."""
    rec = record(sid, version, messages=version, writer=writer or f"v{version}")
    rec.messages = [Message(role="user", content=f"message {i} " + filler(PAD, f"{sid}{i}")) for i in range(version)]
    return rec


PAD = INLINE_BUDGET_BYTES // 3
"""Filler per message: a delta packs to ~0.4 of the inline budget (two fit it, three do not)."""


def _segments(env: Any, sid: str) -> list[str]:
    items = env.aws.dynamodb.scan(TableName=env.aws.table_name, ConsistentRead=True)["Items"]
    return sorted(i["pk"]["S"] for i in items if i["pk"]["S"].startswith(f"{sid}{SEPARATOR}segment{SEPARATOR}"))


def test_a_commit_that_moved_chunks_to_a_segment_item_and_lost_its_response_counts_as_landed(aws_env: Any) -> None:
    sid = "lost-move"
    store = aws_env.store
    for v in (1, 2):  # two chunks fill the inline budget
        store.commit(sid, _grown(sid, v), v - 1)
    with AwsFault(aws_env.aws.dynamodb, "UpdateItem", "lost_response") as fault:
        store.commit(sid, _grown(sid, 3, "third"), 2)  # puts a segment item, then the CAS: no conflict raised
    assert fault.fired == 1
    assert len(_segments(aws_env, sid)) == 1  # the segment item the item lists stays
    assert aws_env.other_store().load(sid) == _grown(sid, 3, "third")


def test_a_lost_response_is_recognised_after_a_later_commit_moved_its_chunk_into_a_segment_item(aws_env: Any) -> None:
    sid = "lost-moved"
    store, other = aws_env.store, aws_env.other_store()
    store.commit(sid, _grown(sid, 1), 0)
    store.commit(sid, _grown(sid, 2), 1)  # inline, as the lost-response writer's own chunk
    item = aws_env.aws.dynamodb.get_item(TableName=aws_env.aws.table_name, Key={"pk": {"S": sid}})["Item"]
    token = entry_token(item["chunks"]["L"][-1])
    other.commit(sid, _grown(sid, 3), 2)  # the next writer moves version 2's chunk into a segment item
    item = aws_env.aws.dynamodb.get_item(TableName=aws_env.aws.table_name, Key={"pk": {"S": sid}})["Item"]
    assert token not in [entry_token(e) for e in item["chunks"]["L"]]
    assert any(entry_item_segment(e) for e in item["chunks"]["L"])
    bare = getattr(store, "_inner", store)  # the protocol-only wrapper hides internals
    conflict = CommitConflictError(sid, 1, {"version": 3})  # the retry's failure, its item not returned
    assert bare._landed(conflict, sid, 2, token)  # read from the segment item that now holds it
    assert not bare._landed(conflict, sid, 2, "0123456789abcdef")


def test_a_delivery_whose_claim_response_was_lost_runs_its_turn_and_the_session_stays_readable(
    aws_env: Any,
) -> None:
    agent = aws_env.agent(
        [
            {"call": {"archmax_advance": {"to": "clarify", "reason": "no order"}}},
            {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number"}}},
            {"say": "ORD-1001 ships today."},
        ]
    )
    vars_ = {"conversation_id": "c-6"}
    agent.workflow.send("c-6", "Where is it?", trigger="email_received", variables=vars_)

    with AwsFault(aws_env.aws.dynamodb, "UpdateItem", "lost_response") as fault:
        outcome = agent.workflow.deliver("c-6", trigger="email_reply", variables={"reply_body": "ORD-1001"})

    assert fault.fired == 1 and outcome.kind == "completed"
    again = aws_env.agent([]).sessions.get("c-6")
    assert again.status == "completed"
    assert aws_env.other_store().load("c-6").messages[-1].content == "ORD-1001 ships today."
