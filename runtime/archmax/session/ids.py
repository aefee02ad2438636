"""Session ids: validation, minting and the store folder name.

Rule source: BEHAVIOUR.md §4.1 (validity, minted ids, child ids) and §9.2 (folder names).
Every entry point parses an id once with :func:`parse_session_id` into a :class:`SessionId`, the
type the engine trusts without checking again; stores still call :func:`validate_session_id`
before an id becomes a path or key.
"""

from __future__ import annotations

import hashlib
import re
import uuid

from archmax.errors import InvalidDeliveryIdError, InvalidSessionIdError

RESERVED_FIRST_SEGMENTS = frozenset(
    {"_specs", "checkpoints", "artifacts", "scratchpad", "large_tool_results", "conversation_history"}
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CHILD_SUFFIX = re.compile(r"^[^~:]+:[^~:]+:\d+$")
MAX_ID_BYTES = 512
MAX_DELIVERY_ID_BYTES = 512
MAX_FOLDER_BYTES = 200
FOLDER_PREFIX_BYTES = 160


class SessionId(str):
    """A session id that passed §4.1: made only by :func:`parse_session_id` (and minting), trusted inside.

    An ordinary ``str`` everywhere else (equality, hashing, JSON); only its type says it was checked.
    """

    __slots__ = ()


def parse_session_id(session_id: object) -> SessionId:
    """Check an untrusted id once at the edge and return it as a :class:`SessionId` (§4.1).

    Raises:
        InvalidSessionIdError: naming ``repr(id)`` and the rule broken.
    """
    if type(session_id) is SessionId:
        return session_id
    return SessionId(validate_session_id(session_id))


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` unchanged if it is valid, else raise.

    Args:
        session_id: The candidate id (untrusted input). Ids are never trimmed or normalised.

    Returns:
        The same string.

    Raises:
        InvalidSessionIdError: naming ``repr(id)`` and the rule broken (§4.1).
    """
    if not isinstance(session_id, str):
        raise InvalidSessionIdError(session_id, "a session id must be a string")
    if not session_id.strip():
        raise InvalidSessionIdError(session_id, "a session id must not be empty or whitespace only")
    if len(session_id.encode("utf-8", "surrogatepass")) > MAX_ID_BYTES:
        raise InvalidSessionIdError(session_id, f"a session id must encode as UTF-8 in at most {MAX_ID_BYTES} bytes")
    if _CONTROL.search(session_id):
        raise InvalidSessionIdError(session_id, "a session id must not contain NUL or control characters")
    segments = re.split(r"[/\\]", session_id)
    if any(seg == ".." for seg in segments):
        raise InvalidSessionIdError(session_id, "no '/'- or '\\'-separated segment may be '..'")
    if segments[0] in RESERVED_FIRST_SEGMENTS:
        raise InvalidSessionIdError(session_id, f"the first segment '{segments[0]}' is a reserved store name")
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidSessionIdError(session_id, "a session id must be valid Unicode text") from None
    return session_id


def mint_session_id() -> SessionId:
    """A fresh id: ``session-`` + a lowercase hyphenated uuid4 (§4.1)."""
    return SessionId(f"session-{uuid.uuid4()}")


def parent_session_id(session_id: str) -> str | None:
    """The parent of a child id ``<parent>~<state>:<workflow>:<n>``, or None (§4.1).

    ``None`` too when the part before ``~`` is not itself a valid session id (a reserved first
    segment, say): such an id names no child, only itself.
    """
    head, sep, tail = session_id.rpartition("~")
    if not (sep and head and _CHILD_SUFFIX.match(tail)):
        return None
    try:
        validate_session_id(head)
    except InvalidSessionIdError:
        return None
    return head


def folder_name(session_id: str) -> str:
    r"""The store folder (or key prefix) for a valid id (§9.2).

    ``%``→``%25``, ``/``→``%2F``, ``\``→``%5C``, a leading ``.``→``%2E``; a name over 200 UTF-8
    bytes becomes its longest prefix of at most 160 bytes (no split character or escape), then
    ``%%``, then the first 32 hex characters of sha256(id).

    Raises:
        InvalidSessionIdError: if the id is invalid.
    """
    validate_session_id(session_id)
    pieces: list[str] = []
    for i, ch in enumerate(session_id):
        if ch == "%":
            pieces.append("%25")
        elif ch == "/":
            pieces.append("%2F")
        elif ch == "\\":
            pieces.append("%5C")
        elif ch == "." and i == 0:
            pieces.append("%2E")
        else:
            pieces.append(ch)
    name = "".join(pieces)
    if len(name.encode("utf-8")) <= MAX_FOLDER_BYTES:
        return name
    prefix, size = [], 0
    for piece in pieces:
        n = len(piece.encode("utf-8"))
        if size + n > FOLDER_PREFIX_BYTES:
            break
        prefix.append(piece)
        size += n
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
    return "".join(prefix) + "%%" + digest


_PORTABLE = re.compile(r"^[a-z0-9_-][a-z0-9._-]*$")
_WINDOWS_DEVICES = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$")
PORTABLE_PREFIX_CHARS = 64


def portable_folder_name(session_id: str) -> str:
    r"""The filesystem store's folder for a valid id: distinct for distinct ids on every common filesystem.

    §9.2's :func:`folder_name` is exact on a case-sensitive POSIX filesystem, but macOS (APFS/HFS+)
    and Windows (NTFS) fold case by default, APFS also folds Unicode normalisation, and Windows
    reads ``C:x`` as drive-qualified and ``CON``/``nul.txt`` as devices. So (issue 13 item 4):

    * an id that is safe everywhere is its own folder, exactly as §9.2 says: lowercase ASCII
      letters, digits, ``_``, ``-`` and ``.`` (not first, not last), not a Windows device name
      (``con``, ``nul.txt``, ``com1``...), at most 200 bytes (minted ids and ``order-1`` qualify);
    * any other id becomes ``<prefix>%%<first 32 hex of sha256(id)>``, where ``<prefix>`` is the
      id lowercased with every character outside ``a-z0-9_-`` turned into ``_``, cut to 64
      characters (readable only; the digest is what tells ids apart). ``Order-1`` becomes
      ``order-1%%<hex>``, ``C:evil`` becomes ``c_evil%%<hex>``.

    Both forms are plain lowercase ASCII, the first has no ``%`` and the second always has ``%%``,
    so two distinct ids never get names that fold (case or normalisation) to the same name.

    Raises:
        InvalidSessionIdError: if the id is invalid.
    """
    validate_session_id(session_id)
    if (
        _PORTABLE.fullmatch(session_id)
        and not session_id.endswith(".")
        and not _WINDOWS_DEVICES.fullmatch(session_id.split(".")[0])
        and len(session_id) <= MAX_FOLDER_BYTES
    ):
        return session_id
    prefix = "".join(c if c in _PREFIX_KEEP else "_" for c in session_id.lower()[:PORTABLE_PREFIX_CHARS])
    return prefix + "%%" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


_PREFIX_KEEP = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def validate_delivery_id(delivery_id: object, *, session_id: str | None = None) -> str:
    """Return an untrusted delivery id unchanged if it can be recorded and keyed, else raise.

    A delivery id (SES message id, ``Idempotency-Key`` header, EventBridge event id) is a non-blank
    string of at most 512 UTF-8 bytes with no control character. The engine records it in the
    checkpoint and the inbox keys items by it, so both check it with this one function.

    Raises:
        InvalidDeliveryIdError: naming the rule broken, before anything is read or written.
    """
    if not isinstance(delivery_id, str) or not delivery_id.strip():
        raise InvalidDeliveryIdError(delivery_id, "a delivery id must be a non-blank string", session_id=session_id)
    try:
        size = len(delivery_id.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidDeliveryIdError(
            delivery_id, "a delivery id must be valid Unicode text", session_id=session_id
        ) from None
    if size > MAX_DELIVERY_ID_BYTES:
        raise InvalidDeliveryIdError(
            delivery_id, f"a delivery id must encode in at most {MAX_DELIVERY_ID_BYTES} bytes", session_id=session_id
        )
    if _CONTROL.search(delivery_id):
        raise InvalidDeliveryIdError(
            delivery_id, "a delivery id must not contain control characters", session_id=session_id
        )
    return delivery_id
