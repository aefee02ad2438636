"""archmax.inbound.email.parse_email against the public sample emails and the demo's own emails.

Every expectation below was worked out by reading the sample file (see ../shared/samples/SOURCES.md).
"""

from __future__ import annotations

import hashlib
from email.message import EmailMessage
from pathlib import Path

import pytest

from archmax.inbound.email import parse_email
from archmax.session.firing import FileIn, Firing
from archmax.stores.base import check_relative_path

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "examples" / "workflows" / "support-inbox" / "emails"


@pytest.fixture
def sample(shared_samples: Path):
    """Parse one file of ../shared/samples/emails by name."""

    def parse(name: str, **kwargs) -> Firing:
        return parse_email((shared_samples / "emails" / name).read_bytes(), **kwargs)

    return parse


# --- one test per sample ------------------------------------------------------------------------


def test_two_message_id_headers_use_the_senders_one_nearest_the_body_and_say_so(sample):
    firing = sample("aws-lambda-ses-forwarder__message.txt")
    assert firing.variables["conversation_id"] == "B9ebWRD-000123-3K@example.com"
    assert firing.variables["message_id"] == "B9ebWRD-000123-3K@example.com"
    assert firing.delivery_id == "B9ebWRD-000123-3K@example.com"
    assert any("2 Message-ID values" in w for w in firing.warnings)
    assert firing.variables["subject"] == "Test message from Betsy"
    # The lowercase "from:" header is still the sender.
    assert firing.variables["from"] == "betsy@example.com"
    assert firing.variables["to"] == ["info@example.com"]
    # Header-like lines in the body are body text, not headers and not an Outlook quote block.
    assert "These lines should not be affected:\nFrom: test@example.com" in firing.variables["reply_body"]
    assert firing.trigger == "email_received"


def test_folded_from_with_encoded_word_in_quotes_still_yields_the_address(sample):
    firing = sample("aws-lambda-ses-forwarder__message.from_multiline.source.txt")
    assert firing.variables["from"] == "betsy@example.com"
    assert firing.variables["conversation_id"] == "B9ebWRD-000123-3K@example.com"
    assert firing.variables["subject"] == "Test message from Betsy"
    assert firing.variables["body"].startswith("This is a test message to info@example.com.")


def test_gtube_spam_sample_parses_as_a_plain_new_conversation(sample):
    firing = sample("mail-parser__mail_test_16")
    assert firing.variables["conversation_id"] == "GTUBE1.1010101@example.net"
    assert firing.variables["subject"] == "Test spam mail (GTUBE)"
    assert "GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL" in firing.variables["body"]
    assert firing.variables["from"] == "sender@example.net"


def test_display_name_that_is_an_address_does_not_replace_the_real_address(sample):
    firing = sample("mail-parser__mail_test_19")
    # "From: alice@example.com <bob@example.com>": a client shows and answers bob.
    assert firing.variables["from"] == "bob@example.com"
    assert firing.variables["to"] == ["charlie@example.com", "dave@example.com"]
    assert firing.variables["conversation_id"] == "test-email-as-name@example.com"
    assert firing.variables["subject"] == "Test email with email address as display name"
    assert "display name is itself\nan email address" in firing.variables["body"]


def test_unknown_charset_subject_with_bad_padding_and_no_message_id_gets_a_fresh_conversation(shared_samples):
    raw = (shared_samples / "emails" / "mail__bad_encoded_subject.eml").read_bytes()
    firing = parse_email(raw)
    digest = hashlib.sha256(raw).hexdigest()
    assert firing.variables["subject"] == "TEST"
    assert firing.variables["body"] == "TEST\n"
    assert firing.variables["message_id"] is None
    assert firing.variables["conversation_id"] == f"mail-{digest[:32]}"
    assert firing.delivery_id == digest
    assert any("fresh conversation" in w for w in firing.warnings)
    assert firing.variables["from"] is None and firing.variables["to"] == []


