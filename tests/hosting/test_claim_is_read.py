"""The claim is the read: a warm store's operation makes no session read of its own (issue 24 goal 2).

Rule source: issue 24 ("≤ 2 AWS calls per cycle on the public API with a warm store: a claim that
returns the state is also the read; the commit lets the lease go"), BEHAVIOUR.md §3.5 (deliver),
§3.12 (one writer; a lost race changes nothing), §5.11 (a stale park id is refused), the port's
``Capability.GUARDED_READS`` (engine/remembered.py). The operation acts on the version this store
instance last committed; its claim is conditional on that version, so a view another container
made old loses the claim and the firing is decided again on a fresh read, exactly as if it had
been read first. A refusal is never made on a remembered view, and an operation that wrote is
never run again.

Every test runs on the bare store and behind the protocol-only wrapper (issue 23): the same path.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax import create_agent
from archmax.errors import ModelError, SessionNotAwaitingInputError
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox
from archmax.models.scripted import ScriptedModel
from stores.aws.moto_env import CallLog

from .conftest import INBOX_TABLE, SUPPORT_INBOX
from .test_accept_aws import _host
from .test_host import FIRST_TURN, SID, ack, email, user_texts


def _parked(host: Host) -> None:
    """The session's first turn, parked on input, served by ``host`` (whose store remembers the park)."""
    host.accept(email("About the thing we discussed", "ses-1"))
    host.drain(SID)


def _session_calls(log: CallLog) -> list[str]:
    return [c for c in log.calls if c.startswith("dynamodb.")]


def test_a_warm_delivery_is_the_claim_and_the_turns_commit_with_no_read(aws, clock, wrap):
    host = _host(aws, clock, FIRST_TURN + [ack(1)], wrap)
    _parked(host)
    with CallLog(aws.dynamodb, aws.s3) as log:
        outcome = host.agent.workflow.deliver(SID, trigger="email_received", message="It is order 42")
    assert outcome.kind == "parked"
    assert _session_calls(log) == ["dynamodb.UpdateItem", "dynamodb.UpdateItem"]  # claim, then the commit
    assert log.count("s3.GetObject") == 0
    assert user_texts(host) == ["About the thing we discussed", "It is order 42"]


def test_a_version_another_container_moved_is_delivered_on_what_the_lost_claim_found(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN + [ack(2)], wrap)
    other = _host(aws, clock, [ack(1)], wrap)
    _parked(first)  # `first` remembers the park it made
    other.agent.workflow.deliver(SID, trigger="email_received", message="It is order 42")  # moved on without it
    version = other.agent.store.head(SID).version
    with CallLog(aws.dynamodb) as log:
        outcome = first.agent.workflow.deliver(SID, trigger="email_received", message="Thanks")
    assert outcome.kind == "parked"
    # the lost claim, the read after it (it decides the firing again: no second read), the claim, the commit
    assert log.calls == ["dynamodb.UpdateItem", "dynamodb.GetItem", "dynamodb.UpdateItem", "dynamodb.UpdateItem"]
    assert first.agent.store.head(SID).version == version + 2  # the claim and the commit of one turn
    assert user_texts(first) == ["About the thing we discussed", "It is order 42", "Thanks"]


def test_a_refusal_is_never_made_on_a_remembered_view(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN + [ack(2)], wrap)
    other = _host(aws, clock, [ack(1)], wrap)
    _parked(first)
    parked = other.agent.workflow.deliver(SID, trigger="email_received", message="It is order 42")
    # `first` remembers the old park: its id for the new one would be stale there, current in the table
    outcome = first.agent.workflow.deliver(SID, trigger="email_received", message="Thanks", park_id=parked.park_id)
    assert outcome.kind == "parked"
    assert user_texts(first) == ["About the thing we discussed", "It is order 42", "Thanks"]


