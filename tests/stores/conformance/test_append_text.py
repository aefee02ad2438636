"""Conformance, ``Capability.APPEND_TEXT``: ``append_text`` grows a file, in place or by a rewrite (§9.5).

The artifacts writer appends trajectory lines only on a store that declares it; every store's
``append_text`` must still give the same bytes (the default reads the file and writes it back).
"""

from __future__ import annotations

from archmax.stores.base import Capability

from .conftest import lacks, requires


def _append_twice(store, session_id):
    store.append_text(session_id, "artifacts/trajectory.jsonl", '{"n": 1}\n')
    store.append_text(session_id, "artifacts/trajectory.jsonl", '{"n": "ü"}\n')
    return store.get(session_id, "artifacts/trajectory.jsonl")


def test_appending_in_place_creates_the_file_then_grows_it(store, session_id):
    requires(store, Capability.APPEND_TEXT)
    assert _append_twice(store, session_id) == '{"n": 1}\n{"n": "ü"}\n'.encode()


def test_without_the_capability_appending_gives_the_same_bytes_by_a_rewrite(store, session_id):
    lacks(store, Capability.APPEND_TEXT)
    assert _append_twice(store, session_id) == '{"n": 1}\n{"n": "ü"}\n'.encode()
