"""Signed third-party webhooks: the trigger's ``signature:`` declaration, checked before anything is written.

Rule source: issue 13 item 2. Third parties (payment providers, chat platforms, ticketing tools)
cannot sign requests with AWS SigV4, so ``POST /webhooks/{trigger}`` carries no IAM authorizer and
is accepted only for a trigger that declares ``signature:`` (:class:`archmax.spec.model.WebhookSignature`):

* the timestamp header holds Unix seconds within ``tolerance_s`` of the host's clock;
* the signature header holds ``sha256=<hex>`` (or bare hex; comma-separated values let a sender
  rotate secrets) equal to HMAC-SHA256(secret, the signed string), compared in constant time
  against each value;
* one signature is one event (issue 21 item 2): the id the inbox de-duplicates a signed request by
  is covered by the signature or derived from it, never taken from an unsigned header alone:

  - signed string ``<delivery id>.<timestamp>.<raw body>`` (the delivery header's value signed with
    the request, as Standard Webhooks does): the delivery id is the header's value, so the
    sender's own retries (re-signed later with the same id) are applied once;
  - signed string ``<timestamp>.<raw body>``: the delivery header is not covered and is ignored;
    the delivery id is ``sig-<sha256 hex of the signed string>``, so a captured request sent again
    under any ``X-Archmax-Delivery`` or ``Idempotency-Key`` is the same event.

  The two signed strings never coincide for a request this route accepts: a covered delivery id
  holds no ``.``, and a body is a JSON object, so it never starts with ``<timestamp>.``.

The secret is read by reference through Powertools Parameters (:mod:`archmax.inbound.secrets`).
Anything missing, malformed, stale or wrong is :class:`~archmax.errors.UnauthenticatedEventError`
(401), raised before the body is even parsed. IAM routes (``/triggers/{trigger}``) stay for
internal callers.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from datetime import datetime

from archmax.errors import InvalidDeliveryIdError, UnauthenticatedEventError
from archmax.session.ids import validate_delivery_id
from archmax.spec.model import WebhookSignature

PREFIX = "sha256="

DERIVED_PREFIX = "sig-"
"""How a delivery id derived from the signed string starts (``sig-<64 hex>``)."""


def signed_string(timestamp: str, body: bytes, delivery_id: str | None = None) -> bytes:
    """What a sender signs: ``<delivery id>.<timestamp>.<body>``, or ``<timestamp>.<body>`` without an id."""
    signed = timestamp.encode("ascii") + b"." + body
    return signed if delivery_id is None else delivery_id.encode("utf-8") + b"." + signed


def signature_for(secret: bytes, timestamp: str, body: bytes, delivery_id: str | None = None) -> str:
    """``sha256=<hex of HMAC-SHA256(secret, signed_string(...))>``: what a sender puts in the signature header.

    Args:
        secret: The shared secret.
        timestamp: Unix seconds, as sent in the timestamp header.
        body: The raw body bytes.
        delivery_id: The delivery header's value when the sender signs it (recommended); ``None``
            signs ``<timestamp>.<body>`` only, and the request's delivery id is then derived.
    """
    return PREFIX + hmac.new(secret, signed_string(timestamp, body, delivery_id), hashlib.sha256).hexdigest()


def derived_delivery_id(timestamp: str, body: bytes) -> str:
    """``sig-<sha256 hex of "<timestamp>.<body>">``: the delivery id of a request whose signature covers no id."""
    return DERIVED_PREFIX + hashlib.sha256(signed_string(timestamp, body)).hexdigest()


def _matches(candidates: list[str], expected: str) -> bool:
    matched = False
    for value in candidates:  # every candidate is compared: the time taken does not say which matched
        candidate = value if value.startswith(PREFIX) else PREFIX + value
        matched |= hmac.compare_digest(candidate.encode("utf-8", "replace"), expected.encode("ascii"))
    return matched


def verify(
    headers: Mapping[str, str],
    body: bytes,
    declared: WebhookSignature,
    secret: bytes | Callable[[], bytes],
    now: datetime,
) -> str:
    """Check one request's signature; return its delivery id.

    Args:
        headers: Request headers (any case).
        body: The raw body bytes, exactly as sent.
        declared: The trigger's ``signature:`` declaration.
        secret: The shared secret, or a function reading it: called only for a request that carries a
            fresh signature, so an unsigned or stale request never makes the host read the secret.
        now: The host's clock.

    Returns:
        The delivery id the request is de-duplicated by: the delivery header's value when the
        signature covers it (``<id>.<timestamp>.<body>``), else :func:`derived_delivery_id`.

    Raises:
        UnauthenticatedEventError: the signature or timestamp header missing, a timestamp that is
            not whole seconds in ASCII digits or is outside the tolerance, or a signature that matches neither
            signed string.
    """
    lower = {k.lower(): v for k, v in headers.items() if isinstance(v, str)}
    timestamp = (lower.get(declared.timestamp_header.lower()) or "").strip()
    given = lower.get(declared.header.lower()) or ""
    delivery = lower.get(declared.delivery_header.lower())
    if not given or not timestamp:
        raise UnauthenticatedEventError(
            f"a signed webhook needs the {declared.header} and {declared.timestamp_header} headers"
        )
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:  # int() reads "１２" too
        raise UnauthenticatedEventError(f"{declared.timestamp_header} must be Unix seconds")
    if abs(now.timestamp() - int(timestamp)) > declared.tolerance_s:
        raise UnauthenticatedEventError(
            f"{declared.timestamp_header} is more than {declared.tolerance_s}s from now: a stale or replayed request"
        )
    key = secret() if callable(secret) else secret
    candidates = [v.strip() for v in given.split(",")][:8]
    covered = _covered_id(delivery)
    if covered is not None and _matches(candidates, signature_for(key, timestamp, body, covered)):
        return covered
    if _matches(candidates, signature_for(key, timestamp, body)):
        return derived_delivery_id(timestamp, body)
    raise UnauthenticatedEventError(f"the {declared.header} signature does not match the body")


def _covered_id(value: str | None) -> str | None:
    """The delivery header's value if it can be a signed delivery id (usable, no ``.``), else ``None``."""
    if value is None or "." in value:
        return None
    try:
        return validate_delivery_id(value)
    except InvalidDeliveryIdError:
        return None
