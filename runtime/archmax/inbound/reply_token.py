"""Signed reply tokens: the session id (and the park that asked) carried in a Reply-To address, proven by HMAC-SHA256.

Rule source: issue 13 "Mail authentication and participants" (a valid signed reply token lets a
mail speak into its session), issue 21 item 6 and BEHAVIOUR.md §5.11 (the reply token of a mail that
asked a question names its park), and the shared interface of TEAM.md: the outbound side writes
``Reply-To: <local>+<token>@<domain>``; the inbound side reads the token back from the recipient.

Token shapes, lowercase RFC 4648 base32 without padding (``a-z2-7``) and decimal digits, so a token
survives mail systems that fold the case of a local part and holds no ``+``, ``@`` or ``.``:

* ``<id32>-<mac32>`` (v1, no park): ``mac32`` is the first 16 bytes (128 bits) of
  HMAC-SHA256(secret, ``"archmax-reply-v1" NUL + session id``). A mail that asked no question (a final
  answer, a failure's reason) carries this one, and so does every mail sent before parks were named.
* ``<id32>-<version>-<mac32>`` (v2, a park): the mail asked a question at the park the commit at
  ``version`` made (its ``park_id`` is ``<session id>@v<version>``, :func:`archmax.session.records.park_id`).
  The MAC is HMAC-SHA256(secret, ``"archmax-reply-v2" NUL + session id + NUL + version``): the version is
  signed, and since the two domains differ, a v2 token stripped of its version is no v1 token.

``id32`` encodes the UTF-8 session id. Only the park's version is carried (the session is already
named), so naming the park costs ``1 + len(str(version))`` octets, not a second copy of the session id.
The prefixes keep these MACs apart from any other use of the same secret (webhook signatures use their
own). A token never expires: a reply may come months later, and the session's own state governs what a
delivery does; a v2 token whose park is no longer the session's current park is refused by admission
(:mod:`archmax.inbound.admission`). RFC 5321 limits a local part to 64 octets; a long session id makes a
longer token, which most receivers (SES included) accept, but a short id keeps the address portable.
Measured local parts (``support+<token>``): id ``AAQk-1`` 45 octets, 47 at park version 2; a mail-opened
id is over 64 with or without a park (``mail:t1@shop.example`` 67, 69 at version 2): ``id32`` is 8/5 of
the id's octets, the park only ``-<version>``.

The secret: env ``ARCHMAX_REPLY_SECRET`` (the bytes of its UTF-8 text) locally, or on AWS the SSM
parameter (or ``secretsmanager:<name>`` secret) named by ``ARCHMAX_REPLY_SECRET_PARAM``, read
through Powertools Parameters (:func:`archmax.inbound.secrets.read_secret`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from archmax.errors import ConfigurationError

SECRET_ENV = "ARCHMAX_REPLY_SECRET"
"""Environment variable holding the secret itself (local hosts, tests)."""
SECRET_PARAM_ENV = "ARCHMAX_REPLY_SECRET_PARAM"
"""Environment variable naming the SSM parameter / ``secretsmanager:`` secret that holds it (AWS)."""

_DOMAIN = b"archmax-reply-v1\x00"
_PARK_DOMAIN = b"archmax-reply-v2\x00"
_MAC_BYTES = 16
_TOKEN = re.compile(r"^([a-z2-7]+)-(?:(0|[1-9][0-9]{0,17})-)?([a-z2-7]{26})$")


class ReplyToken(NamedTuple):
    """What a valid token names: its session, and the park (the version of the commit that parked) it asked at."""

    session_id: str
    park_version: int | None
    """``None`` for a v1 token (no park named: today's behaviour)."""


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _unb32(text: str) -> bytes:
    return base64.b32decode(text.upper() + "=" * (-len(text) % 8))


def _mac(session_id: str, secret: bytes, park_version: int | None = None) -> bytes:
    if park_version is None:
        message = _DOMAIN + session_id.encode("utf-8")
    else:
        message = _PARK_DOMAIN + session_id.encode("utf-8") + b"\x00" + str(park_version).encode("ascii")
    return hmac.new(secret, message, hashlib.sha256).digest()[:_MAC_BYTES]


def sign(session_id: str, secret: bytes, park_version: int | None = None) -> str:
    """The reply token of ``session_id``, naming the park made at ``park_version`` when given.

    Args:
        session_id: A valid session id (BEHAVIOUR.md §4.1); it is encoded, not checked, here.
        secret: The HMAC key; at least 16 bytes.
        park_version: The version of the commit that parked the session where the mail asks its
            question (``parked_version``, §5.11), or ``None`` for a mail that asks none.

    Returns:
        ``<id32>-<mac32>`` or ``<id32>-<version>-<mac32>``: lowercase, safe in a URL and in a mail local part.

    Raises:
        ValueError: an empty session id, a negative or non-int version, or a secret shorter than 16 bytes.
    """
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("a reply token needs a non-empty session id")
    if park_version is not None and (type(park_version) is not int or not 0 <= park_version < 10**18):
        raise ValueError(f"a park version is a non-negative int, not {park_version!r}")
    _check_secret(secret)
    park = "" if park_version is None else f"{park_version}-"
    return f"{_b32(session_id.encode('utf-8'))}-{park}{_b32(_mac(session_id, secret, park_version))}"


def verify_token(token: str, secret: bytes) -> ReplyToken | None:
    """What a token was signed for, or ``None`` when it is not a valid token under ``secret``.

    Case is ignored (mail systems may fold a local part). The MAC is compared in constant time, and it
    covers the park version: a token whose version was changed or removed is no token.

    Args:
        token: Untrusted text (the part after ``+`` of a recipient's local part).
        secret: The HMAC key ``sign`` used.

    Returns:
        A :class:`ReplyToken`, or ``None`` for malformed text, a wrong MAC, or an id that is not UTF-8.

    Raises:
        ValueError: a secret shorter than 16 bytes (a configuration error, not an untrusted input).
    """
    _check_secret(secret)
    if not isinstance(token, str) or len(token) > 2048:
        return None
    match = _TOKEN.fullmatch(token.strip().lower())
    if not match:
        return None
    try:
        session_id = _unb32(match.group(1)).decode("utf-8")
        mac = _unb32(match.group(3))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    park_version = int(match.group(2)) if match.group(2) is not None else None
    if not session_id or not hmac.compare_digest(mac, _mac(session_id, secret, park_version)):
        return None
    return ReplyToken(session_id, park_version)


def verify(token: str, secret: bytes) -> str | None:
    """The session id a token (either shape) was signed for, or ``None``: :func:`verify_token`'s session.

    Raises:
        ValueError: a secret shorter than 16 bytes.
    """
    found = verify_token(token, secret)
    return found.session_id if found is not None else None


def reply_address(address: str, session_id: str, secret: bytes, park_version: int | None = None) -> str:
    """``<local>+<token>@<domain>`` for a base address ``<local>@<domain>`` (the Reply-To the outbound side writes).

    ``park_version``: the park the mail asks its question at (:func:`sign`), or ``None``.

    Raises:
        ValueError: ``address`` has no ``@``, or :func:`sign` refuses its arguments.
    """
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain:
        raise ValueError(f"not a mail address: {address!r}")
    return f"{local.split('+', 1)[0]}+{sign(session_id, secret, park_version)}@{domain}"


def token_from_addresses(addresses: Iterable[str], secret: bytes) -> ReplyToken | None:
    """The token of the first address whose ``+``-tag is a valid token under ``secret``, else ``None``.

    Args:
        addresses: Recipients as read from the mail or the SES receipt (untrusted).
        secret: The HMAC key.
    """
    for address in addresses:
        if not isinstance(address, str):
            continue
        local = address.rpartition("@")[0]
        _, plus, tag = local.partition("+")
        if plus and (found := verify_token(tag, secret)) is not None:
            return found
    return None


def session_from_addresses(addresses: Iterable[str], secret: bytes) -> str | None:
    """The session id :func:`token_from_addresses` finds, else ``None``."""
    found = token_from_addresses(addresses, secret)
    return found.session_id if found is not None else None


def configured_secret(env: Mapping[str, str] | None = None) -> bytes | None:
    """The reply-token secret of this host, or ``None`` when none is configured.

    Reads ``ARCHMAX_REPLY_SECRET`` first, else the parameter named by ``ARCHMAX_REPLY_SECRET_PARAM``
    through Powertools Parameters (cached by Powertools for its default max age).

    Raises:
        ConfigurationError: the parameter cannot be read, or the secret is shorter than 16 bytes.
    """
    env = os.environ if env is None else env
    value = env.get(SECRET_ENV)
    if value:
        secret = value.encode("utf-8")
    elif env.get(SECRET_PARAM_ENV):
        from archmax.inbound.secrets import read_secret

        secret = read_secret(env[SECRET_PARAM_ENV])
    else:
        return None
    try:
        _check_secret(secret)
    except ValueError as exc:
        raise ConfigurationError(f"the reply-token secret is unusable: {exc}", setting=SECRET_ENV) from None
    return secret


def _check_secret(secret: bytes) -> None:
    if not isinstance(secret, (bytes, bytearray)) or len(secret) < 16:
        raise ValueError("a reply-token secret must be at least 16 bytes")
