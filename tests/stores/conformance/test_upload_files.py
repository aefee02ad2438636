"""Conformance, ``Capability.UPLOAD_FILES``: raw bytes are stored, or refused with a typed error (§9.1, §9.5)."""

from __future__ import annotations

import pytest

from archmax.errors import SessionStoreCapabilityError
from archmax.stores.base import Capability

from .conftest import lacks, requires

RAW = bytes(range(256))


def test_uploaded_bytes_are_kept_exactly_and_listed(store, session_id):
    requires(store, Capability.UPLOAD_FILES)
    store.upload_files(session_id, {"scratchpad/attachments/a.bin": RAW})
    assert store.get(session_id, "scratchpad/attachments/a.bin") == RAW
    assert store.list_files(session_id, "scratchpad") == ["scratchpad/attachments/a.bin"]


def test_without_the_capability_an_upload_is_refused_naming_the_path_and_writes_nothing(store, session_id):
    lacks(store, Capability.UPLOAD_FILES)
    with pytest.raises(SessionStoreCapabilityError) as info:
        store.upload_files(session_id, {"scratchpad/a.bin": RAW})
    assert info.value.capability == "upload_files" and info.value.path == "scratchpad/a.bin"
    assert store.list_files(session_id) == []