def test_redelivered_copy_of_an_id_less_message_lands_on_the_same_conversation(shared_samples):
    raw = (shared_samples / "emails" / "mail__bad_encoded_subject.eml").read_bytes()
    assert parse_email(raw).variables["conversation_id"] == parse_email(raw).variables["conversation_id"]
    other = parse_email(raw.replace(b"TEST\r\n", b"OTHER\r\n"))
    assert other.variables["conversation_id"] != parse_email(raw).variables["conversation_id"]


def test_empty_in_reply_to_is_ignored_and_the_message_starts_its_own_conversation(sample):
    firing = sample("mail__empty_in_reply_to.eml")
    # The domain part is lowercased, the local part keeps its case.
    assert firing.variables["conversation_id"] == "F194F88AF3E341A6B2B135CC17912811@articondell"
    assert firing.variables["in_reply_to"] is None
    assert firing.trigger == "email_received"
    assert firing.variables["subject"] == "illegal copy of our patient education software"
    # multipart/related with no parts at all: no body, no message, nothing raised.
    # a subject-only mail says its subject (issue 13: it used to be refused as an empty message)
    assert firing.variables["body"] == "" and firing.message == "illegal copy of our patient education software"
    assert any("In-Reply-To is present but holds no usable message id" in w for w in firing.warnings)


def test_korean_legacy_charset_body_is_decoded(sample):
    firing = sample("mail__ks_c_5601-1987.eml")
    assert firing.variables["body"] == "스티해\n"
    assert firing.variables["reply_body"] == "스티해"
    assert firing.variables["conversation_id"] == "from@example.com"
    assert firing.variables["subject"] == "test"


def test_two_references_headers_join_in_order_and_the_malformed_folded_id_is_skipped(sample):
    firing = sample("mail__multiple_references_with_one_invalid.eml")
    assert firing.variables["references"] == ["foo@bar.net", "baz@bar.net"]
    assert firing.variables["conversation_id"] == "foo@bar.net"
    assert firing.trigger == "email_reply"
    assert firing.variables["body"] == "foo\n"
    assert any("skipped the malformed id" in w for w in firing.warnings)


def test_thunderbird_reply_threads_on_the_references_root(sample):
    firing = sample("mail__raw_email_reply.eml")
    assert firing.variables["conversation_id"] == "473FF3B8.9020707@xxx.org"
    assert firing.variables["in_reply_to"] == "348F04F142D69C21-291E56D292BC@xxxx.net"
    assert firing.variables["references"] == [
        "473FF3B8.9020707@xxx.org",
        "348F04F142D69C21-291E56D292BC@xxxx.net",
    ]
    assert firing.variables["subject"] == "Re: Test reply email"
    assert firing.variables["reply_body"] == "Message body"
    assert firing.trigger == "email_reply"
    assert firing.delivery_id == "473FFE27.20003@xxx.org"


def test_in_reply_to_loop_each_message_alone_threads_on_the_other(sample):
    loop_12 = sample("notmuch__broken_loop-12.eml")
    loop_21 = sample("notmuch__broken_loop-21.eml")
    assert loop_12.variables["conversation_id"] == "mid-loop-21@example.org"
    assert loop_21.variables["conversation_id"] == "mid-loop-12@example.org"
    assert loop_12.variables["subject"] == "referencing in-reply-to-loop-21"
    assert "in file in-reply-to-loop-21" in loop_12.variables["body"]


def test_in_reply_to_loop_joins_one_conversation_once_the_host_passes_what_it_filed(sample):
    # Headers alone cannot break a cycle: the first message seen decides, the host remembers.
    first = sample("notmuch__broken_loop-21.eml")
    filed = {first.variables["message_id"]: first.variables["conversation_id"]}
    second = sample("notmuch__broken_loop-12.eml", known_message_ids=filed)
    assert second.variables["conversation_id"] == first.variables["conversation_id"] == "mid-loop-12@example.org"


