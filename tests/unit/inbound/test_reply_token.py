"""archmax.inbound.reply_token: signed reply tokens, and the secret read through Powertools Parameters."""

from __future__ import annotations

import importlib
import re

import pytest

from archmax.errors import ArchmaxError, ConfigurationError
from archmax.inbound import reply_token
from archmax.inbound.reply_token import reply_address, session_from_addresses, sign, verify
from archmax.inbound.secrets import parse_reference, read_secret

SECRET = b"0123456789abcdef-reply-secret"
OTHER = b"fedcba9876543210-other-secret"


@pytest.mark.parametrize("session_id", ["AAQk-1", "order-1", "Order-1", "chat/42 ü", "x" * 300])
def test_a_signed_token_verifies_to_its_session_id(session_id: str) -> None:
    token = sign(session_id, SECRET)
    assert re.fullmatch(r"[a-z2-7]+-[a-z2-7]+", token)
    assert verify(token, SECRET) == session_id
    assert verify(token.upper(), SECRET) == session_id  # mail systems may fold a local part's case


def test_a_token_under_another_secret_or_tampered_is_refused() -> None:
    token = sign("AAQk-1", SECRET)
    assert verify(token, OTHER) is None
    forged_id = sign("AAQk-2", OTHER).split("-")[0] + "-" + token.split("-")[1]
    assert verify(forged_id, SECRET) is None  # another id with this id's MAC
    flipped = token[:-1] + ("a" if token[-1] != "a" else "b")
    assert verify(flipped, SECRET) is None


@pytest.mark.parametrize("junk", ["", "-", "abc", "abc-", "a!b-" + "a" * 26, "zz-" + "a" * 25, None, 12, "a-" * 2000])
def test_malformed_tokens_are_none_not_errors(junk: object) -> None:
    assert verify(junk, SECRET) is None  # type: ignore[arg-type]


def test_a_short_secret_is_refused_on_both_sides() -> None:
    with pytest.raises(ValueError):
        sign("a", b"short")
    with pytest.raises(ValueError):
        verify("a-b", b"short")


def test_reply_address_round_trips_through_the_recipient_list() -> None:
    address = reply_address("support+old@example.com", "AAQk-1", SECRET)
    local, domain = address.split("@")
    assert domain == "example.com" and local.startswith("support+")
    assert session_from_addresses(["someone@example.com", address.upper()], SECRET) == "AAQk-1"
    assert session_from_addresses(["support@example.com", "support+nope@example.com"], SECRET) is None


def test_the_secret_comes_from_the_environment_first() -> None:
    assert reply_token.configured_secret({}) is None
    assert reply_token.configured_secret({"ARCHMAX_REPLY_SECRET": SECRET.decode()}) == SECRET
    with pytest.raises(ConfigurationError) as info:
        reply_token.configured_secret({"ARCHMAX_REPLY_SECRET": "short"})
    assert isinstance(info.value, ArchmaxError) and info.value.setting == "ARCHMAX_REPLY_SECRET"


@pytest.mark.parametrize(
    ("reference", "parsed"),
    [("ssm:/a/b", ("ssm", "/a/b")), ("/a/b", ("ssm", "/a/b")), ("secretsmanager:hook", ("secretsmanager", "hook"))],
)
def test_secret_references(reference: str, parsed: tuple[str, str]) -> None:
    assert parse_reference(reference) == parsed


