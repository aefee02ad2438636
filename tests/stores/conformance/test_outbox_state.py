"""Conformance: an outbox entry's claim and outcome, as every store keeps them (issue 20 items 3 and 5; issue 24).

Rule source: issue 20 (a sender claims an entry before sending: one live claim at a time, taken
over once expired or released; sent and failed are recorded once and never claimed again) and
issue 24 goal 2 (the AWS store keeps these as items, the others as files: the same answers). The
committer's question (``outbox_outcomes``) reads the same state the sender writes.
"""

from __future__ import annotations

import threading

from archmax.stores.base import OutboxClaim, OutboxOutcome

from .conftest import T0, make_record, requires

E1, E2 = "0000000002-0", "0000000002-1"
NOW = "2025-01-01T00:00:00.000Z"
LATER = "2025-01-01T00:05:00.000Z"
AFTER = "2025-01-01T00:05:00.001Z"


def _session(store, session_id):
    store.commit(session_id, make_record(session_id, 1), 0)


def test_one_claim_holds_an_entry_until_it_is_sent_and_a_sent_entry_is_never_claimed_again(store, session_id):
    _session(store, session_id)
    assert store.outbox_claim(session_id, E1, created_at=T0, owner="a", now=NOW, until=LATER) == OutboxClaim.CLAIMED
    assert store.outbox_claim(session_id, E1, created_at=T0, owner="b", now=NOW, until=LATER) == OutboxClaim.HELD
    assert (
        store.outbox_claim(session_id, E2, created_at=T0, owner="b", now=NOW, until=LATER) == OutboxClaim.CLAIMED
    )  # its own
    assert (
        store.outbox_result(session_id, E1, created_at=T0) is None
        and store.outbox_outcomes(session_id, [E1, E2], created_at=T0) == {}
    )
    assert store.outbox_record(session_id, E1, OutboxOutcome.SENT, '{"by": "a"}', created_at=T0) is True
    assert (
        store.outbox_record(session_id, E1, OutboxOutcome.SENT, '{"by": "b"}', created_at=T0) is False
    )  # the first stands
    assert store.outbox_result(session_id, E1, created_at=T0) == '{"by": "a"}'
    assert store.outbox_outcomes(session_id, [E1, E2], created_at=T0) == {E1: OutboxOutcome.SENT}
    assert (
        store.outbox_claim(session_id, E1, created_at=T0, owner="c", now=AFTER, until="2025-01-02T00:00:00.000Z")
        == "sent"
    )


def test_an_expired_claim_is_taken_over_and_a_released_one_at_once_by_its_owner_only(store, session_id):
    _session(store, session_id)
    assert store.outbox_claim(session_id, E1, created_at=T0, owner="dead", now=NOW, until=LATER) == OutboxClaim.CLAIMED
    assert (
        store.outbox_claim(session_id, E1, created_at=T0, owner="sweep", now=LATER, until=AFTER) == OutboxClaim.CLAIMED
    )
    store.outbox_release(
        session_id, E1, created_at=T0, owner="dead", now=LATER
    )  # not its claim any more: nothing changes
    assert store.outbox_claim(session_id, E1, created_at=T0, owner="late", now=LATER, until=AFTER) == OutboxClaim.HELD
    store.outbox_release(session_id, E1, created_at=T0, owner="sweep", now=LATER)  # its send failed: let go at once
    assert (
        store.outbox_claim(session_id, E1, created_at=T0, owner="retry", now=LATER, until=AFTER) == OutboxClaim.CLAIMED
    )


def test_a_failed_entry_is_settled_for_the_committer_and_never_claimed(store, session_id):
    _session(store, session_id)
    assert store.outbox_claim(session_id, E2, created_at=T0, owner="a", now=NOW, until=LATER) == OutboxClaim.CLAIMED
    assert store.outbox_record(session_id, E2, OutboxOutcome.FAILED, '{"reason": "no From"}', created_at=T0) is True
    assert (
        store.outbox_claim(session_id, E2, created_at=T0, owner="b", now=AFTER, until="2025-01-02T00:00:00.000Z")
        == "failed"
    )
    assert store.outbox_outcomes(session_id, [E1, E2, E2], created_at=T0) == {E2: OutboxOutcome.FAILED}
    assert store.outbox_result(session_id, E2, created_at=T0) is None  # failed is not sent
    assert store.outbox_outcomes(session_id, [], created_at=T0) == {}


def test_of_racing_claimers_exactly_one_gets_the_entry(store, session_id):
    _session(store, session_id)
    answers: list[OutboxClaim] = []
    start = threading.Barrier(6)

    def claim(owner: str) -> None:
        start.wait()
        answers.append(store.outbox_claim(session_id, E1, created_at=T0, owner=owner, now=NOW, until=LATER))

    threads = [threading.Thread(target=claim, args=(f"sender-{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == sorted([OutboxClaim.CLAIMED] + [OutboxClaim.HELD] * 5)


def test_a_session_deleted_and_started_again_under_its_id_owes_its_entries_afresh(store, session_id):
    requires(store, "delete")
    _session(store, session_id)
    assert store.outbox_claim(session_id, E1, created_at=T0, owner="a", now=NOW, until=LATER) == "claimed"
    assert store.outbox_record(session_id, E1, OutboxOutcome.SENT, "{}", created_at=T0) is True
    store.delete(session_id)
    again = "2025-03-01T00:00:00.000Z"  # the new session's created_at; its entry ids start over
    store.commit(session_id, make_record(session_id, 1), 0)
    assert store.outbox_outcomes(session_id, [E1], created_at=again) == {}
    assert store.outbox_claim(session_id, E1, created_at=again, owner="b", now=NOW, until=LATER) == "claimed"
