"""Inbound mail that real servers send (issue 12 item 5): a blank line before the headers, a charset that lies.

Each case starts from a real message (the demo's own mail, or a public sample read in place) and
applies the quirk to its bytes, so the expectation is the message's own text and thread.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from archmax.inbound.email import decode_text, parse_email

REPO = Path(__file__).resolve().parents[3]
FIRST = REPO / "examples" / "workflows" / "support-inbox" / "emails" / "01-first.eml"


@pytest.mark.parametrize("blank", [b"\r\n", b"\n", b"\r\n\r\n", b" \t\r\n"])
def test_a_header_block_after_blank_lines_is_still_read_for_its_headers_and_thread(shared_samples, blank):
    raw = (shared_samples / "emails" / "mail__raw_email_reply.eml").read_bytes()
    plain, quirky = parse_email(raw), parse_email(blank + raw)
    assert quirky.variables["message_id"] == plain.variables["message_id"] is not None
    assert quirky.variables["conversation_id"] == plain.variables["conversation_id"]
    assert quirky.variables["references"] == plain.variables["references"] and quirky.trigger == "email_reply"
    assert quirky.variables["subject"] == plain.variables["subject"] != ""
    assert quirky.variables["reply_body"] == plain.variables["reply_body"]
    assert any("blank line(s) before the header block were skipped" in w for w in quirky.warnings)


def test_a_message_that_really_starts_with_its_body_is_left_alone():
    firing = parse_email(b"\r\nhello world\r\n")
    assert not any("header block" in w for w in firing.warnings)


def test_a_utf8_body_labelled_big5_comes_out_as_the_text_it_is():
    raw = FIRST.read_bytes()
    truthful = parse_email(raw)
    lying = parse_email(
        raw.replace(b"Content-Type: text/plain; charset=UTF-8", b"Content-Type: text/plain; charset=big5")
    )
    assert "café" in truthful.variables["body"]
    assert lying.variables["body"] == truthful.variables["body"]
    assert (truthful.variables["body_charset"], lying.variables["body_charset"]) == ("utf-8", "utf-8")
    assert any("labelled 'big5' but is UTF-8" in w for w in lying.warnings)


def test_chinese_utf8_labelled_big5_is_not_read_as_big5_mojibake():
    text = "您好，我的訂單還沒到。訂單號是 ORD-1001。"
    raw = (
        b"From: a@example.org\r\nTo: support@example.com\r\nSubject: order\r\nMessage-ID: <zh-1@example.org>\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=big5\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    ) + base64.encodebytes(text.encode("utf-8"))
    firing = parse_email(raw)
    assert firing.variables["body"].strip() == text and firing.variables["body_charset"] == "utf-8"


def test_a_truthful_legacy_charset_is_read_with_its_label(shared_samples):
    firing = parse_email((shared_samples / "emails" / "mail__ks_c_5601-1987.eml").read_bytes())
    assert firing.variables["body_charset"] == "euc_kr"
    assert re.search("[\uac00-\ud7a3]", firing.variables["body"])  # Hangul, not replacement characters
    assert not any("labelled" in w for w in firing.warnings)


def test_bytes_that_are_neither_the_label_nor_utf8_go_to_the_charset_detector(shared_samples):
    russian = parse_email((shared_samples / "emails" / "talon__android.eml").read_bytes()).variables["body"]
    warnings: list[str] = []
    text, codec = decode_text(russian.encode("cp1251"), "utf-8", warnings)
    assert text == russian and "написал" in text
    assert codec == "cp1251" and "charset-normalizer read it as cp1251" in warnings[0]


def test_an_unknown_label_falls_back_to_utf8_and_says_so():
    warnings: list[str] = []
    assert decode_text("café".encode(), "x-no-such-charset", warnings) == ("café", "utf-8")
    assert warnings == ["the body is labelled 'x-no-such-charset' but is UTF-8; it was read as UTF-8"]