@pytest.mark.parametrize("reference", ["", "  ", "ssm:", "secretsmanager: "])
def test_an_empty_secret_reference_is_a_configuration_error(reference: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_reference(reference)


@pytest.fixture
def moto():
    env = importlib.import_module("stores.aws.moto_env")
    server = env.server()
    server.reset()
    return server


def test_secrets_are_read_from_ssm_and_secrets_manager_on_moto(moto) -> None:
    ssm, sm = moto.client("ssm"), moto.client("secretsmanager")
    ssm.put_parameter(Name="/archmax/reply", Value=SECRET.decode(), Type="SecureString")
    sm.create_secret(Name="hook-secret", SecretString="whsec_live_value")
    sm.create_secret(Name="binary-secret", SecretBinary=b"\x00\x01binary-secret-bytes")
    assert read_secret("ssm:/archmax/reply", ssm_client=ssm) == SECRET
    assert read_secret("/archmax/reply", ssm_client=ssm) == SECRET
    assert read_secret("secretsmanager:hook-secret", secrets_client=sm) == b"whsec_live_value"
    assert read_secret("secretsmanager:binary-secret", secrets_client=sm) == b"\x00\x01binary-secret-bytes"
    with pytest.raises(ConfigurationError) as info:
        read_secret("ssm:/archmax/missing", ssm_client=ssm)
    assert info.value.setting == "ssm:/archmax/missing"


def test_a_secret_read_with_no_region_configured_is_a_configuration_error(monkeypatch, tmp_path) -> None:
    """botocore's NoRegionError (no client can be built) is named, not raised raw into the request."""
    from archmax.inbound import secrets

    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setattr(secrets, "_PROVIDERS", {})  # no provider built earlier under another environment
    with pytest.raises(ConfigurationError) as info:
        read_secret("ssm:/archmax/payments-webhook")
    assert info.value.setting == "ssm:/archmax/payments-webhook" and "region" in str(info.value).lower()


# Issue 21 item 6 (BEHAVIOUR.md §5.11): the token of a mail that asked a question names its park.


@pytest.mark.parametrize("version", [0, 7, 12345])
def test_a_park_token_verifies_to_its_session_and_park_version(version: int) -> None:
    token = sign("AAQk-1", SECRET, version)
    assert re.fullmatch(rf"[a-z2-7]+-{version}-[a-z2-7]{{26}}", token)
    assert reply_token.verify_token(token, SECRET) == ("AAQk-1", version)
    assert reply_token.verify_token(token.upper(), SECRET) == ("AAQk-1", version)
    assert verify(token, SECRET) == "AAQk-1"  # readers of the session alone see no difference


def test_a_token_without_a_park_still_verifies_with_no_park() -> None:
    assert reply_token.verify_token(sign("AAQk-1", SECRET), SECRET) == ("AAQk-1", None)


def test_the_park_version_is_signed_it_cannot_be_changed_added_or_removed() -> None:
    id32, version, mac = sign("AAQk-1", SECRET, 4).split("-")
    v1_id32, v1_mac = sign("AAQk-1", SECRET).split("-")
    for forged in (f"{id32}-9-{mac}", f"{id32}-{mac}", f"{v1_id32}-4-{v1_mac}", f"{id32}-04-{mac}"):
        assert reply_token.verify_token(forged, SECRET) is None, forged
    assert reply_token.verify_token(f"{id32}-{version}-{mac}", OTHER) is None


@pytest.mark.parametrize("bad", [-1, 10**18, True, "3", 1.0])
def test_a_bad_park_version_is_refused_when_signing(bad: object) -> None:
    with pytest.raises(ValueError):
        sign("AAQk-1", SECRET, bad)  # type: ignore[arg-type]


def test_the_park_costs_one_octet_plus_its_digits_and_a_short_id_fits_a_local_part() -> None:
    """RFC 5321: a local part is at most 64 octets. The park adds ``-<version>``, not a second session id."""
    address = reply_address("support@example.com", "AAQk-1", SECRET, 12)
    assert len(address.partition("@")[0]) <= 64
    assert len(sign("AAQk-1", SECRET, 12)) == len(sign("AAQk-1", SECRET)) + len("-12")


def test_the_recipient_list_yields_the_park_too() -> None:
    address = reply_address("support@example.com", "AAQk-1", SECRET, 3)
    found = reply_token.token_from_addresses(["someone@example.com", address], SECRET)
    assert found == ("AAQk-1", 3) and session_from_addresses([address], SECRET) == "AAQk-1"
