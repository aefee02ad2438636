"""Conformance: ``stale(now)`` lists running sessions whose turn holder is gone.

Rule source: DESIGN.md §3 "Inbox" ("A lease whose holder died expires; the sweep re-drives
sessions with expired leases"), BEHAVIOUR.md §3.12 (a lease is live while ``expires_at > now``;
a running session with no lease is taken over). A ``running`` session with no lease counts as
expired at its ``updated_at``. The AWS store answers from its sparse ``stale-leases`` index
(its Query-only cost is pinned in ``tests/stores/aws/test_aws_stale.py``).
"""

from __future__ import annotations

import uuid

import pytest

from archmax.session.records import SessionStatus

from .conftest import make_record, requires

EXPIRES = "2025-01-01T00:15:00.000Z"
BEFORE = "2025-01-01T00:14:59.999Z"
LATER = "2025-01-01T01:00:00.000Z"


def _running(store, sid, *, owner="turn-1", expires_at=EXPIRES, workflow="support-inbox", updated_at=None):
    extra = {"updated_at": updated_at} if updated_at else {}
    store.commit(
        sid,
        make_record(sid, 1, lease_owner=owner, lease_expires_at=expires_at, workflow=workflow, **extra),
        0,
    )


def test_a_running_session_whose_lease_expired_is_stale(store, session_id):
    requires(store, "list")
    _running(store, session_id)
    assert store.stale(LATER) == [session_id]


def test_a_lease_expiring_exactly_now_has_expired(store, session_id):
    requires(store, "list")
    _running(store, session_id)
    assert store.stale(EXPIRES) == [session_id]


def test_a_running_session_whose_lease_is_live_is_not_stale(store, session_id):
    requires(store, "list")
    _running(store, session_id)
    assert store.stale(BEFORE) == []


def test_a_running_session_with_no_lease_is_stale_from_its_last_write(store, session_id):
    requires(store, "list")
    _running(store, session_id, owner=None, updated_at="2025-01-01T00:05:00.000Z")
    assert store.stale(LATER) == [session_id]
    assert store.stale("2025-01-01T00:05:00.000Z") == [session_id]
    assert store.stale("2025-01-01T00:04:59.999Z") == []  # not yet written at that instant


@pytest.mark.parametrize(
    "status",
    [
        SessionStatus.AWAITING_INPUT,
        SessionStatus.AWAITING_DECISION,
        SessionStatus.COMPLETED,
        SessionStatus.FAILED,
        SessionStatus.REJECTED,
    ],
)
def test_a_session_that_is_not_running_is_never_stale_even_with_an_expired_lease(store, session_id, status):
    requires(store, "list")
    store.commit(session_id, make_record(session_id, 1, status=status, lease_owner="turn-1"), 0)
    other = f"{session_id}-nolease"
    store.commit(other, make_record(other, 1, status=status), 0)
    assert store.stale(LATER) == []


def test_a_turn_that_parks_or_finishes_leaves_the_stale_list(store, session_id):
    requires(store, "list")
    parked, done = f"{session_id}-parked", f"{session_id}-done"
    _running(store, parked)
    _running(store, done)
    assert store.stale(LATER) == sorted([parked, done])

    store.commit(parked, make_record(parked, 2, status=SessionStatus.AWAITING_INPUT, messages=2), 1)
    store.commit(done, make_record(done, 2, status=SessionStatus.COMPLETED, messages=2), 1)
    assert store.stale(LATER) == []


def test_a_takeover_that_renews_the_lease_makes_the_session_live_again(store, session_id):
    requires(store, "list")
    _running(store, session_id)
    renewed = make_record(session_id, 2, lease_owner="turn-2", lease_expires_at="2025-01-01T01:15:00.000Z")
    store.commit(session_id, renewed, 1)
    assert store.stale(LATER) == []
    assert store.stale("2025-01-01T01:15:00.000Z") == [session_id]


def test_stale_ids_are_sorted(store):
    requires(store, "list")
    run = uuid.uuid4().hex[:8]
    ids = [f"{run}-c", f"{run}-a", f"{run}-b"]
    for sid, expires in zip(ids, ["2025-01-01T00:01:00.000Z", EXPIRES, "2025-01-01T00:10:00.000Z"], strict=True):
        _running(store, sid, expires_at=expires)
    assert store.stale(LATER) == sorted(ids)


def test_stale_filters_by_workflow_when_asked(store):
    requires(store, "list")
    run = uuid.uuid4().hex[:8]
    _running(store, f"{run}-bank", workflow="bank-check")
    _running(store, f"{run}-mail", workflow="support-inbox")
    assert store.stale(LATER, workflow="bank-check") == [f"{run}-bank"]
    assert store.stale(LATER) == [f"{run}-bank", f"{run}-mail"]
