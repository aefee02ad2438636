"""Conformance: cheap heads and due input parks.

Rule source: BEHAVIOUR.md §9.1, §11 ``sweep``; seed "Waiting for a time, not a reply".
"""

from __future__ import annotations

import uuid

from archmax.session.records import SessionStatus

from .conftest import make_record, requires


def test_session_with_no_checkpoint_has_no_head(store, session_id):
    assert store.head(session_id) is None


def test_head_reflects_the_latest_version(store, session_id):
    store.commit(session_id, make_record(session_id, 1, lease_owner="w1"), 0)
    store.commit(
        session_id,
        make_record(
            session_id,
            2,
            status=SessionStatus.AWAITING_INPUT,
            resume_at="2025-01-02T00:00:00.000Z",
            updated_at="2025-01-01T00:05:00.000Z",
        ),
        1,
    )
    head = store.head(session_id)
    assert (head.session_id, head.version, head.workflow, head.status) == (
        session_id,
        2,
        "support-inbox",
        SessionStatus.AWAITING_INPUT,
    )
    assert head.resume_at == "2025-01-02T00:00:00.000Z"
    assert head.lease is None
    assert head.updated_at == "2025-01-01T00:05:00.000Z"


def test_head_carries_the_lease_of_a_running_session(store, session_id):
    store.commit(
        session_id,
        make_record(session_id, 1, lease_owner="w1", lease_expires_at="2025-01-01T00:15:00.000Z"),
        0,
    )
    lease = store.head(session_id).lease
    assert (lease.owner, lease.expires_at) == ("w1", "2025-01-01T00:15:00.000Z")


def test_head_of_a_decision_park_has_no_resume_at(store, session_id):
    store.commit(session_id, make_record(session_id, 1, status=SessionStatus.AWAITING_DECISION), 0)
    assert store.head(session_id).resume_at is None


def _park(store, sid, resume_at, *, workflow="support-inbox", status=SessionStatus.AWAITING_INPUT):
    store.commit(sid, make_record(sid, 1, status=status, resume_at=resume_at, workflow=workflow), 0)


def test_due_lists_input_parks_whose_time_has_come_by_resume_at_then_id(store):
    requires(store, "list")
    run = uuid.uuid4().hex[:8]
    b, a, c = f"{run}-b", f"{run}-a", f"{run}-c"
    _park(store, b, "2025-01-01T10:00:00.000Z")
    _park(store, a, "2025-01-01T10:00:00.000Z")
    _park(store, c, "2025-01-01T09:00:00.000Z")
    assert store.due("2025-01-01T10:00:00.000Z") == [
        (c, "2025-01-01T09:00:00.000Z"),
        (a, "2025-01-01T10:00:00.000Z"),
        (b, "2025-01-01T10:00:00.000Z"),
    ]


def test_due_leaves_out_future_parks_untimed_parks_and_sessions_not_awaiting_input(store):
    requires(store, "list")
    run = uuid.uuid4().hex[:8]
    _park(store, f"{run}-future", "2025-01-01T10:00:00.001Z")
    _park(store, f"{run}-untimed", None)
    _park(store, f"{run}-decision", None, status=SessionStatus.AWAITING_DECISION)
    _park(store, f"{run}-done", None, status=SessionStatus.COMPLETED)
    assert store.due("2025-01-01T10:00:00.000Z") == []


def test_due_filters_by_workflow_when_asked(store):
    requires(store, "list")
    run = uuid.uuid4().hex[:8]
    _park(store, f"{run}-bank", "2025-01-01T08:00:00.000Z", workflow="bank-check")
    _park(store, f"{run}-mail", "2025-01-01T08:00:00.000Z", workflow="support-inbox")
    assert store.due("2025-01-01T09:00:00.000Z", workflow="bank-check") == [(f"{run}-bank", "2025-01-01T08:00:00.000Z")]


def test_resumed_session_is_no_longer_due(store, session_id):
    requires(store, "list")
    _park(store, session_id, "2025-01-01T08:00:00.000Z")
    store.commit(session_id, make_record(session_id, 2, lease_owner="timer"), 1)
    assert store.due("2025-01-02T00:00:00.000Z") == []
