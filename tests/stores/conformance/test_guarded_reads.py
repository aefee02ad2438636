"""Conformance, ``Capability.GUARDED_READS``: reads answered from memory, each checked by the caller's write.

Rule source: issue 10 (reads answered from memory), issue 24 (the operation's claim checks the
version read), issue 23 (``guarded_reads``/``prime`` are protocol members). Without the capability
the block serves nothing from memory: every read is real and nothing is noted.
"""

from __future__ import annotations

import pytest

from archmax.errors import CommitConflictError
from archmax.stores.base import Capability

from .conftest import lacks, make_record, requires


def test_a_guarded_read_answers_the_version_this_store_last_saw_and_notes_it(store, session_id):
    requires(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1, messages=1), 0)
    with store.guarded_reads() as reads:
        head = store.head(session_id)
        absent = store.head(f"{session_id}-new")
    assert head.version == 1 and absent is None
    assert reads.versions == {session_id: 1, f"{session_id}-new": 0}


def test_once_serves_only_a_known_session_and_only_its_first_read(store, session_id):
    requires(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1), 0)
    with store.guarded_reads(only=session_id, once=True) as reads:
        store.load(session_id)
        store.load(session_id)  # a second read is real
        store.head(f"{session_id}-other")  # not ``only``: real
    assert reads.versions == {session_id: 1}


def test_prime_feeds_back_what_a_failed_condition_found(store, session_id):
    requires(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1), 0)
    store.prime(session_id, None)  # a failed condition found no item
    with store.guarded_reads(once=True) as reads:
        assert store.head(session_id) is None  # remembered absent: served from memory
    assert reads.versions == {session_id: 0}
    assert store.head(session_id).version == 1  # outside the block: the table


def test_without_the_capability_every_guarded_read_is_real_and_nothing_is_checked(store, session_id):
    lacks(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1), 0)
    with store.guarded_reads() as reads:
        assert store.load(session_id) == store.load(session_id)
        assert store.head(session_id).version == 1
    assert reads.versions == {}
    store.prime(session_id, None)
    assert store.head(session_id).version == 1


def test_the_read_hint_given_to_a_read_serves_it_outside_any_block(store, session_id):
    requires(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1, messages=1), 0)
    with store.guarded_reads(only=session_id) as reads:
        pass  # the block is over: only the explicit hint can serve a read now
    head, record = store.load_if(session_id, lambda h: True, reads=reads)
    assert (head.version, record) == (1, store.load(session_id))
    assert reads.versions == {session_id: 1}
    assert store.head(session_id, reads=reads).version == 1


def test_without_the_capability_a_read_hint_changes_nothing(store, session_id):
    lacks(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1, messages=1), 0)
    with store.guarded_reads() as reads:
        pass
    assert store.load(session_id, reads=reads) == store.load(session_id)
    assert store.head(session_id, reads=reads) == store.head(session_id)
    assert store.load_if(session_id, lambda h: True, reads=reads)[0] == store.head(session_id)
    assert reads.versions == {}


def test_a_commit_inside_the_block_is_noted_and_a_refused_one_is_not(store, session_id):
    requires(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1), 0)
    with store.guarded_reads(only=session_id, once=True) as reads:
        store.load(session_id)  # version 1, from memory
        with pytest.raises(CommitConflictError):
            store.commit(session_id, make_record(session_id, 1), 0)  # refused (it exists): wrote nothing
        assert reads.committed == set()
        store.commit(session_id, make_record(session_id, 2), 1)  # the claim on the version read
    assert reads.versions == {session_id: 1} and reads.committed == {session_id}
    with store.guarded_reads() as after:
        pass
    assert after.committed == set()  # a block notes only its own commits


def test_without_the_capability_nothing_is_noted_as_committed(store, session_id):
    lacks(store, Capability.GUARDED_READS)
    with store.guarded_reads(only=session_id, once=True) as reads:
        store.commit(session_id, make_record(session_id, 1), 0)
    assert reads.versions == {} and reads.committed == set()  # nothing served from memory: nobody asks


def test_a_refused_commit_remembers_the_version_its_condition_found(store, session_id):
    requires(store, Capability.GUARDED_READS)
    store.commit(session_id, make_record(session_id, 1), 0)
    store.prime(session_id, None)  # this instance now believes the session absent
    with pytest.raises(CommitConflictError):
        store.commit(session_id, make_record(session_id, 1), 0)  # a claim on that belief loses
    with store.guarded_reads(only=session_id, once=True) as reads:
        head = store.head(session_id)  # served from memory: what the refused commit found
    assert head.version == 1 and reads.versions == {session_id: 1}
