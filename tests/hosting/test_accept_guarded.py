"""Accept on AwsStore + DynamoInbox: the session read rides the inbox put as a condition check (issue 10).

Rule source: issue 10 ("accept = one transactional inbox put, the session head read folded into it"),
DESIGN.md §3 "Inbox" (accept validates, then writes the item). A warm store instance classifies the
firing on the version it last saw; the put lands only if the session is still there, else the
firing is classified again on what the put found. A refusal is never made on a remembered view.

Every test runs on the bare store and on the store behind a wrapper with exactly the store
protocol's members (issue 23): the same fast path, the same AWS calls.
"""

from __future__ import annotations

from typing import Any

from archmax import create_agent
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import Firing
from stores.aws.moto_env import CallLog
from stores.protocol_only import protocol_only

from .conftest import INBOX_TABLE, SUPPORT_INBOX, Wrap, bare, inbox_table_definition, moto_env
from .test_host import FIRST_TURN, SID, ack, email, user_texts


def _host(aws: Any, clock: Any, entries: list[dict[str, Any]], wrap: Wrap = bare) -> Host:
    """A host with its own store and inbox instances (another container) over the shared tables.

    No in-process outbound dispatcher: on AWS the outbound function sends from the table's stream.
    """
    agent = create_agent(SUPPORT_INBOX, wrap(aws.store()), ScriptedModel(entries), clock=clock, outbound=False)
    return Host(agent, DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock), waker=lambda sid: None)


def test_a_warm_accept_is_one_transaction_with_no_session_read(aws, clock, wrap):
    host = _host(aws, clock, FIRST_TURN, wrap)
    with CallLog(aws.dynamodb, aws.s3) as log:
        first = host.accept(email("About the thing we discussed", "ses-1"))
    assert log.calls == ["dynamodb.TransactWriteItems"]  # a session this store never saw: checked absent
    assert first.disposition == "turn"
    host.drain(SID)
    with CallLog(aws.dynamodb, aws.s3) as log:
        second = host.accept(email("It is order 42", "ses-2"))
    assert log.calls == ["dynamodb.TransactWriteItems"]
    assert second.disposition == "resume"  # parked on input, as the drain left it
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-2"]


def test_a_session_another_instance_moved_is_classified_again_on_what_the_put_found(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN + [ack(1)], wrap)
    other = _host(aws, clock, [], wrap)
    first.accept(email("About the thing we discussed", "ses-1"))
    first.drain(SID)  # parked on input: `other` has never seen the session
    with CallLog(aws.dynamodb) as log:
        accepted = other.accept(email("It is order 42", "ses-2"))
    assert accepted.disposition == "resume"
    assert log.count("dynamodb.GetItem") == 0 and log.count("dynamodb.TransactWriteItems") == 2
    first.drain(SID)  # `first` remembers the park it made; the session moved on since
    accepted = first.accept(email("Thanks", "ses-3"))
    assert accepted.disposition == "resume"
    assert [(i.delivery_id, i.seq) for i in first.inbox.pending(SID)] == [("ses-3", 3)]


def test_a_refusal_is_never_made_on_a_remembered_view(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN, wrap)
    first.accept(email("About the thing we discussed", "ses-1"))
    first.drain(SID)
    other = _host(aws, clock, [], wrap)  # remembers nothing: would take the session for absent
    firing = Firing(trigger="not_declared", message="hello", variables={"conversation_id": SID}, delivery_id="x-1")
    accepted = other.accept(firing, session_id=SID)  # an undeclared trigger refuses only a new session
    assert accepted.disposition == "resume"
    assert [i.delivery_id for i in other.inbox.pending(SID)] == ["x-1"]


# ---------------------------------------------------------------- the drain acts on the version it remembers


