"""Conformance, ``Capability.HELD_MAIL_HINT``: a per-session hint of possibly-held mail, read with the item.

Rule source: issue 10 ("summary: 1 call"), issue 13 item 1 (quarantine); inbound/quarantine.py
notes an id before it holds a mail and takes it out after the release. Without the capability
the note does nothing and the hint is unknown (``None``): the caller lists the folder.
"""

from __future__ import annotations

from archmax.stores.base import Capability

from .conftest import lacks, make_record, requires


def test_the_hint_read_with_the_item_holds_the_noted_ids(store, session_id):
    requires(store, Capability.HELD_MAIL_HINT)
    store.commit(session_id, make_record(session_id, 1), 0)
    store.load(session_id)
    assert store.held_mail_hint(session_id, 1) == frozenset()  # nothing held: no listing needed
    store.note_held_mail(session_id, "m-1", held=True)
    store.load(session_id)
    assert store.held_mail_hint(session_id, 1) == {"m-1"}
    store.commit(session_id, make_record(session_id, 2), 1)  # commits keep the hint
    store.load(session_id)
    assert store.held_mail_hint(session_id, 2) == {"m-1"}
    store.note_held_mail(session_id, "m-1", held=False)
    store.head(session_id)
    assert store.held_mail_hint(session_id, 2) == frozenset()


def test_the_hint_is_unknown_for_a_version_or_session_not_just_read(store, session_id):
    requires(store, Capability.HELD_MAIL_HINT)
    store.commit(session_id, make_record(session_id, 1), 0)
    store.load(session_id)
    assert store.held_mail_hint(session_id, 2) is None
    assert store.held_mail_hint(f"{session_id}-other", 1) is None


def test_a_note_for_a_session_with_no_checkpoint_is_left_alone(store, session_id):
    requires(store, Capability.HELD_MAIL_HINT)
    store.note_held_mail(session_id, "m-1", held=True)
    assert store.head(session_id) is None


def test_without_the_capability_the_note_does_nothing_and_the_hint_is_unknown(store, session_id):
    lacks(store, Capability.HELD_MAIL_HINT)
    store.commit(session_id, make_record(session_id, 1), 0)
    store.note_held_mail(session_id, "m-1", held=True)
    store.load(session_id)
    assert store.held_mail_hint(session_id, 1) is None
    assert store.list_files(session_id) == []
