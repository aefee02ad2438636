"""Signed reply tokens: the session id carried in a Reply-To address, proven by HMAC-SHA256.

Rule source: issue 13 "Mail authentication and participants" (a valid signed reply token lets a
mail speak into its session) and the shared interface of TEAM.md: the outbound side writes
``Reply-To: <local>+<token>@<domain>``; the inbound side reads the token back from the recipient.

Token shape: ``<id32>-<mac32>``, both lowercase RFC 4648 base32 without padding (``a-z2-7``), so
the token survives mail systems that fold the case of a local part and holds no ``+``, ``@`` or
``.``. ``id32`` encodes the UTF-8 session id; ``mac32`` is the first 16 bytes (128 bits) of
HMAC-SHA256(secret, ``"archmax-reply-v1" NUL + session id``). The prefix keeps these MACs apart from
any other use of the same secret (webhook signatures use their own). The token never expires:
a reply may come months later, and the session's own state (finished, parked) still governs what a
delivery does. RFC 5321 limits a local part to 64 octets; a long session id makes a longer token,
which most receivers (SES included) accept, but a short id keeps the address portable.

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

from archmax.errors import ConfigurationError

SECRET_ENV = "ARCHMAX_REPLY_SECRET"
"""Environment variable holding the secret itself (local hosts, tests)."""
SECRET_PARAM_ENV = "ARCHMAX_REPLY_SECRET_PARAM"
"""Environment variable naming the SSM parameter / ``secretsmanager:`` secret that holds it (AWS)."""

_DOMAIN = b"archmax-reply-v1\x00"
_MAC_BYTES = 16
_TOKEN = re.compile(r"^([a-z2-7]+)-([a-z2-7]{26})$")


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _unb32(text: str) -> bytes:
    return base64.b32decode(text.upper() + "=" * (-len(text) % 8))


def _mac(session_id: str, secret: bytes) -> bytes:
    return hmac.new(secret, _DOMAIN + session_id.encode("utf-8"), hashlib.sha256).digest()[:_MAC_BYTES]


def sign(session_id: str, secret: bytes) -> str:
    """The reply token of ``session_id``.

    Args:
        session_id: A valid session id (BEHAVIOUR.md §4.1); it is encoded, not checked, here.
        secret: The HMAC key; at least 16 bytes.

    Returns:
        ``<id32>-<mac32>``: lowercase base32, safe in a URL and in a mail local part.

    Raises:
        ValueError: an empty session id or a secret shorter than 16 bytes.
    """
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("a reply token needs a non-empty session id")
    _check_secret(secret)
    return f"{_b32(session_id.encode('utf-8'))}-{_b32(_mac(session_id, secret))}"


def verify(token: str, secret: bytes) -> str | None:
    """The session id a token was signed for, or ``None`` when it is not a valid token under ``secret``.

    Case is ignored (mail systems may fold a local part). The MAC is compared in constant time.

    Args:
        token: Untrusted text (the part after ``+`` of a recipient's local part).
        secret: The HMAC key ``sign`` used.

    Returns:
        The session id, or ``None`` for malformed text, a wrong MAC, or an id that is not UTF-8.

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
        mac = _unb32(match.group(2))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not session_id or not hmac.compare_digest(mac, _mac(session_id, secret)):
        return None
    return session_id


def reply_address(address: str, session_id: str, secret: bytes) -> str:
    """``<local>+<token>@<domain>`` for a base address ``<local>@<domain>`` (the Reply-To the outbound side writes).

    Raises:
        ValueError: ``address`` has no ``@``, or :func:`sign` refuses its arguments.
    """
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain:
        raise ValueError(f"not a mail address: {address!r}")
    return f"{local.split('+', 1)[0]}+{sign(session_id, secret)}@{domain}"


def session_from_addresses(addresses: Iterable[str], secret: bytes) -> str | None:
    """The session id of the first address whose ``+``-tag is a valid token under ``secret``, else ``None``.

    Args:
        addresses: Recipients as read from the mail or the SES receipt (untrusted).
        secret: The HMAC key.
    """
    for address in addresses:
        if not isinstance(address, str):
            continue
        local = address.rpartition("@")[0]
        _, plus, tag = local.partition("+")
        if plus and (found := verify(tag, secret)) is not None:
            return found
    return None


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
