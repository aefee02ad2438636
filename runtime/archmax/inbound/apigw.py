"""API Gateway requests (HTTP API v2 and REST v1) -> :class:`~archmax.session.firing.Firing`.

Rule source: DESIGN.md §4 (webhooks: a JSON body naming the problem on bad input, nothing
half-written), issue 4 item 3 (no body, base64 body, form body, missing headers each get a clear
4xx) and the seed, "Sessions: which session does this event belong to?" (a trigger's ``session:``
path read over the payload the host maps into variables).

The envelope is read through Powertools' event data classes (``APIGatewayProxyEventV2`` /
``APIGatewayProxyEvent``, whichever the resolver hands over), which already tolerate ``null``
headers, a missing ``body`` key and case-insensitive header names. This module only decides what a
body means:

* ``POST /sessions/{id}/messages``: ``{"message"?, "trigger"?, "variables"?, "files"?}``
  (:func:`message_firing`); a file is ``{"name", "content", "encoding"?: "utf-8" | "base64"}``.
* ``POST /sessions/{id}/deliveries``: ``{"trigger", "variables"?, "message"?, "park_id"?}``
  (:func:`delivery_firing`).
* ``POST /triggers/{trigger}``: the body *is* the payload, mapped whole into variables; the
  session id comes from the trigger's ``session:`` path over it (:func:`trigger_firing`).

Every refusal is :class:`~archmax.errors.InvalidEventError` (400, or 415 for a form or other
non-JSON media type), raised before anything is written.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from archmax.errors import InvalidEventError
from archmax.session.firing import FileIn, Firing
from archmax.session.paths import UNRESOLVED, parse_session_path, resolve_path

IDEMPOTENCY_HEADER = "Idempotency-Key"
"""The request header whose value becomes the firing's ``delivery_id`` (DESIGN.md §3 "Inbox")."""

MAX_IDEMPOTENCY_KEY = 256
"""Longest accepted ``Idempotency-Key`` (characters); it becomes part of a DynamoDB sort key."""

