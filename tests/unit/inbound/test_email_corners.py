"""The mail adapter on the corners of issue 20 items 5 and 7-11: what a mail says reaches the session as written.

Mails are public samples from ``../shared/samples/emails`` where one shows the corner (read in
place), else built with the stdlib ``email`` package the way the named clients write them.
"""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

from archmax.inbound.email import decode_text, parse_email
from archmax.inbound.ses import received_for


def _mail(**headers: str) -> EmailMessage:
    fields = {
        "From": "Dana Rivers <dana.rivers@example.org>",
        "To": "support@example.com",
        "Subject": "My order",
        "Message-ID": "<first-1@example.org>",
        **{k.replace("_", "-"): v for k, v in headers.items()},
    }
    msg = EmailMessage()
    for name, value in fields.items():
        msg[name] = value
    return msg


def _russian_body(shared_samples: Path) -> str:
    """talon__android.eml's text: a Russian Gmail-Android reply, base64 UTF-8."""
    return parse_email((shared_samples / "emails" / "talon__android.eml").read_bytes()).variables["body"]


# --- item 7: ids are quoted as written; only keys are normalised --------------------------------


def test_ids_reach_the_session_as_written_and_only_the_conversation_and_delivery_keys_lowercase_the_domain():
    firing = parse_email(
        _mail(
            Message_ID="<CAF+Xy9.ABC@Mail.Gmail.COM>",
            In_Reply_To="<1.0.Ours@Example.COM>",
            References="<Root.A@Example.COM> <1.0.Ours@Example.COM>",
        ).as_bytes()
    )
    v = firing.variables
    assert v["message_id"] == "CAF+Xy9.ABC@Mail.Gmail.COM"
    assert v["in_reply_to"] == "1.0.Ours@Example.COM"
    assert v["references"] == ["Root.A@Example.COM", "1.0.Ours@Example.COM"]
    assert v["conversation_id"] == "Root.A@example.com"  # the session key: domain lower-cased
    assert firing.delivery_id == "CAF+Xy9.ABC@mail.gmail.com"  # de-duplication key


def test_an_id_repeated_with_another_domain_case_is_one_reference():
    firing = parse_email(_mail(References="<Root.A@Example.COM> <Root.A@example.com> <b@x.org>").as_bytes())
    assert firing.variables["references"] == ["Root.A@Example.COM", "b@x.org"]


# --- item 8: a declared charset with a few bad bytes keeps its charset ---------------------------


def test_one_bad_byte_in_a_declared_utf8_russian_body_is_one_replacement_not_mojibake(shared_samples):
    russian = _russian_body(shared_samples)
    data = russian.encode("utf-8")
    cut = data.index("написал".encode())
    broken = data[:cut] + b"\xff" + data[cut:]
    msg = _mail()
    msg.set_content(broken, maintype="text", subtype="plain", cte="base64")
    msg.replace_header("Content-Type", "text/plain; charset=utf-8")
    firing = parse_email(msg.as_bytes())
    body = firing.variables["body"]
    assert body.replace("\ufffd", "") == russian and body.count("\ufffd") == 1
    assert firing.variables["body_charset"] == "utf-8"
    assert any("U+FFFD" in w for w in firing.warnings)


def test_a_declared_legacy_charset_with_an_undefined_byte_keeps_its_charset(shared_samples):
    russian = _russian_body(shared_samples)
    data = russian.encode("cp1251") + b"\x98"  # 0x98 is undefined in windows-1251
    warnings: list[str] = []
    text, codec = decode_text(data, "windows-1251", warnings)
    assert codec == "cp1251" and text == russian + "\ufffd"


def test_no_declared_charset_still_guesses(shared_samples):
    russian = _russian_body(shared_samples)
    text, codec = decode_text(russian.encode("cp1251"), None, [])
    assert text == russian and codec != "utf-8"


# --- item 9: every inline text part, in order ----------------------------------------------------


