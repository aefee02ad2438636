"""Message-ID normalisation and the thread-root rule (archmax.inbound.email_ids)."""

from __future__ import annotations

from archmax.inbound.email_ids import message_ids_in, normalise_message_id, thread_root


def test_normalising_strips_brackets_and_folding_and_lowercases_only_the_domain():
    assert normalise_message_id("<AbC.123@Mail.Example.ORG>") == "AbC.123@mail.example.org"
    assert normalise_message_id(" <AbC.\r\n 123@Example.org> ") == "AbC.123@example.org"


def test_domain_is_what_follows_the_last_at_sign():
    assert normalise_message_id("<a@B@C.Example>") == "a@B@c.example"


def test_empty_and_broken_tokens_are_not_ids():
    assert normalise_message_id("<>") is None
    assert normalise_message_id("   ") is None
    assert normalise_message_id("<@example.org>") is None
    assert normalise_message_id("<local@>") is None
    assert normalise_message_id('<"quoted"@example.org>') is None
    assert normalise_message_id("<a\x00b@example.org>") is None


def test_an_id_that_would_be_an_unsafe_session_id_is_refused():
    assert normalise_message_id("<x/../y@example.org>") is None
    assert normalise_message_id("<_specs/evil@example.org>") is None


def test_an_id_without_at_sign_is_kept_verbatim_so_replies_still_thread():
    assert normalise_message_id("<0123456789example.com>") == "0123456789example.com"


def test_ids_are_read_from_brackets_in_order_without_duplicates_and_unclosed_ones_are_reported():
    skipped: list[str] = []
    value = "<a@x.org> (comment) <b@X.org>,\r\n <a@x.org> <broken"
    assert message_ids_in(value, skipped) == ["a@x.org", "b@x.org"]
    assert skipped == ["<broken"]


def test_a_header_with_no_brackets_falls_back_to_words_with_an_at_sign():
    assert message_ids_in("foo@Bar.net, Your message of today") == ["foo@bar.net"]
    assert message_ids_in("") == [] and message_ids_in(None) == []


def test_root_is_the_first_reference_then_in_reply_to_then_the_own_id():
    assert thread_root("m@x", ["p@x"], ["r@x", "p@x"]).conversation_id == "r@x"
    assert thread_root("m@x", ["p@x"], []).conversation_id == "p@x"
    assert thread_root("m@x", [], []).conversation_id == "m@x"
    nothing = thread_root(None, [], [])
    assert nothing.conversation_id is None and nothing.source == "none"


def test_a_message_never_threads_onto_itself():
    root = thread_root("m@x", ["m@x"], ["m@x"])
    assert root.conversation_id == "m@x" and root.source == "message_id"
    assert any("its own Message-ID" in w for w in root.warnings)


def test_known_ids_win_root_first_and_a_mapping_gives_the_filed_conversation():
    known = {"p@x": "conv-1", "r@x": "conv-0"}
    assert thread_root("m@x", ["p@x"], ["r@x", "p@x"], known).conversation_id == "conv-0"
    assert thread_root("m@x", ["p@x"], ["typo@x"], known).conversation_id == "conv-1"
    # A redelivered message the host already filed lands where it was filed.
    assert thread_root("m@x", [], [], {"m@x": "conv-9"}).conversation_id == "conv-9"


def test_a_known_conversation_that_is_not_a_valid_session_id_is_ignored():
    root = thread_root("m@x", ["p@x"], [], {"p@x": "../escape"})
    assert root.conversation_id == "p@x" and root.source == "in_reply_to"