def test_a_warm_drain_reads_no_session_item_its_claim_checks_the_version(aws, clock, wrap):
    host = _host(aws, clock, FIRST_TURN + [ack(1)], wrap)
    host.accept(email("About the thing we discussed", "ses-1"))
    host.drain(SID)
    host.accept(email("It is order 42", "ses-2"))
    with CallLog(aws.dynamodb, aws.s3) as log:
        (outcome,) = host.drain(SID)
    assert outcome.kind == "parked"  # type: ignore[union-attr]
    assert log.count("dynamodb.GetItem") == 0 and log.count("s3.GetObject") == 0
    assert log.calls[0] == "dynamodb.Query"


def test_a_drain_on_a_version_another_instance_moved_applies_the_item_on_a_fresh_read(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN + [ack(3)], wrap)
    other = _host(aws, clock, [ack(2)], wrap)
    first.accept(email("About the thing we discussed", "ses-1"))
    first.drain(SID)  # `first` remembers the park it made
    other.accept(email("It is order 42", "ses-2"))
    other.drain(SID)  # the session moved on without `first`
    other.accept(email("Thanks", "ses-3"))
    with CallLog(aws.dynamodb) as log:
        (outcome,) = first.drain(SID)  # its claim on the old version loses; applied again on a fresh read
    assert outcome.kind == "parked"  # type: ignore[union-attr]
    assert log.count("dynamodb.GetItem") >= 1  # the fresh read after the lost claim
    assert first.inbox.get(SID, "ses-3").status == "done"
    assert user_texts(first) == ["About the thing we discussed", "It is order 42", "Thanks"]


# ---------------------------------------------------------------- the wrapper takes the same path


def _lambda_path_calls(aws: Any, clock: Any, wrap: Wrap) -> list[str]:
    """The AWS calls of accept, drain, accept, drain and a summary, as one warm container makes them."""
    host = _host(aws, clock, FIRST_TURN + [ack(1)], wrap)
    with CallLog(aws.dynamodb, aws.s3) as log:
        host.accept(email("About the thing we discussed", "ses-1"))
        host.drain(SID)
        host.accept(email("It is order 42", "ses-2"))
        host.drain(SID)
        assert host.agent.sessions.get(SID) is not None
    return log.calls


def test_a_store_behind_a_protocol_only_wrapper_makes_exactly_the_bare_stores_aws_calls(aws, clock):
    plain = _lambda_path_calls(aws, clock, bare)
    fresh = moto_env().fresh_env()  # the same tables, empty again
    fresh.dynamodb.create_table(TableName=INBOX_TABLE, **inbox_table_definition())
    wrapped = _lambda_path_calls(fresh, clock, protocol_only)
    assert wrapped == plain
    assert plain.count("dynamodb.TransactWriteItems") >= 4  # the fast path itself: guarded puts, riding commits


# ---------------------------------------------------------------- issue 23: a session that keeps moving


class MovesTheSessionBeforeEachGuardedPut(DynamoInbox):
    """An inbox whose every guarded put finds the session moved on by another writer (the race, made certain)."""

    def __init__(self, other_store: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.other_store = other_store
        self.moved = 0

    def put(self, item: Any, *, guards: list[dict[str, Any]] | None = None) -> bool:
        if guards:
            record = self.other_store.load(item.session_id)
            version = record.version
            record.version = version + 1
            self.other_store.commit(item.session_id, record, version)
            self.moved += 1
        return super().put(item, guards=guards)


def test_an_accept_whose_session_moves_before_every_guarded_put_lands_unguarded(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN, wrap)
    first.accept(email("About the thing we discussed", "ses-1"))
    first.drain(SID)  # parked on input; `first` remembers the park
    inbox = MovesTheSessionBeforeEachGuardedPut(aws.store(), INBOX_TABLE, client=aws.dynamodb, clock=clock)
    host = Host(first.agent, inbox, waker=lambda sid: None)
    accepted = host.accept(email("It is order 42", "ses-2"))
    assert accepted.disposition == "resume"
    assert [i.delivery_id for i in inbox.pending(SID)] == ["ses-2"]