def test_a_refusal_on_a_fresh_read_stands_and_changes_nothing(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN + [ack(2)], wrap)
    other = _host(aws, clock, [ack(1)], wrap)
    _parked(first)
    old_park = first.agent.store.load(SID).park_id
    other.agent.workflow.deliver(SID, trigger="email_received", message="It is order 42")
    before = other.agent.store.load(SID)
    with CallLog(aws.dynamodb) as log, pytest.raises(SessionNotAwaitingInputError) as refused:
        first.agent.workflow.deliver(SID, trigger="email_received", message="Thanks", park_id=old_park)
    assert "dynamodb.GetItem" in log.calls  # the claim on the remembered park lost; decided on the table
    assert not refused.value.lost_race  # refused as a fresh read refuses it: a stale park id (§5.11)
    assert other.agent.store.load(SID) == before


def test_an_operation_that_wrote_is_never_run_again(aws, clock, wrap):
    wrong = {"say": "x", "expect_state": "intake"}  # the session is in 'clarify': the model call fails
    model = ScriptedModel([*FIRST_TURN, wrong, wrong])
    agent = create_agent(SUPPORT_INBOX, wrap(aws.store()), model, clock=clock, outbound=False)
    host = Host(agent, DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock), waker=lambda sid: None)
    _parked(host)
    with pytest.raises(ModelError):  # raised after the claim landed: the turn ran once
        host.agent.workflow.deliver(SID, trigger="email_received", message="It is order 42")
    assert model.consumed == len(FIRST_TURN) + 1  # one model call: the delivery was not applied again
    assert user_texts(host).count("It is order 42") == 1


def test_a_session_deleted_and_started_again_at_the_same_version_is_not_claimed_on_the_old_view(aws, clock, wrap):
    # `first` remembers the old session at version 2; `other` deletes it and starts the id over (§3.10)
    # to version 2 again: the version alone cannot tell the two apart, the session's created_at can.
    first = _host(aws, clock, FIRST_TURN + [ack(2)], wrap)
    other = _host(aws, clock, FIRST_TURN, wrap)
    first.accept(email("Old session", "ses-old"))
    first.drain(SID)
    assert other.agent.sessions.delete(SID)
    clock.advance(seconds=60)
    other.accept(email("New session", "ses-new"))
    other.drain(SID)
    started = other.agent.store.load(SID)
    assert started.version == first.agent.store.head(SID).version  # the same number, another session
    outcome = first.agent.workflow.deliver(SID, trigger="email_received", message="Thanks", delivery_id="ses-2")
    assert outcome.kind == "parked"
    after = other.agent.store.load(SID)
    assert after.created_at == started.created_at  # the new session's, not the deleted one's
    assert after.delivery_ids == ["ses-new", "ses-2"]  # the old session's ids are not the new one's
    assert user_texts(other) == ["New session", "Thanks"]


def _table_and_bucket(aws: Any) -> dict[str, Any]:
    """Every sessions-table item and every object of the bucket, as stored (bytes)."""
    items = aws.dynamodb.scan(TableName=aws.table_name, ConsistentRead=True)["Items"]
    out: dict[str, Any] = {f"ddb/{i['pk']['S']}": repr(sorted(i.items())) for i in items}
    for o in aws.s3.list_objects_v2(Bucket=aws.bucket).get("Contents", []):
        out[f"s3/{o['Key']}"] = aws.s3.get_object(Bucket=aws.bucket, Key=o["Key"])["Body"].read()
    return out


@pytest.mark.parametrize("size", [1, 50_000])
def test_a_refused_delivery_with_files_on_a_remembered_view_leaves_every_byte_as_it_was(aws, clock, wrap, size):
    first = _host(aws, clock, FIRST_TURN + [ack(2)], wrap)
    other = _host(aws, clock, [ack(1)], wrap)
    _parked(first)
    old_park = first.agent.store.load(SID).park_id
    other.agent.workflow.deliver(SID, trigger="email_received", message="It is order 42")
    before = _table_and_bucket(aws)
    with pytest.raises(SessionNotAwaitingInputError):  # its claim on the remembered park lost, then refused
        first.agent.workflow.deliver(
            SID, trigger="email_received", message="Thanks" * size, park_id=old_park, files={"a.txt": "hello"}
        )
    assert _table_and_bucket(aws) == before
