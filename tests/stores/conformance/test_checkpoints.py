"""Conformance: load and commit, version conflicts, lease owners, whole records back.

Rule source: BEHAVIOUR.md §9.1, §9.3, §3.12.
"""

from __future__ import annotations

import pytest

from archmax.errors import CommitConflictError, StoreError
from archmax.session.records import Message, SessionStatus

from .conftest import make_record


def test_session_with_no_checkpoint_loads_as_none(store, session_id):
    assert store.load(session_id) is None


def test_first_commit_creates_version_one_and_load_returns_the_whole_record(store, session_id):
    record = make_record(session_id, 1, messages=4, trail=2)
    store.commit(session_id, record, 0)
    assert store.load(session_id) == record


def test_load_returns_the_latest_of_several_versions(store, session_id):
    for version in range(1, 6):
        store.commit(session_id, make_record(session_id, version, messages=version * 2, trail=version), version - 1)
    assert store.load(session_id) == make_record(session_id, 5, messages=10, trail=5)


def test_commit_against_a_stale_version_is_refused_and_changes_nothing(store, session_id):
    store.commit(session_id, make_record(session_id, 1, messages=1), 0)
    store.commit(session_id, make_record(session_id, 2, messages=2), 1)
    with pytest.raises(CommitConflictError) as info:
        store.commit(session_id, make_record(session_id, 2, messages=5), 1)
    assert info.value.session_id == session_id
    assert info.value.expected_version == 1
    assert store.load(session_id) == make_record(session_id, 2, messages=2)


def test_commit_of_a_new_session_over_an_existing_one_is_refused(store, session_id):
    store.commit(session_id, make_record(session_id, 1, messages=1), 0)
    with pytest.raises(CommitConflictError):
        store.commit(session_id, make_record(session_id, 1, messages=3), 0)
    assert store.load(session_id) == make_record(session_id, 1, messages=1)


def test_commit_expecting_a_version_that_was_never_written_is_refused(store, session_id):
    with pytest.raises(CommitConflictError):
        store.commit(session_id, make_record(session_id, 4), 3)
    assert store.load(session_id) is None


def test_commit_by_the_lease_holder_succeeds(store, session_id):
    store.commit(session_id, make_record(session_id, 1, lease_owner="worker-a"), 0)
    store.commit(session_id, make_record(session_id, 2, lease_owner="worker-a"), 1, lease_owner="worker-a")
    assert store.load(session_id).version == 2


def test_commit_after_the_lease_was_taken_over_is_refused(store, session_id):
    store.commit(session_id, make_record(session_id, 1, lease_owner="worker-a"), 0)
    store.commit(session_id, make_record(session_id, 2, lease_owner="worker-b"), 1)  # takeover
    with pytest.raises(CommitConflictError):
        store.commit(session_id, make_record(session_id, 3, lease_owner="worker-a"), 2, lease_owner="worker-a")
    assert store.load(session_id).lease.owner == "worker-b"


def test_commit_claiming_a_lease_on_a_session_holding_none_is_refused(store, session_id):
    store.commit(session_id, make_record(session_id, 1, status=SessionStatus.AWAITING_INPUT), 0)
    with pytest.raises(CommitConflictError):
        store.commit(session_id, make_record(session_id, 2, lease_owner="worker-a"), 1, lease_owner="worker-a")
    assert store.load(session_id).version == 1


def test_commit_claiming_a_lease_on_a_new_session_is_refused(store, session_id):
    with pytest.raises(CommitConflictError):
        store.commit(session_id, make_record(session_id, 1, lease_owner="worker-a"), 0, lease_owner="worker-a")
    assert store.load(session_id) is None


def test_record_whose_version_does_not_follow_the_expected_one_is_a_store_error(store, session_id):
    with pytest.raises(StoreError) as info:
        store.commit(session_id, make_record(session_id, 3), 0)
    assert not isinstance(info.value, CommitConflictError)
    assert store.load(session_id) is None


def test_record_of_another_session_is_a_store_error(store, session_id):
    with pytest.raises(StoreError):
        store.commit(session_id, make_record(session_id + "-other", 1), 0)
    assert store.load(session_id) is None


def test_long_session_across_full_chunk_boundaries_loads_exactly(store, session_id):
    for version in range(1, 121):
        store.commit(session_id, make_record(session_id, version, messages=version, trail=version // 3), version - 1)
        if version in (1, 49, 50, 51, 52, 100, 101, 120):
            assert store.load(session_id) == make_record(session_id, version, messages=version, trail=version // 3)


def test_transcript_that_shrank_still_loads_exactly(store, session_id):
    store.commit(session_id, make_record(session_id, 1, messages=6, trail=3), 0)
    store.commit(session_id, make_record(session_id, 2, messages=2, trail=1), 1)
    store.commit(session_id, make_record(session_id, 3, messages=3, trail=1), 2)
    assert store.load(session_id) == make_record(session_id, 3, messages=3, trail=1)


def test_transcript_rewritten_in_place_is_reloaded_as_committed_when_it_shrank(store, session_id):
    first = make_record(session_id, 1, messages=3)
    store.commit(session_id, first, 0)
    rewritten = make_record(session_id, 2).model_copy(update={"messages": [Message(role="user", content="compacted")]})
    store.commit(session_id, rewritten, 1)
    assert store.load(session_id).messages == [Message(role="user", content="compacted")]


def test_loaded_record_is_a_copy_that_cannot_change_the_store(store, session_id):
    store.commit(session_id, make_record(session_id, 1, messages=2), 0)
    loaded = store.load(session_id)
    loaded.messages.append(Message(role="user", content="not committed"))
    loaded.variables["reply_body"].value = "tampered"
    assert store.load(session_id) == make_record(session_id, 1, messages=2)


@pytest.mark.parametrize("odd_id", ["mail/thread\\42", "%2F-looks-escaped", ".hidden", "ü" * 150, "x" * 300])
def test_checkpoint_stores_the_raw_id_for_ids_that_need_escaping(store, odd_id):
    record = make_record(odd_id, 1, messages=1)
    store.commit(odd_id, record, 0)
    assert store.load(odd_id).session_id == odd_id
    assert store.head(odd_id).session_id == odd_id


def test_each_load_is_the_caller_s_own_object_and_commit_keeps_no_reference(store, session_id):
    # The engine builds the next version on the loaded object itself, so neither may be shared.
    record = make_record(session_id, 1, messages=2)
    store.commit(session_id, record, 0)
    record.messages.append(Message(role="user", content="changed after the commit"))
    first = store.load(session_id)
    first.messages.append(Message(role="user", content="changed by a reader"))
    first.status = SessionStatus.FAILED
    again = store.load(session_id)
    assert again is not first
    assert len(again.messages) == 2 and again.status == make_record(session_id, 1).status
