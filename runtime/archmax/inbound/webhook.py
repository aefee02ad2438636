"""Signed third-party webhooks: the trigger's ``signature:`` declaration, checked before anything is written.

Rule source: issue 13 item 2. Third parties (payment providers, chat platforms, ticketing tools)
cannot sign requests with AWS SigV4, so ``POST /webhooks/{trigger}`` carries no IAM authorizer and
is accepted only for a trigger that declares ``signature:`` (:class:`archmax.spec.model.WebhookSignature`):

* the timestamp header holds Unix seconds within ``tolerance_s`` of the host's clock;
* the signature header holds ``sha256=<hex>`` (or bare hex; comma-separated values let a sender
  rotate secrets) equal to HMAC-SHA256(secret, ``<timestamp>.<raw body>``), compared in constant
  time against each value;
* the delivery header holds the sender's delivery id, which becomes the firing's delivery id: a
  replay is recognised and not applied again.

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


def signature_for(secret: bytes, timestamp: str, body: bytes) -> str:
    """``sha256=<hex of HMAC-SHA256(secret, "<timestamp>." + body)>``: what a sender puts in the signature header."""
    return PREFIX + hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


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
        The delivery id (the delivery header's value).

    Raises:
        UnauthenticatedEventError: a header missing, a timestamp that is not whole seconds or is
            outside the tolerance, a signature that matches none of the values, or an unusable
            delivery id.
    """
    lower = {k.lower(): v for k, v in headers.items() if isinstance(v, str)}
    timestamp = (lower.get(declared.timestamp_header.lower()) or "").strip()
    given = lower.get(declared.header.lower()) or ""
    delivery = lower.get(declared.delivery_header.lower())
    if not given or not timestamp:
        raise UnauthenticatedEventError(
            f"a signed webhook needs the {declared.header} and {declared.timestamp_header} headers"
        )
    if not timestamp.isdigit() or len(timestamp) > 12:
        raise UnauthenticatedEventError(f"{declared.timestamp_header} must be Unix seconds")
    if abs(now.timestamp() - int(timestamp)) > declared.tolerance_s:
        raise UnauthenticatedEventError(
            f"{declared.timestamp_header} is more than {declared.tolerance_s}s from now: a stale or replayed request"
        )
    expected = signature_for(secret() if callable(secret) else secret, timestamp, body)
    candidates = [v.strip() for v in given.split(",")][:8]
    matched = False
    for value in candidates:  # every candidate is compared: the time taken does not say which matched
        candidate = value if value.startswith(PREFIX) else PREFIX + value
        matched |= hmac.compare_digest(candidate.encode("utf-8", "replace"), expected.encode("ascii"))
    if not matched:
        raise UnauthenticatedEventError(f"the {declared.header} signature does not match the body")
    try:
        return validate_delivery_id(delivery)
    except InvalidDeliveryIdError as exc:
        raise UnauthenticatedEventError(
            f"a signed webhook needs a usable {declared.delivery_header} header: {exc.reason}"
        ) from None
