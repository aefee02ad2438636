"""Conformance: what every store declares, and that the protocol is all a caller needs (issue 23 "The port").

Rule source: BEHAVIOUR.md §9.1 (protocol and capabilities); issue 23 (capabilities are a declared
enum, never sniffed; a wrapper with exactly the protocol's members takes the same paths).
"""

from __future__ import annotations

from archmax.stores.base import Capabilities, Capability, SessionStore, StoreLocation

from ..protocol_only import MEMBERS


def test_every_store_satisfies_the_protocol_and_declares_a_set_of_capabilities(store):
    assert isinstance(store, SessionStore)
    assert isinstance(store.capabilities, Capabilities)
    assert all(isinstance(c, Capability) for c in store.capabilities)


def test_every_capability_a_store_lacks_comes_with_a_reason(store):
    for capability in set(Capability) - set(store.capabilities):
        assert store.capabilities.reason(capability).strip()


def test_every_protocol_member_is_there_on_every_store(store):
    missing = [name for name in sorted(MEMBERS) if not hasattr(store, name)]
    assert missing == []


def test_the_location_is_a_folder_a_bucket_or_neither(store):
    location = store.location
    assert isinstance(location, StoreLocation)
    assert location.root is None or location.bucket is None
    if location.bucket is None:
        assert location.key_root == ""


def test_load_if_answers_the_head_and_the_record_only_when_wanted(store, session_id):
    from .conftest import make_record

    assert store.load_if(session_id, lambda head: True) == (None, None)
    store.commit(session_id, make_record(session_id, 1, messages=2), 0)
    head, record = store.load_if(session_id, lambda head: head.version == 2)
    assert (head.version, record) == (1, None)
    head, record = store.load_if(session_id, lambda head: head.version == 1)
    assert head == store.head(session_id) and record == store.load(session_id)