def test_ios_mail_text_photo_text_keeps_the_text_after_the_photo():
    msg = _mail()
    msg.set_content("Here is the grinder:")
    msg.add_attachment(
        b"\xff\xd8\xff\xe0 jpeg", maintype="image", subtype="jpeg", filename="IMG_0001.jpeg", disposition="inline"
    )
    msg.add_attachment("It arrived with a crack in the hopper.", disposition="inline")
    firing = parse_email(msg.as_bytes())
    body = firing.variables["body"]
    assert "Here is the grinder:" in body and "It arrived with a crack in the hopper." in body
    assert body.index("Here is the grinder:") < body.index("It arrived with a crack")
    assert [f.name for f in firing.files.values()] == ["IMG_0001.jpeg"]


def test_a_digest_gives_every_message_text_in_order():
    digest = _mail()
    digest.make_mixed()
    digest.replace_header("Content-Type", "multipart/digest")
    for n in (1, 2):
        inner = EmailMessage()
        inner["Subject"] = f"Part {n}"
        inner.set_content(f"Digest item number {n}.")
        digest.attach(_rfc822(inner))
    body = parse_email(digest.as_bytes()).variables["body"]
    assert body.index("Digest item number 1.") < body.index("Digest item number 2.")


def test_an_alternative_gives_its_plain_text_once():
    msg = _mail()
    msg.set_content("Plain words.")
    msg.add_alternative("<p>Rich words.</p>", subtype="html")
    assert parse_email(msg.as_bytes()).variables["body"].strip() == "Plain words."


def _rfc822(inner: EmailMessage) -> EmailMessage:
    part = EmailMessage()
    part.set_content(inner)
    del part["Content-Disposition"]
    return part


# --- item 10: named parts without Content-Disposition are files ----------------------------------


def test_named_parts_without_a_disposition_become_files():
    msg = _mail()
    msg.set_content("See the two files.")
    msg.make_mixed()
    notes = EmailMessage()
    notes.set_content("order ORD-1001, hopper cracked")
    notes.replace_header("Content-Type", 'text/plain; charset="utf-8"; name="notes.txt"')
    msg.attach(notes)
    original = EmailMessage()
    original["Subject"] = "The original"
    original.set_content("Forwarded words.")
    forwarded = _rfc822(original)
    forwarded.replace_header("Content-Type", 'message/rfc822; name="original.eml"')
    msg.attach(forwarded)
    firing = parse_email(msg.as_bytes())
    files = {f.name: f.content for f in firing.files.values()}
    assert set(files) == {"notes.txt", "original.eml"}
    assert files["notes.txt"].strip() == b"order ORD-1001, hopper cracked"
    assert b"Forwarded words." in files["original.eml"] and b"Subject: The original" in files["original.eml"]
    assert firing.variables["body"].strip() == "See the two files."


# --- item 11: a malformed To never yields an address with an encoded-word ------------------------


def test_an_encoded_word_inside_a_to_address_is_left_out_and_said():
    raw = (
        b"From: dana.rivers@example.org\r\nTo: =?utf-8?q?Support_Team?=@example.com, support@example.com\r\n"
        b"Subject: x\r\nMessage-ID: <m-1@example.org>\r\n\r\nHello\r\n"
    )
    firing = parse_email(raw)
    assert firing.variables["to"] == ["support@example.com"]
    assert any("not a usable address" in w for w in firing.warnings)


# --- item 5: the address SES received the mail for ----------------------------------------------


def test_a_bccd_mail_takes_the_address_ses_received_it_for_as_its_first_to():
    firing = parse_email(_mail(To="undisclosed-recipients:;").as_bytes())
    assert firing.variables["to"] == []
    received = received_for(firing, ["support@example.com"])
    assert received.variables["to"] == ["support@example.com"]
    assert any("receipt.recipients" in w for w in received.warnings)


def test_a_mail_copying_us_beside_someone_else_puts_our_address_first():
    firing = parse_email(_mail(To="alex@elsewhere.example, Support <SUPPORT@example.com>").as_bytes())
    received = received_for(firing, ["support@example.com"])
    assert received.variables["to"] == ["SUPPORT@example.com", "alex@elsewhere.example"]
    assert received_for(received, ["support@example.com"]) is received  # already first: unchanged