_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class ProxyEvent(Protocol):
    """What this module reads of a Powertools API Gateway event data class (v1 or v2)."""

    @property
    def body(self) -> str | None:
        """The raw body as API Gateway passed it (maybe base64), or None."""

    @property
    def is_base64_encoded(self) -> bool | None:
        """Whether ``body`` is base64-encoded."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The request headers; Powertools looks names up case-insensitively (``content-type``)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class FileBody(_Strict):
    """One file of a message body: placed under ``scratchpad/attachments/<name>`` (BEHAVIOUR.md §9.5)."""

    name: str
    content: str
    encoding: Literal["utf-8", "base64"] = "utf-8"
    """``base64`` for binary content; the decoded bytes are placed exactly."""


class MessageBody(_Strict):
    """The JSON body of ``POST /sessions/{id}/messages`` (a host ``send``, BEHAVIOUR.md §3.4)."""

    message: str | None = None
    trigger: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, FileBody] = Field(default_factory=dict)


class DeliveryBody(_Strict):
    """The JSON body of ``POST /sessions/{id}/deliveries`` (a ``deliver``, BEHAVIOUR.md §3.5)."""

    trigger: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    message: str | None = None
    park_id: str | None = None
    """The park this delivery answers (``Outcome.park_id``, BEHAVIOUR.md §5.11); a stale one is a 409."""


def raw_body(event: ProxyEvent) -> bytes:
    """The request body as bytes, base64-decoded when API Gateway says it is encoded.

    Args:
        event: A Powertools API Gateway event (v1 or v2).

    Returns:
        The body bytes; ``b""`` for a missing, ``null`` or empty body.

    Raises:
        InvalidEventError: ``isBase64Encoded`` is true but the body is not valid base64 (400).
    """
    body = event.body
    if not body:
        return b""
    if event.is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidEventError("the body is marked base64-encoded but is not valid base64") from exc
    return body.encode("utf-8")


def json_object(event: ProxyEvent) -> dict[str, Any]:
    """The request body as a JSON object: what every webhook requires.

    Args:
        event: A Powertools API Gateway event (v1 or v2). Headers may be missing or ``null``.

    Returns:
        The decoded object (``str`` keys, JSON values).

    Raises:
        InvalidEventError: 415 for a form (or another non-JSON ``Content-Type``); 400 for no body,
            invalid base64, bytes that are not UTF-8, text that is not JSON, JSON nested deeper than
            the decoder reads, a string or key holding an escaped lone surrogate (U+D800 to U+DFFF),
            or JSON that is not an object.
    """
    content_type = (event.headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type in _FORM_TYPES:
        raise InvalidEventError(
            f"form bodies ({content_type}) are not accepted: send a JSON object with Content-Type: application/json",
            status=415,
        )
    if content_type and content_type != "application/json" and not content_type.endswith("+json"):
        raise InvalidEventError(
            f"Content-Type '{content_type}' is not accepted: send a JSON object as application/json",
            status=415,
        )
    data = raw_body(event)
    if not data.strip():
        raise InvalidEventError("the request has no body: send a JSON object")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidEventError("the body is not UTF-8 text: send a JSON object") from exc
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidEventError(f"the body is not JSON ({exc.msg} at line {exc.lineno}): send a JSON object") from exc
    except RecursionError as exc:  # the decoder's own nesting limit (~1000 levels)
        raise InvalidEventError("the body nests too deeply to be read: send a flatter JSON object") from exc
    if not isinstance(value, dict):
        raise InvalidEventError(f"the body is JSON {type(value).__name__}, not an object: send a JSON object")
    try:
        # "\ud800" is valid JSON but a lone surrogate, which has no UTF-8 form: nothing could store it
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidEventError(
            "the body holds a \\u escape of a lone surrogate, which is not text: send valid Unicode"
        ) from exc
    except RecursionError as exc:  # read at the decoder's limit, too deep to write back
        raise InvalidEventError("the body nests too deeply to be read: send a flatter JSON object") from exc
    return value


def delivery_id_of(event: ProxyEvent) -> str | None:
    """The ``Idempotency-Key`` header, the firing's de-duplication id (DESIGN.md §3 "Inbox").

    Returns:
        The trimmed key, or ``None`` when the header is absent or blank.

    Raises:
        InvalidEventError: the key is longer than :data:`MAX_IDEMPOTENCY_KEY` or holds control characters.
    """
    value = event.headers.get(IDEMPOTENCY_HEADER)
    if value is None or not str(value).strip():
        return None
    key = str(value).strip()
    if len(key) > MAX_IDEMPOTENCY_KEY or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in key):
        raise InvalidEventError(
            f"the {IDEMPOTENCY_HEADER} header must be at most {MAX_IDEMPOTENCY_KEY} printable characters"
        )
    return key


def _model(cls: type[BaseModel], data: dict[str, Any], what: str) -> Any:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors())
        raise InvalidEventError(f"the {what} body is not usable: {problems}") from exc


def _file_in(variable: str, body: FileBody) -> FileIn:
    if body.encoding == "base64":
        try:
            return FileIn(name=body.name, content=base64.b64decode(body.content, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise InvalidEventError(f"files.{variable}.content is marked base64 but is not valid base64") from exc
    return FileIn(name=body.name, content=body.content)


def message_firing(event: ProxyEvent, *, session_id: str) -> Firing:
    """``POST /sessions/{id}/messages`` -> a firing for ``send`` on an explicit id (BEHAVIOUR.md §3.4).

    Args:
        event: The request (JSON object body, see :class:`MessageBody`).
        session_id: The ``{id}`` path parameter, URL-decoded by API Gateway; validated later by the host.

    Returns:
        A :class:`Firing` with ``session_id`` set and ``delivery_id`` from ``Idempotency-Key``.

    Raises:
        InvalidEventError: a body that is not a JSON object, unknown keys, wrong types, bad base64.
    """
    body: MessageBody = _model(MessageBody, json_object(event), "message")
    return Firing(
        trigger=body.trigger,
        variables=body.variables,
        files={name: _file_in(name, f) for name, f in body.files.items()},
        message=body.message,
        session_id=session_id,
        delivery_id=delivery_id_of(event),
    )


def delivery_firing(event: ProxyEvent, *, session_id: str) -> Firing:
    """``POST /sessions/{id}/deliveries`` -> a firing for ``deliver`` (BEHAVIOUR.md §3.5).

    A missing trigger is not refused here: ``deliver`` refuses it with
    ``MissingDeliveryTriggerError`` after checking the session, in the order §3.3 fixes.

    Raises:
        InvalidEventError: a body that is not a JSON object, unknown keys or wrong types.
    """
    body: DeliveryBody = _model(DeliveryBody, json_object(event), "delivery")
    return Firing(
        trigger=body.trigger,
        variables=body.variables,
        message=body.message,
        session_id=session_id,
        delivery_id=delivery_id_of(event),
        park_id=body.park_id,
    )


def trigger_firing(event: ProxyEvent, *, trigger: str, message_path: str | bool | None = None) -> Firing:
    """``POST /triggers/{trigger}`` -> a firing whose variables are the whole JSON payload.

    The session id is left to the host: it resolves the trigger's ``session:`` path over these
    variables (seed, "Sessions: which session does this event belong to?").

    Args:
        event: The request; its JSON object body becomes ``variables`` as is.
        trigger: The ``{trigger}`` path parameter.
        message_path: The trigger's ``message:`` declaration (BEHAVIOUR.md §2.2, read by the host):
            a session-path-style path to the firing's words, ``False`` for none; ``None`` (absent)
            reads a top-level string ``message`` when there is one.

    Returns:
        A :class:`Firing` with ``trigger``, ``variables``, ``message`` and ``delivery_id``.

    Raises:
        InvalidEventError: a body that is not a JSON object.
    """
    payload = json_object(event)
    message: str | None = None
    if isinstance(message_path, str):
        value = resolve_path(parse_session_path(message_path, f"trigger '{trigger}' message"), payload)
        message = value if value is not UNRESOLVED and isinstance(value, str) else None
    elif message_path is None and isinstance(payload.get("message"), str):
        message = payload["message"]
    return Firing(trigger=trigger, variables=payload, message=message, delivery_id=delivery_id_of(event))