def test_ghost_root_pair_resolves_to_the_real_root(sample):
    real = sample("notmuch__threading_ghost-root_real-root.eml")
    fake = sample("notmuch__threading_ghost-root_fake-root.eml")
    assert real.variables["conversation_id"] == "000-real-root@example.org"
    assert fake.variables["conversation_id"] == real.variables["conversation_id"]
    assert real.trigger == "email_received" and fake.trigger == "email_reply"
    assert fake.variables["in_reply_to"] == "nonexistent-message@example.org"
    assert fake.variables["subject"] == "fake root message"
    assert "pointing to a non-existent message" in fake.variables["reply_body"]


def test_references_typo_wins_from_headers_alone_and_is_reported(sample):
    firing = sample("notmuch__threading_parent-priority_child.eml")
    assert firing.variables["conversation_id"] == "B00--root@example.org"
    assert firing.variables["in_reply_to"] == "B00-root@example.org"
    assert any("not in References" in w for w in firing.warnings)
    assert firing.variables["subject"] == "child message"
    assert "has both a references header and an\nin-reply-to header." in firing.variables["body"]


def test_references_typo_yields_to_an_in_reply_to_the_host_knows(sample):
    firing = sample("notmuch__threading_parent-priority_child.eml", known_message_ids={"B00-root@example.org"})
    assert firing.variables["conversation_id"] == "B00-root@example.org"


def test_newest_first_references_are_read_reversed_to_find_the_root(sample):
    firing = sample("notmuch__threading_parent-priority_grand-child.eml")
    assert firing.variables["conversation_id"] == "B00-root@example.org"
    # The variable keeps the header's own order.
    assert firing.variables["references"] == ["B01-child@example.org", "B00-root@example.org"]
    assert any("newest-first" in w for w in firing.warnings)
    assert firing.variables["subject"] == "grand-child message"
    assert "Debbugs does this." in firing.variables["body"]


def test_android_reply_drops_the_russian_attribution_wrapped_over_two_lines(sample):
    firing = sample("talon__android.eml")
    assert "написал:" in firing.variables["body"]
    assert firing.variables["reply_body"] == "Hello"
    assert firing.message == "Hello"
    assert firing.variables["conversation_id"] == "CAEAsyCZ-sCHxZtoKyM3JmT5gSYpZd5GwY-cVNiV8H329zgJT4g@mail.gmail.com"
    assert firing.variables["subject"] == "Re: Test"
    assert firing.trigger == "email_received"  # "Re:" without threading headers is not a reply


def test_iphone_reply_drops_the_attribution_split_by_a_quoted_printable_soft_break(sample):
    firing = sample("talon__iphone.eml")
    assert "On Apr 3, 2012, at 4:19 PM, bob <bob@example.com> wrote:" in firing.variables["body"]
    assert firing.variables["reply_body"] == "Hello\n\nSent from my iPhone"
    assert firing.variables["conversation_id"] == "06C90B12-13B9-4C5F-A9EF-4A809D94C078@gmail.com"
    assert firing.variables["subject"] == "Re: Test"


def test_yahoo_reply_drops_the_original_message_block_and_threads_on_in_reply_to(sample):
    firing = sample("talon__yahoo.eml")
    assert "----- Original Message -----" in firing.variables["body"]
    assert firing.variables["reply_body"] == "Hello"
    assert firing.variables["conversation_id"] == "1333374262.7063.15.camel@mg5"
    assert firing.variables["references"] == []
    assert firing.trigger == "email_reply"
    assert firing.delivery_id == "1333374330.68772.YahooMailNeo@web114411.mail.gq1.yahoo.com"


def test_hotmail_reply_prefers_the_plain_part_and_drops_quoted_lines(sample):
    firing = sample("talon__hotmail.eml")
    assert firing.variables["subject"] == "RE: Test"
    assert "> Subject: Test" in firing.variables["body"]
    assert firing.variables["reply_body"] == "Hello"
    assert firing.variables["conversation_id"] == "DUB102-W192C6E94759954C4885B92B14C0@phx.gbl"
    assert firing.variables["to"] == ["bob@xxx.mailgun.org"]


def test_no_sample_raises_and_every_conversation_id_is_a_valid_session_id(shared_samples):
    from archmax.session.ids import validate_session_id

    files = sorted((shared_samples / "emails").iterdir())
    assert len(files) >= 19
    for path in files:
        firing = parse_email(path.read_bytes())
        validate_session_id(firing.variables["conversation_id"])
        assert isinstance(firing.variables["subject"], str)
        assert isinstance(firing.variables["body"], str)


