"""Conformance: spec snapshots, create-only (BEHAVIOUR.md §9.1, §9.4)."""

from __future__ import annotations

import pytest

from archmax.errors import InvalidFilePathError

HASH = "0123456789abcdef0123456789abcdef"
SPEC = {"name": "support-inbox", "states": {"clarify": {"instructions": "Ask — once.", "transitions": []}}}


def test_unknown_spec_reads_as_none(store):
    assert store.get_spec(HASH) is None


def test_snapshot_reads_back_equal(store):
    assert store.put_spec(HASH, SPEC) is True
    assert store.get_spec(HASH) == SPEC


def test_second_snapshot_under_the_same_hash_keeps_the_first(store):
    store.put_spec(HASH, SPEC)
    assert store.put_spec(HASH, {"name": "other"}) is False
    assert store.get_spec(HASH) == SPEC


@pytest.mark.parametrize("bad_hash", ["", "../x", "a/b", "a.json", "x" * 200, "\x00"])
def test_hash_that_is_not_a_safe_name_is_refused(store, bad_hash):
    with pytest.raises(InvalidFilePathError):
        store.put_spec(bad_hash, SPEC)
    with pytest.raises(InvalidFilePathError):
        store.get_spec(bad_hash)
