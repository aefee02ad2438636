"""MemoryStore specifics: reduced capabilities and chunk-backed storage (BEHAVIOUR.md §9.1)."""

from __future__ import annotations

import pytest

from archmax.errors import SessionStoreCapabilityError
from archmax.stores.base import Capability, SessionStore, StoreCapabilities
from archmax.stores.memory import MemoryStore

from .conformance.conftest import make_record


def test_memory_store_satisfies_the_protocol_with_every_local_capability():
    store = MemoryStore()
    assert isinstance(store, SessionStore)
    assert store.capabilities == {Capability.LIST, Capability.DELETE, Capability.UPLOAD_FILES, Capability.APPEND_TEXT}
    assert "every read is real" in store.capabilities.reason(Capability.GUARDED_READS)


def test_a_reduced_memory_store_declares_what_it_lacks_and_why():
    store = MemoryStore(capabilities=StoreCapabilities(list=False))
    assert Capability.LIST not in store.capabilities and not store.capabilities.list
    assert Capability.DELETE in store.capabilities and Capability.APPEND_TEXT in store.capabilities
    assert store.capabilities.reason(Capability.LIST) == "switched off when this store was built"


def test_store_without_list_refuses_list_and_due():
    store = MemoryStore(capabilities=StoreCapabilities(list=False))
    store.commit("s1", make_record("s1", 1), 0)
    with pytest.raises(SessionStoreCapabilityError) as info:
        store.list()
    assert info.value.capability == "list"
    with pytest.raises(SessionStoreCapabilityError):
        store.due("2030-01-01T00:00:00.000Z")


def test_store_without_delete_refuses_delete_and_keeps_the_session():
    store = MemoryStore(capabilities=StoreCapabilities(delete=False))
    store.commit("s1", make_record("s1", 1), 0)
    with pytest.raises(SessionStoreCapabilityError) as info:
        store.delete("s1")
    assert (info.value.capability, info.value.session_id) == ("delete", "s1")
    assert store.load("s1") == make_record("s1", 1)


def test_store_without_upload_files_refuses_bytes_naming_the_path_and_stores_none():
    store = MemoryStore(capabilities=StoreCapabilities(upload_files=False))
    with pytest.raises(SessionStoreCapabilityError) as info:
        store.upload_files("s1", {"scratchpad/attachments/a.pdf": b"%PDF\x00"})
    assert (info.value.capability, info.value.path) == ("upload_files", "scratchpad/attachments/a.pdf")
    assert "scratchpad/attachments/a.pdf" in str(info.value)
    assert store.list_files("s1") == []


def test_store_without_upload_files_still_takes_text():
    store = MemoryStore(capabilities=StoreCapabilities(upload_files=False))
    store.seed("s1", {"scratchpad/a.txt": "text works everywhere"})
    assert store.get("s1", "scratchpad/a.txt") == b"text works everywhere"


def test_checkpoints_are_kept_as_delta_chunks():
    store = MemoryStore()
    for v in range(1, 4):
        store.commit("s1", make_record("s1", v, messages=v * 10), v - 1)
    stored = store._sessions["s1"].chunks  # the stored form is what this test is about
    assert len(stored) == 3
    assert b'"full":true' in stored[0] and b'"full":false' in stored[2]
    assert b'"messages_from":20' in stored[2]
