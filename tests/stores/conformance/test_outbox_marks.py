"""Conformance: a commit that records outbox entries marks its session until they are all sent (issue 20 item 2).

``outbox_pending()`` lists the marked sessions (what the sweep sends from, without reading any other
session; the AWS store answers from its sparse ``outbox-pending`` index); ``outbox_settled(id, v)``
clears the marks of version ``v`` and before, and never a mark a later commit made.
"""

from __future__ import annotations

import uuid

from archmax.session.records import OutboxEntry, SessionStatus

from .conftest import make_record, requires


def _with_entries(record, *versions: int):
    record.outbox = [OutboxEntry(version=v, index=0, kind="event", detail_type="Session Parked") for v in versions]
    return record


def test_a_commit_that_records_outbox_entries_lists_its_session_until_they_are_settled(store, session_id):
    requires(store, "list")
    store.commit(session_id, make_record(session_id, 1), 0)
    assert store.outbox_pending() == []  # a claim records nothing
    parked = _with_entries(make_record(session_id, 2, status=SessionStatus.AWAITING_INPUT), 2)
    store.commit(session_id, parked, 1)
    assert store.outbox_pending() == [session_id]
    store.commit(session_id, _with_entries(make_record(session_id, 3), 2), 2)  # the next claim carries them
    assert store.outbox_pending() == [session_id]
    store.outbox_settled(session_id, 3)
    assert store.outbox_pending() == []


def test_settling_an_older_version_keeps_the_mark_a_later_commit_made(store, session_id):
    requires(store, "list")
    store.commit(session_id, _with_entries(make_record(session_id, 1, status=SessionStatus.COMPLETED), 1), 0)
    store.commit(session_id, _with_entries(make_record(session_id, 2, status=SessionStatus.COMPLETED), 1, 2), 1)
    store.outbox_settled(session_id, 1)  # a sender that loaded version 1
    assert store.outbox_pending() == [session_id]
    store.outbox_settled(session_id, 2)
    assert store.outbox_pending() == []
    store.outbox_settled(session_id, 2)  # settling twice is harmless
    assert store.outbox_pending() == []


def test_outbox_pending_filters_by_workflow(store, session_id):
    requires(store, "list")
    other = f"other-{uuid.uuid4().hex[:8]}"
    store.commit(session_id, _with_entries(make_record(session_id, 1, status=SessionStatus.COMPLETED), 1), 0)
    record = _with_entries(make_record(other, 1, status=SessionStatus.COMPLETED, workflow="refund-desk"), 1)
    store.commit(other, record, 0)
    assert store.outbox_pending() == sorted([session_id, other])
    assert store.outbox_pending(workflow="refund-desk") == [other]
    assert store.outbox_pending(workflow="support-inbox") == [session_id]
