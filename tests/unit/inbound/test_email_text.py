"""Reply extraction, format=flowed and HTML to text (archmax.inbound.email_text)."""

from __future__ import annotations

from archmax.inbound.email_text import html_to_text, strip_quoted, unflow


def test_quoted_lines_are_removed_wherever_they_are():
    assert strip_quoted("Yes.\n> Do you agree?\nAnd also this.\n") == "Yes.\nAnd also this."


def test_everything_from_an_on_date_wrote_line_is_history():
    text = "It's ORD-1001.\n\nOn Tue, 14 Jan 2025 at 11:03, Support <s@example.com> wrote:\nWhich order?\n"
    assert strip_quoted(text) == "It's ORD-1001."


def test_an_attribution_wrapped_over_two_lines_is_cut_at_its_first_line():
    text = "Thanks!\n\nOn Tue, 14 Jan 2025 at 11:03, Example Shop Support <support@example.com>\nwrote:\n\n> Hi\n"
    assert strip_quoted(text) == "Thanks!"


def test_german_and_french_attributions_are_history_too():
    assert strip_quoted("Danke.\n\nAm 14.01.2025 um 11:03 schrieb Support:\n> Hallo\n") == "Danke."
    assert strip_quoted("Merci.\n\nLe 14 janv. 2025 à 11:03, Support a écrit :\n> Bonjour\n") == "Merci."


def test_original_message_separators_in_both_spellings_cut_the_history():
    assert strip_quoted("New.\n-----Original Message-----\nFrom: a\nold\n") == "New."
    assert strip_quoted("New.\n\n----- Original Message -----\nFrom: a\nold\n") == "New."


def test_an_outlook_from_sent_block_cuts_the_history_with_its_underscore_rule():
    text = "See below.\n\n________________________________\nFrom: Support <s@example.com>\nSent: Tuesday\nTo: me\n\nold"
    assert strip_quoted(text) == "See below."


def test_a_from_line_without_a_sent_line_is_ordinary_text():
    text = "Forwarding the headers:\nFrom: test@example.com\nReply-To: test@example.com\n"
    assert strip_quoted(text) == text.strip()


def test_a_sentence_ending_in_wrote_without_a_quote_after_it_is_kept():
    text = "Here is what I wrote:\nthe order is late."
    assert strip_quoted(text) == text


def test_a_reply_with_only_history_has_no_new_text():
    assert strip_quoted("> just quoting\n>\n") == ""


def test_flowed_lines_rejoin_per_quote_depth_and_the_signature_separator_stays():
    flowed = "Could you send \nus the number?\n> quoted and \n> flowed\n-- \nDana"
    assert unflow(flowed) == "Could you send us the number?\n> quoted and flowed\n-- \nDana"


def test_flowed_delsp_removes_the_joining_space():
    assert unflow("hyphen- \nated", delsp=True) == "hyphen-ated"


def test_html_text_skips_style_and_script_and_decodes_entities():
    html = "<html><head><title>t</title><style>x{}</style></head><body><p>A &amp; B</p><script>1</script>"
    html += "<div>line<br>two</div></body></html>"
    assert html_to_text(html) == "A & B\nline\ntwo"


def test_html_blockquote_lines_are_marked_as_quotes():
    text = html_to_text("<p>Mine</p><blockquote><p>Theirs</p><blockquote>Older</blockquote></blockquote>")
    assert text.split("\n") == ["Mine", "> Theirs", "> > Older"]
    assert strip_quoted(text) == "Mine"


def test_broken_html_is_tolerated():
    assert html_to_text("<p>open <b>bold <i>never closed") == "open bold never closed"
