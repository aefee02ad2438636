"""Accept on AwsStore + DynamoInbox: a read of the session, then one transaction of the inbox's own items (issue 24).

Rule source: DESIGN.md §3 "Inbox" (accept validates, then writes the item), §4 (202 once the
firing is durably inboxed); issue 24 (the accept's condition check on the session item, billed as
a write of the whole item and cancelled whenever another container had moved the session, is gone:
the firing is classified on a read, and the put touches nothing of the sessions table). Issue 10's
warm drain (it acts on the version it remembers; its claim checks it) is unchanged.

Every test runs on the bare store and on the store behind a wrapper with exactly the store
protocol's members (issue 23): the same path, the same AWS calls.
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


class TransactionTables:
    """The tables each ``TransactWriteItems`` item names, per call, seen through a botocore hook."""

    def __init__(self, client: Any) -> None:
        self.calls: list[list[str]] = []
        self._client = client

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.calls.append([next(iter(entry.values()))["TableName"] for entry in params["TransactItems"]])

    def __enter__(self) -> TransactionTables:
        self._client.meta.events.register(
            "provide-client-params.dynamodb.TransactWriteItems", self._record, unique_id=f"tables-{id(self)}"
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.meta.events.unregister(
            "provide-client-params.dynamodb.TransactWriteItems", unique_id=f"tables-{id(self)}"
        )


def test_an_accept_is_one_session_read_and_one_transaction_of_inbox_items(aws, clock, wrap):
    host = _host(aws, clock, FIRST_TURN, wrap)
    with CallLog(aws.dynamodb, aws.s3) as log, TransactionTables(aws.dynamodb) as tables:
        first = host.accept(email("About the thing we discussed", "ses-1"))
    # the session (absent) is read; so is the counter this inbox never saw (the id came from the mail,
    # not minted here): a read, never a cancelled transaction
    assert log.calls == ["dynamodb.GetItem", "dynamodb.GetItem", "dynamodb.TransactWriteItems"]
    assert tables.calls == [[INBOX_TABLE, INBOX_TABLE]]  # the item and the counter: nothing of the sessions table
    assert first.disposition == "turn"
    host.drain(SID)
    with CallLog(aws.dynamodb, aws.s3) as log, TransactionTables(aws.dynamodb) as tables:
        second = host.accept(email("It is order 42", "ses-2"))
    assert log.calls == ["dynamodb.GetItem", "dynamodb.TransactWriteItems"]
    assert tables.calls == [[INBOX_TABLE, INBOX_TABLE]]
    assert second.disposition == "resume"  # parked on input, as the drain left it
    assert [i.delivery_id for i in host.inbox.pending(SID)] == ["ses-2"]


def test_an_accept_in_a_container_the_session_moved_past_is_classified_on_the_read_with_nothing_cancelled(
    aws, clock, wrap
):
    first = _host(aws, clock, FIRST_TURN + [ack(1)], wrap)
    other = _host(aws, clock, [], wrap)
    first.accept(email("About the thing we discussed", "ses-1"))
    first.drain(SID)  # parked on input: `other` has never seen the session
    with CallLog(aws.dynamodb) as log:
        accepted = other.accept(email("It is order 42", "ses-2"))
    assert accepted.disposition == "resume"
    assert log.calls == ["dynamodb.GetItem", "dynamodb.GetItem", "dynamodb.TransactWriteItems"]  # + the counter
    first.drain(SID)  # `first` remembers the park it made; `other` saw an older version
    with CallLog(aws.dynamodb) as log:
        accepted = other.accept(email("Thanks", "ses-3"))
    assert accepted.disposition == "resume"
    assert log.calls == ["dynamodb.GetItem", "dynamodb.TransactWriteItems"]  # one put, never a cancelled one
    assert [(i.delivery_id, i.seq) for i in first.inbox.pending(SID)] == [("ses-3", 3)]


def test_an_accept_for_a_session_whose_id_it_minted_takes_the_counter_for_zero_without_a_read(aws, clock, wrap):
    host = _host(aws, clock, [], wrap)
    firing = Firing(trigger="email_received", message="hello", delivery_id="m-1")  # no conversation id: minted
    with CallLog(aws.dynamodb) as log:
        accepted = host.accept(firing, session_path="missing.variable")
    assert accepted.session_id != SID and accepted.warnings  # the path did not resolve: an id was minted
    assert log.calls == ["dynamodb.GetItem", "dynamodb.TransactWriteItems"]
    assert [(i.delivery_id, i.seq) for i in host.inbox.pending(accepted.session_id)] == [("m-1", 1)]


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
    assert plain.count("dynamodb.TransactWriteItems") == 2  # the two inbox puts: nothing rides a commit (issue 24)


# ---------------------------------------------------------------- the session moves between the read and the put


class MovesTheSessionBeforeEachPut(DynamoInbox):
    """An inbox whose every put finds the session moved on by another writer since the accept read it."""

    def __init__(self, other_store: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.other_store = other_store
        self.moved = 0

    def put(self, item: Any, *, new_session: bool = False) -> bool:
        record = self.other_store.load(item.session_id)
        version = record.version
        record.version = version + 1
        self.other_store.commit(item.session_id, record, version)
        self.moved += 1
        return super().put(item, new_session=new_session)


def test_an_accept_whose_session_moves_before_its_put_lands_once_and_is_applied_once(aws, clock, wrap):
    first = _host(aws, clock, FIRST_TURN + [ack(1)], wrap)
    first.accept(email("About the thing we discussed", "ses-1"))
    first.drain(SID)  # parked on input
    inbox = MovesTheSessionBeforeEachPut(aws.store(), INBOX_TABLE, client=aws.dynamodb, clock=clock)
    host = Host(first.agent, inbox, waker=lambda sid: None)
    with TransactionTables(aws.dynamodb) as tables:
        accepted = host.accept(email("It is order 42", "ses-2"))
    assert accepted.disposition == "resume" and inbox.moved == 1
    assert tables.calls and all(t == [INBOX_TABLE, INBOX_TABLE] for t in tables.calls)  # no session version checked
    assert [i.delivery_id for i in inbox.pending(SID)] == ["ses-2"]
    (outcome,) = host.drain(SID)  # the drain applies it on what the session is now
    assert outcome.kind == "parked"  # type: ignore[union-attr]
    assert inbox.get(SID, "ses-2").status == "done"
    assert user_texts(first) == ["About the thing we discussed", "It is order 42"]