# --- the demo's emails --------------------------------------------------------------------------


def test_demo_first_email_decodes_subject_and_quoted_printable_body():
    firing = parse_email((DEMO / "01-first.eml").read_bytes())
    assert firing.variables["subject"] == "Question about the café grinder"
    # The soft line break inside "Could yo=\r\nu" is undone by the decoder.
    assert "the thing we discussed on the phone yesterday. Could you tell me" in firing.variables["body"]
    assert "ORD-" not in firing.variables["body"]
    assert firing.variables["conversation_id"] == "3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"
    assert firing.variables["from"] == "dana.rivers@example.org"
    assert firing.variables["to"] == ["support@example.com"]
    assert firing.trigger == "email_received"
    assert firing.warnings == []


def test_demo_reply_carries_only_the_new_text_and_threads_to_the_first_message():
    first = parse_email((DEMO / "01-first.eml").read_bytes())
    reply = parse_email((DEMO / "02-reply.eml").read_bytes())
    assert reply.variables["conversation_id"] == first.variables["conversation_id"]
    assert reply.variables["reply_body"] == "It's ORD-1001."
    assert reply.message == "It's ORD-1001."
    assert reply.variables["in_reply_to"] == "q1.ORD@support.example.com"
    assert reply.variables["references"] == [first.variables["message_id"], "q1.ORD@support.example.com"]
    assert reply.variables["subject"] == "Re: Question about the café grinder"
    assert reply.trigger == "email_reply"
    # The whole text keeps the history, with format=flowed paragraphs re-joined.
    assert (
        "> Thanks for getting in touch. Which order is this about? Could you send us the order number?"
        in (reply.variables["body"])
    )
    assert reply.warnings == []


def test_explicit_trigger_overrides_the_default():
    firing = parse_email((DEMO / "02-reply.eml").read_bytes(), trigger="customer_mail")
    assert firing.trigger == "customer_mail"


# --- bodies and attachments built here ----------------------------------------------------------


