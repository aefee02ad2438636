"""Conformance: ``delete`` removes checkpoints and files; the id starts over (BEHAVIOUR.md §9.1, §3.10)."""

from __future__ import annotations

from .conftest import make_record, requires


def test_delete_removes_checkpoints_and_files_and_reports_it(store, session_id):
    requires(store, "delete")
    store.commit(session_id, make_record(session_id, 1, messages=2), 0)
    store.commit(session_id, make_record(session_id, 2, messages=3), 1)
    store.seed(session_id, {"scratchpad/a.txt": "x", "artifacts/trail.json": "{}"})
    assert store.delete(session_id) is True
    assert store.load(session_id) is None
    assert store.head(session_id) is None
    assert store.get(session_id, "scratchpad/a.txt") is None
    assert store.list_files(session_id) == []


def test_deleting_a_session_that_never_existed_reports_false(store, session_id):
    requires(store, "delete")
    assert store.delete(session_id) is False


def test_deleting_twice_reports_false_the_second_time(store, session_id):
    requires(store, "delete")
    store.commit(session_id, make_record(session_id, 1), 0)
    assert store.delete(session_id) is True
    assert store.delete(session_id) is False


def test_session_with_only_files_counts_as_existing(store, session_id):
    requires(store, "delete")
    store.seed(session_id, {"root.txt": "x"})
    assert store.delete(session_id) is True
    assert store.get(session_id, "root.txt") is None


def test_deleted_id_starts_over_at_version_one(store, session_id):
    requires(store, "delete")
    store.commit(session_id, make_record(session_id, 1, messages=5), 0)
    store.commit(session_id, make_record(session_id, 2, messages=6), 1)
    store.delete(session_id)
    store.commit(session_id, make_record(session_id, 1, messages=1), 0)
    assert store.load(session_id) == make_record(session_id, 1, messages=1)


def test_delete_leaves_other_sessions_and_specs_alone(store, session_id):
    requires(store, "delete")
    other = session_id + "-other"
    for sid in (session_id, other):
        store.commit(sid, make_record(sid, 1), 0)
        store.seed(sid, {"scratchpad/a.txt": sid})
    store.put_spec("0123456789abcdef0123456789abcdef", {"name": "kept"})
    store.delete(session_id)
    assert store.load(other) == make_record(other, 1)
    assert store.get(other, "scratchpad/a.txt") == other.encode()
    assert store.get_spec("0123456789abcdef0123456789abcdef") == {"name": "kept"}


def test_deleted_session_is_no_longer_listed(store, session_id):
    requires(store, "delete")
    requires(store, "list")
    store.commit(session_id, make_record(session_id, 1), 0)
    store.delete(session_id)
    assert session_id not in store.list()
