"""Conformance: ``list()`` returns the ids stored in checkpoints (BEHAVIOUR.md §9.1, §9.2, §3.10)."""

from __future__ import annotations

import uuid

from .conftest import make_record, requires


def test_empty_store_lists_nothing(store):
    requires(store, "list")
    assert store.list() == []


def test_list_returns_every_committed_session_sorted(store):
    requires(store, "list")
    run = uuid.uuid4().hex[:8]
    ids = [f"{run}-b", f"{run}-a", f"{run}-c"]
    for sid in ids:
        store.commit(sid, make_record(sid, 1), 0)
    assert store.list() == sorted(ids)


def test_list_returns_raw_ids_that_needed_escaping_or_hashing(store):
    requires(store, "list")
    run = uuid.uuid4().hex[:8]
    ids = [f"mail/{run}\\x", f".{run}", f"{run}%2F", f"{run}-" + "ü" * 150]
    for sid in ids:
        store.commit(sid, make_record(sid, 1), 0)
    assert store.list() == sorted(ids)


def test_session_with_files_but_no_checkpoint_is_not_listed(store, session_id):
    requires(store, "list")
    store.seed(session_id, {"scratchpad/a.txt": "x"})
    assert store.list() == []


def test_session_listed_once_however_many_versions(store, session_id):
    requires(store, "list")
    for version in range(1, 4):
        store.commit(session_id, make_record(session_id, version), version - 1)
    assert store.list() == [session_id]