def _message(**headers: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Pat Doe <pat@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Files"
    msg["Message-ID"] = "<files-1@Example.ORG>"
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    return msg


def test_message_id_is_kept_as_written_and_only_its_key_lowercases_the_domain():
    firing = parse_email(_message().as_bytes())
    assert firing.variables["message_id"] == "files-1@Example.ORG"  # a reply quotes it as written
    assert firing.variables["conversation_id"] == firing.delivery_id == "files-1@example.org"


def test_html_only_message_gets_text_extracted_and_blockquote_treated_as_history():
    msg = _message()
    msg.set_content(
        "<html><head><style>p{color:red}</style></head><body><p>It&#39;s ORD-2002.</p>"
        "<div>On Mon, Support wrote:</div><blockquote><p>Which order?</p></blockquote></body></html>",
        subtype="html",
    )
    firing = parse_email(msg.as_bytes())
    assert "color:red" not in firing.variables["body"]
    assert "> Which order?" in firing.variables["body"]
    assert firing.variables["reply_body"] == "It's ORD-2002."


def test_attachments_become_numbered_files_with_names_that_cannot_escape():
    msg = _message()
    msg.set_content("See attached.")
    msg.add_attachment(b"%PDF-1.4 invoice", maintype="application", subtype="pdf", filename="../../etc/invoice.pdf")
    msg.add_attachment(b"MZ", maintype="application", subtype="octet-stream", filename="C:\\Users\\pat\\tool.exe")
    msg.add_attachment(b"\x89PNG", maintype="image", subtype="png", filename="..")
    msg.add_attachment("a,b\n1,2\n", subtype="csv", filename="bad\x07name.csv")
    firing = parse_email(msg.as_bytes())
    assert list(firing.files) == ["attachment_1", "attachment_2", "attachment_3", "attachment_4"]
    names = [f.name for f in firing.files.values()]
    assert names == ["invoice.pdf", "tool.exe", "attachment-3.png", "badname.csv"]
    for name in names:
        assert check_relative_path(name) == name and "/" not in name
    assert firing.files["attachment_1"].content == b"%PDF-1.4 invoice"
    assert firing.files["attachment_4"].content == b"a,b\n1,2\n"
    assert firing.variables["body"] == "See attached.\n"


def test_inline_image_with_a_filename_is_an_attachment_but_the_text_body_is_not():
    msg = _message()
    msg.set_content("Photo below.")
    msg.add_related(b"\xff\xd8jpeg", maintype="image", subtype="jpeg", filename="photo.jpg", disposition="inline")
    firing = parse_email(msg.as_bytes())
    assert [f.name for f in firing.files.values()] == ["photo.jpg"]
    assert firing.files["attachment_1"].content == b"\xff\xd8jpeg"
    assert firing.variables["reply_body"] == "Photo below."


def test_overlong_attachment_name_is_cut_to_255_bytes_keeping_its_extension():
    msg = _message()
    msg.set_content("Long name.")
    msg.add_attachment(b"x", maintype="application", subtype="pdf", filename="é" * 300 + ".pdf")
    name = parse_email(msg.as_bytes()).files["attachment_1"].name
    assert name.endswith(".pdf") and len(name.encode("utf-8")) <= 255


def test_garbage_bytes_do_not_raise():
    firing = parse_email(b"\x00\xff\xfe not an email at all \r\n\r\n\x80\x81")
    assert firing.variables["conversation_id"].startswith("mail-")


def test_non_bytes_input_is_a_type_error():
    with pytest.raises(TypeError):
        parse_email("From: a@example.org\n\nhi")  # type: ignore[arg-type]


def test_rfc2231_encoded_traversal_in_a_filename_is_reduced_to_its_basename():
    raw = (
        b'Content-Type: multipart/mixed; boundary="b"\n\n--b\n'
        b"Content-Disposition: attachment; filename*=utf-8''%2e%2e%2f%00x.txt\n"
        b"Content-Type: application/octet-stream\n\nabc\n--b--\n"
    )
    assert parse_email(raw).files["attachment_1"] == FileIn(name="x.txt", content=b"abc")


def test_an_attached_email_is_one_file_and_its_text_is_not_the_body():
    raw = (
        b'Content-Type: multipart/mixed; boundary="b"\n\n--b\nContent-Type: text/plain\n\nsee forwarded\n'
        b"--b\nContent-Type: message/rfc822\nContent-Disposition: attachment; filename=fwd.eml\n\n"
        b"Subject: inner\n\ninner body\n--b--\n"
    )
    firing = parse_email(raw)
    assert firing.variables["body"] == "see forwarded"
    assert firing.files["attachment_1"].name == "fwd.eml"
    assert b"inner body" in firing.files["attachment_1"].content


def test_an_email_with_only_an_attachment_still_carries_a_message_naming_it():
    raw = (
        b"From: a@example.org\r\nTo: b@example.com\r\nSubject: scan\r\nMessage-ID: <only-att@example.org>\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n"
        b"--XX\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=scan.pdf\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XX--\r\n"
    )
    firing = parse_email(raw)
    assert firing.files["attachment_1"].name == "scan.pdf"
    assert firing.message == "(The email has no text; it carries 1 attachment(s): scan.pdf.)"


@pytest.mark.parametrize(
    "from_lines",
    [
        "From: Dana <dana@example.org>\r\nFrom: Mallory <mallory@evil.example>",
        "From: dana@example.org, mallory@evil.example",
    ],
    ids=["two-from-headers", "a-list-in-one-from"],
)
def test_a_mail_naming_several_senders_trusts_none(from_lines: str) -> None:
    """No single sender: the participant rule must not judge it by whichever address came first."""
    raw = f"{from_lines}\r\nTo: support@shop.example\r\nMessage-ID: <x-1@example.org>\r\nSubject: hi\r\n\r\nbody\r\n"
    firing = parse_email(raw.encode())
    assert firing.variables["from"] is None
    assert any("2 From addresses" in w for w in firing.warnings)
