"""Validation of one state's ``triggers:`` block and of trigger signatures.

Rule source: BEHAVIOUR.md §2.2. Trigger id → declaration or ``null``. Errors: an empty id; a
declaration that is neither a mapping nor null; ``entry:``/``name:`` keys; a malformed
``session`` path (at ``states.<s>.triggers.<t>.session``); a bad ``message``, ``connection`` or
``description``; a bad signature entry. Unknown keys are kept and warned about. Cross-state
rules (one id in two states, no trigger anywhere) live in :mod:`archmax.spec.check_states`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from archmax.errors import InvalidSessionPathError
from archmax.session.paths import parse_session_path
from archmax.spec.checks import (
    NON_BLANK,
    VARIABLE_NAME,
    Collector,
    at,
    is_non_blank,
    optional_text,
    unknown_keys,
)
from archmax.spec.model import ReturnSpec, TriggerDecl, WebhookSignature
from archmax.spec.value_types import VALUE_TYPES

_KNOWN = (
    "session",
    "message",
    "connection",
    "description",
    "requires",
    "returns",
    "signature",
    "mail_auth",
    "unauthenticated_first_mail",
)
_SIGNATURE_KEYS = ("secret", "header", "timestamp_header", "delivery_header", "tolerance_s")
_HEADER = re.compile(r"^[A-Za-z0-9-]{1,64}$")
_FORBIDDEN = ("entry", "name")  # wiring the runtime reads elsewhere: the declaring state is the entry
_ENTRY_KEYS = ("name", "type", "description")
_RESERVED_RETURNS = ("trigger", "title", "note")


def triggers_block(value: Any, path: str, out: Collector) -> dict[str, TriggerDecl]:
    """Parse ``states.<s>.triggers``.

    Args:
        value: As written (``null`` declares nothing).
        path: ``states.<s>.triggers``.
        out: Where problems go.

    Returns:
        Trigger id → declaration, document order, for the ids whose declaration is well formed.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        out.error(path, "must be a mapping of trigger id to declaration (or null)")
        return {}
    decls: dict[str, TriggerDecl] = {}
    for trigger, decl in value.items():
        if not is_non_blank(trigger):
            out.error(path, f"a trigger id must be a non-empty string, not {trigger!r}")
            continue
        parsed = trigger_decl(decl, at(path, trigger), out)
        if parsed is not None:
            decls[trigger] = parsed
    return decls


def trigger_decl(value: Any, path: str, out: Collector) -> TriggerDecl | None:
    """Parse one declaration at ``states.<s>.triggers.<t>``; ``None`` when it has errors."""
    if value is None:
        return TriggerDecl.model_construct()
    if not isinstance(value, dict):
        out.error(path, "must be a mapping or null")
        return None
    before = len(out.errors)
    extra: dict[str, Any] = {}
    for key in value:
        if key in _FORBIDDEN:
            out.error(at(path, key), f"Unknown key '{key}'")
        elif key not in _KNOWN:
            out.warning(at(path, key), f"Unknown key '{key}'")
            extra[str(key)] = value[key]
    session = _path_key(value, "session", path, out)
    message: str | Literal[False] | None
    if value.get("message") is False:
        message = False
    else:
        message = _path_key(value, "message", path, out, allow_false=True)
    connection = optional_text(value, "connection", path, out, non_blank=True)
    description = optional_text(value, "description", path, out, non_blank=True)
    requires = signature(value.get("requires"), at(path, "requires"), out, returns=False)
    returns = signature(value.get("returns"), at(path, "returns"), out, returns=True)
    webhook = _webhook_signature(value.get("signature"), at(path, "signature"), out)
    mail_auth = optional_text(value, "mail_auth", path, out, non_blank=True)
    if mail_auth is not None and mail_auth not in _MAIL_POLICIES:
        out.error(at(path, "mail_auth"), f"must be one of {', '.join(_MAIL_POLICIES)}")
    first_mail = optional_text(value, "unauthenticated_first_mail", path, out, non_blank=True)
    if first_mail is not None and first_mail not in _FIRST_MAIL:
        out.error(at(path, "unauthenticated_first_mail"), f"must be one of {', '.join(_FIRST_MAIL)}")
    if len(out.errors) != before:
        return None
    return TriggerDecl.model_construct(
        session=session,
        message=message,
        connection=connection,
        description=description,
        requires=requires,
        returns=returns,
        signature=webhook,
        mail_auth=mail_auth,
        unauthenticated_first_mail=first_mail,
        extra=extra,
    )


_MAIL_POLICIES = ("dmarc_or_aligned_dkim", "dmarc", "aligned_dkim", "spf", "none")  # archmax.inbound.mail_auth.POLICIES
_FIRST_MAIL = ("quarantine", "refuse", "open")  # archmax.inbound.admission.FIRST_MAIL_CHOICES


