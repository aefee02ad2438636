"""The protocol-only wrapper used across the suites forwards the store protocol and nothing else (issue 23)."""

from __future__ import annotations

import pytest

from archmax.stores.base import Capability, SessionStore
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

from .conformance.conftest import make_record
from .protocol_only import MEMBERS, protocol_only


def test_the_wrapper_has_exactly_the_protocols_public_members(tmp_path):
    wrapped = protocol_only(FilesystemStore(tmp_path / "sessions"))
    public = {name for name in dir(wrapped) if not name.startswith("_")}
    assert public == MEMBERS
    assert {"load", "commit", "capabilities", "location", "guarded_reads", "held_mail_hint"} <= MEMBERS
    assert isinstance(wrapped, SessionStore)


def test_a_member_outside_the_protocol_is_not_reachable_through_the_wrapper(tmp_path):
    store = FilesystemStore(tmp_path / "sessions")
    wrapped = protocol_only(store)
    with pytest.raises(AttributeError):
        wrapped.root  # noqa: B018 - the reach itself is the test
    assert wrapped.location.root == store.root  # the protocol's way to the same place


def test_the_wrapper_forwards_values_calls_and_keywords_to_the_store():
    store = MemoryStore()
    wrapped = protocol_only(store)
    wrapped.commit("s-1", make_record("s-1", 1, lease_owner="me"), 0, lease_owner=None)
    assert store.head("s-1").version == 1 and wrapped.load("s-1") == store.load("s-1")
    assert wrapped.capabilities is store.capabilities and Capability.APPEND_TEXT in wrapped.capabilities
