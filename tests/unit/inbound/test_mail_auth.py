"""archmax.inbound.mail_auth: the authentication policies over SES verdicts and DKIM d= alignment (issue 13 item 1)."""

from __future__ import annotations

import pytest

from archmax.inbound.mail_auth import Verdicts, aligned, authentication_failure, dkim_domains

SIGNED = (
    b"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed;\r\n\td=mail.customer.example; s=s1; h=From;\r\n"
    b"From: dana@customer.example\r\nSubject: hi\r\n\r\nbody\r\n"
)
ESP_SIGNED = (
    b"DKIM-Signature: v=1; a=rsa-sha256; d=amazonses.com; s=x; h=From;\r\nFrom: dana@customer.example\r\n\r\nb\r\n"
)


def test_dkim_domains_are_read_from_every_signature() -> None:
    assert dkim_domains(SIGNED) == ["mail.customer.example"]
    assert dkim_domains(SIGNED + ESP_SIGNED) == ["mail.customer.example"]  # headers end at the first blank line
    assert dkim_domains(b"From: x@y\r\n\r\n") == []


@pytest.mark.parametrize(
    ("d", "f", "ok"),
    [
        ("customer.example", "customer.example", True),
        ("mail.customer.example", "customer.example", True),
        ("customer.example", "eu.customer.example", True),
        ("amazonses.com", "customer.example", False),
        ("evilcustomer.example", "customer.example", False),
        ("", "customer.example", False),
    ],  # fmt: skip
)
def test_relaxed_alignment(d: str, f: str, ok: bool) -> None:
    assert aligned(d, f) is ok


def test_the_default_policy_takes_dmarc_or_aligned_dkim() -> None:
    sender = "dana@customer.example"
    assert authentication_failure("dmarc_or_aligned_dkim", Verdicts(dmarc="PASS"), sender, b"") is None
    assert authentication_failure("dmarc_or_aligned_dkim", Verdicts(dkim="PASS", dmarc="FAIL"), sender, SIGNED) is None
    unaligned = authentication_failure("dmarc_or_aligned_dkim", Verdicts(dkim="PASS", spf="PASS"), sender, ESP_SIGNED)
    assert unaligned is not None and "DMARC absent" in unaligned
    assert authentication_failure("dmarc_or_aligned_dkim", Verdicts(dkim="FAIL"), sender, SIGNED) is not None


def test_the_other_policies() -> None:
    sender = "dana@customer.example"
    assert authentication_failure("dmarc", Verdicts(dkim="PASS"), sender, SIGNED) is not None
    assert authentication_failure("aligned_dkim", Verdicts(dkim="PASS"), sender, SIGNED) is None
    assert authentication_failure("spf", Verdicts(spf="PASS"), sender, b"") is None
    assert authentication_failure("spf", Verdicts(spf="SOFTFAIL"), sender, b"") is not None
    assert authentication_failure("none", Verdicts(), None, b"") is None