def _webhook_signature(value: Any, path: str, out: Collector) -> WebhookSignature | None:
    """``signature: {secret, header?, timestamp_header?, delivery_header?, tolerance_s?}`` (issue 13 item 2)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        out.error(path, "must be a mapping with a 'secret' reference (ssm:<name> or secretsmanager:<name>)")
        return None
    before = len(out.errors)
    unknown_keys(value, _SIGNATURE_KEYS, path, out)
    secret = optional_text(value, "secret", path, out, non_blank=True)
    # Absent and ``secret: null`` alike: a signature without a secret verifies nothing.
    if value.get("secret") is None:
        out.error(at(path, "secret"), "is required: where the signing secret is (ssm:<name> or secretsmanager:<name>)")
    headers: dict[str, Any] = {}  # only the names given: model_construct fills the defaults of the rest
    for key in ("header", "timestamp_header", "delivery_header"):
        text = optional_text(value, key, path, out, non_blank=True)
        if text is not None and not _HEADER.fullmatch(text):
            out.error(at(path, key), "must be an HTTP header name (letters, digits and '-')")
        elif text is not None:
            headers[key] = text
    tolerance = value.get("tolerance_s", 300)
    if not isinstance(tolerance, int) or isinstance(tolerance, bool) or not 1 <= tolerance <= 3600:
        out.error(at(path, "tolerance_s"), "must be a whole number of seconds from 1 to 3600")
    if len(out.errors) != before or secret is None:  # a missing secret was reported above
        return None
    return WebhookSignature.model_construct(secret=secret, tolerance_s=tolerance, **headers)


def _path_key(value: dict[str, Any], key: str, path: str, out: Collector, *, allow_false: bool = False) -> str | None:
    """A dotted path read with the session-path parser (§4.3); the parser's message is kept."""
    raw = value.get(key)
    if raw is None:
        return None
    where = at(path, key)
    if not isinstance(raw, str):
        out.error(where, "must be a dotted path" + (" or false" if allow_false else ""))
        return None
    try:
        return parse_session_path(raw, where).text
    except InvalidSessionPathError as exc:
        out.error(where, str(exc))
        return None


def signature(value: Any, path: str, out: Collector, *, returns: bool) -> list[ReturnSpec]:
    """Parse a ``requires``/``returns`` list (§2.2).

    Entries are bare names or strict ``{name, type?, description?}`` mappings. Errors: a bad name,
    an unknown key, an unknown ``type``, a blank ``description``, a name listed twice, and
    (``returns`` only) the runtime's names ``trigger``, ``title`` and ``note``.

    Returns:
        The well-formed entries, in order.
    """
    if value is None:
        return []
    if not isinstance(value, list):
        out.error(path, "must be a list of variable names or {name, type?, description?} entries")
        return []
    entries: list[ReturnSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        entry_path = at(path, index)
        entry = _entry(item, entry_path, out)
        if entry is None:
            continue
        if entry.name in seen:
            out.error(entry_path, f"'{entry.name}' is listed twice")
            continue
        seen.add(entry.name)
        if returns and entry.name in _RESERVED_RETURNS:
            out.error(entry_path, f"'{entry.name}' cannot be a return: the runtime owns that name")
            continue
        entries.append(entry)
    return entries


def _entry(item: Any, path: str, out: Collector) -> ReturnSpec | None:
    if isinstance(item, str):
        return ReturnSpec.model_construct(name=item) if _name_ok(item, path, out) else None
    if not isinstance(item, dict):
        out.error(path, "must be a variable name or a {name, type?, description?} mapping")
        return None
    before = len(out.errors)
    unknown_keys(item, _ENTRY_KEYS, path, out)
    name = item.get("name")
    if name is None:
        out.error(at(path, "name"), "is required")
    elif not isinstance(name, str):
        out.error(at(path, "name"), "must be a variable name")
    else:
        _name_ok(name, at(path, "name"), out)
    type_ = item.get("type")
    if type_ is not None and type_ not in VALUE_TYPES:
        out.error(at(path, "type"), f"must be one of {'|'.join(VALUE_TYPES)}")
    if "description" in item and not is_non_blank(item["description"]):
        out.error(at(path, "description"), NON_BLANK)
    if len(out.errors) != before or not isinstance(name, str):  # a missing or odd name was reported above
        return None
    return ReturnSpec.model_construct(name=name, type=type_, description=item.get("description"))


def _name_ok(name: str, path: str, out: Collector) -> bool:
    if VARIABLE_NAME.fullmatch(name):
        return True
    out.error(path, f"'{name}' is not a variable name: names match ^[a-z][a-z0-9_]*$")
    return False
