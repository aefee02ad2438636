"""Conformance: ``oldest_park(workflow)`` names the workflow's park made longest ago (``list`` capability).

Rule source: BEHAVIOUR.md §5.11 ("Hosts report the oldest park's age per workflow as a metric") and
issue 21 item 7: the sweep asks this at every run, so a store answers it without reading every
session (the AWS store queries its sparse ``open-parks`` index; its Query-only cost is pinned in
``tests/stores/aws/test_aws_oldest_park.py``). An input park ages from its ``parked_at``, a decision
park from its ``created_at``; running and finished sessions, and other workflows, never count.
"""

from __future__ import annotations

from archmax.session.records import SessionStatus

from .conftest import make_record, requires


def _park(store, sid, at, *, status=SessionStatus.AWAITING_INPUT, workflow="support-inbox", version=1):
    rec = make_record(sid, version, status=status, workflow=workflow, messages=version)
    if rec.pending_input is not None:
        rec.pending_input = rec.pending_input.model_copy(update={"parked_at": at})
    else:
        rec.pending_decision = rec.pending_decision.model_copy(update={"created_at": at})
    store.commit(sid, rec, version - 1)


def test_no_parked_session_has_no_oldest_park(store, session_id):
    requires(store, "list")
    assert store.oldest_park("support-inbox") is None
    store.commit(session_id, make_record(session_id, 1), 0)  # running
    assert store.oldest_park("support-inbox") is None


def test_the_park_made_longest_ago_is_named_input_and_decision_parks_alike(store, session_id):
    requires(store, "list")
    _park(store, f"{session_id}-a", "2025-01-01T03:00:00.000Z")
    _park(store, f"{session_id}-b", "2025-01-01T01:00:00.000Z", status=SessionStatus.AWAITING_DECISION)
    _park(store, f"{session_id}-c", "2025-01-01T02:00:00.000Z")
    found = store.oldest_park("support-inbox")
    assert found == (f"{session_id}-b", "2025-01-01T01:00:00.000Z")
    assert found.session_id == f"{session_id}-b" and found.parked_at == "2025-01-01T01:00:00.000Z"


def test_other_workflows_running_and_finished_sessions_never_count(store, session_id):
    requires(store, "list")
    _park(store, f"{session_id}-other", "2025-01-01T00:00:00.000Z", workflow="billing")
    _park(store, f"{session_id}-mine", "2025-01-01T05:00:00.000Z")
    for i, status in enumerate((SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.RUNNING)):
        sid = f"{session_id}-{i}"
        store.commit(sid, make_record(sid, 1, status=status), 0)
    assert store.oldest_park("support-inbox") == (f"{session_id}-mine", "2025-01-01T05:00:00.000Z")
    assert store.oldest_park("billing") == (f"{session_id}-other", "2025-01-01T00:00:00.000Z")
    assert store.oldest_park("nobody") is None


def test_a_park_answered_or_made_again_moves_the_answer(store, session_id):
    requires(store, "list")
    old, new = f"{session_id}-old", f"{session_id}-new"
    _park(store, old, "2025-01-01T01:00:00.000Z")
    _park(store, new, "2025-01-01T02:00:00.000Z")
    assert store.oldest_park("support-inbox") == (old, "2025-01-01T01:00:00.000Z")

    store.commit(old, make_record(old, 2, messages=2), 1)  # answered: running again
    assert store.oldest_park("support-inbox") == (new, "2025-01-01T02:00:00.000Z")

    _park(store, old, "2025-01-01T04:00:00.000Z", version=3)  # parked again, later
    assert store.oldest_park("support-inbox") == (new, "2025-01-01T02:00:00.000Z")

    store.commit(new, make_record(new, 2, messages=2, status=SessionStatus.COMPLETED), 1)
    store.commit(old, make_record(old, 4, messages=4, status=SessionStatus.COMPLETED), 3)
    assert store.oldest_park("support-inbox") is None


def test_the_head_of_a_parked_session_carries_when_it_parked(store, session_id):
    requires(store, "list")
    _park(store, session_id, "2025-01-01T01:00:00.000Z", status=SessionStatus.AWAITING_DECISION)
    assert store.head(session_id).parked_at == "2025-01-01T01:00:00.000Z"
    store.commit(session_id, make_record(session_id, 2, messages=2), 1)
    assert store.head(session_id).parked_at is None
