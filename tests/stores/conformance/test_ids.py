"""Conformance: every store method validates the session id before touching anything.

Rule source: BEHAVIOUR.md §4.1, §9.1.
"""

from __future__ import annotations

import pytest

from archmax.errors import InvalidSessionIdError

from .conftest import make_record

BAD_IDS = [
    "",
    "   ",
    "a\x00b",
    "line\nbreak",
    "..",
    "a/../b",
    "a\\..\\b",
    "_specs",
    "checkpoints/x",
    "scratchpad",
    "x" * 513,
    42,
    None,
]

CALLS = {
    "load": lambda store, sid: store.load(sid),
    "head": lambda store, sid: store.head(sid),
    "commit": lambda store, sid: store.commit(sid, make_record("placeholder", 1), 0),
    "get": lambda store, sid: store.get(sid, "scratchpad/a.txt"),
    "seed": lambda store, sid: store.seed(sid, {"scratchpad/a.txt": "x"}),
    "upload_files": lambda store, sid: store.upload_files(sid, {"scratchpad/a.bin": b"\x00"}),
    "list_files": lambda store, sid: store.list_files(sid),
    "delete": lambda store, sid: store.delete(sid),
}


@pytest.mark.parametrize("method", list(CALLS))
@pytest.mark.parametrize("bad_id", BAD_IDS, ids=repr)
def test_every_method_refuses_an_invalid_id_and_writes_nothing(store, method, bad_id):
    if method in ("upload_files", "delete") and not getattr(store.capabilities, method):
        pytest.skip(f"{type(store).__name__} lacks the '{method}' capability")
    with pytest.raises(InvalidSessionIdError) as info:
        CALLS[method](store, bad_id)
    assert info.value.bad_id == bad_id
    if store.capabilities.list:
        assert store.list() == []


def test_id_of_exactly_512_utf8_bytes_is_accepted(store):
    sid = "é" * 256  # 512 bytes
    store.commit(sid, make_record(sid, 1), 0)
    assert store.load(sid).session_id == sid
