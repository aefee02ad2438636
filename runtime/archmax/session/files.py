"""Files handed to a session: attachment names, free-name selection, text detection, seed paths.

Rule source: seed "Files handed to a session" (the naming table); BEHAVIOUR.md §9.5 (naming,
name checks, text versus binary) and §3.10 (``sessions.seed`` paths and value encoding). The
claim itself (a create-only write, retried on the next name) belongs to the caller; this module
only says which names to try.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import count
from typing import Any

from archmax.errors import InvalidFilePathError
from archmax.session.ids import RESERVED_FIRST_SEGMENTS
from archmax.stores.base import check_relative_path

ATTACHMENTS_DIR = "scratchpad/attachments"
SCRATCHPAD_DIR = "scratchpad"
MAX_NAME_BYTES = 255

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_attachment_name(name: Any, *, session_id: str | None = None) -> str:
    r"""Return an attachment file name unchanged, or raise (§9.5).

    Args:
        name: The file's own name (untrusted: a host's ``FileIn.name``, an email attachment's
            filename, a sub-workflow's file).
        session_id: The session, for the error's ``.session_id``.

    Returns:
        ``name``.

    Raises:
        InvalidFilePathError: the name is not a string, is empty, ``.`` or ``..``, contains
            ``/``, ``\`` or a control character, or exceeds 255 UTF-8 bytes.
    """
    if not isinstance(name, str):
        raise InvalidFilePathError(name, "a file name must be a string", session_id=session_id)
    if name in ("", ".", ".."):
        raise InvalidFilePathError(name, "a file name must not be empty, '.' or '..'", session_id=session_id)
    if "/" in name or "\\" in name:
        raise InvalidFilePathError(name, "a file name must not contain '/' or '\\'", session_id=session_id)
    if _CONTROL.search(name):
        raise InvalidFilePathError(name, "a file name must not contain control characters", session_id=session_id)
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidFilePathError(name, "a file name must be valid Unicode text", session_id=session_id) from None
    if size > MAX_NAME_BYTES:
        raise InvalidFilePathError(
            name,
            f"a file name must be at most {MAX_NAME_BYTES} UTF-8 bytes (this one has {size})",
            session_id=session_id,
        )
    return name


def attachment_path(name: str) -> str:
    """The session-relative path of a placed attachment: ``scratchpad/attachments/<name>``."""
    return f"{ATTACHMENTS_DIR}/{name}"


def split_extension(name: str) -> tuple[str, str]:
    """Split ``name`` at its last extension (§9.5).

    The extension runs from the last ``.`` to the end, unless that ``.`` is the first or the
    last character, in which case there is none.

    Returns:
        ``(stem, extension)``: ``("archive.tar", ".gz")``, ``("notes", "")``, ``(".env", "")``,
        ``("a.", "")``.
    """
    dot = name.rfind(".")
    if dot <= 0 or dot == len(name) - 1:
        return name, ""
    return name[:dot], name[dot:]


def candidate_names(name: str) -> Iterator[str]:
    """The names a placement tries, in order: ``name``, then ``-1``, ``-2``, ... before the last extension.

    Every name tried fits 255 UTF-8 bytes: near that limit the stem is cut to make room for ``-N``.
    Endless; the caller stops at the first free name or the first won claim (§9.5).

    Example:
        >>> from itertools import islice
        >>> list(islice(candidate_names("archive.tar.gz"), 3))
        ['archive.tar.gz', 'archive.tar-1.gz', 'archive.tar-2.gz']
    """
    yield name
    stem, extension = split_extension(name)
    for n in count(1):
        yield _fitted(stem, f"-{n}", extension, name)


def _fitted(stem: str, suffix: str, extension: str, name: str) -> str:
    """``stem + suffix + extension``, the stem cut (never mid-character) so it fits 255 UTF-8 bytes.

    A valid name of up to 255 bytes has ``-N`` forms that are longer than any file system allows; a
    placement must never fail on them after the session was claimed. When even an empty stem leaves
    no room, the extension gives up its role and the whole name is cut instead. Forms stay distinct:
    each ends in its own ``-N`` (before the extension).
    """
    room = MAX_NAME_BYTES - len(suffix.encode("utf-8")) - len(extension.encode("utf-8"))
    if room < 1:
        stem, extension = name, ""
        room = MAX_NAME_BYTES - len(suffix.encode("utf-8"))
    cut = stem.encode("utf-8")[:room].decode("utf-8", "ignore")
    return f"{cut}{suffix}{extension}"


def free_name(name: str, taken: set[str] | frozenset[str]) -> str:
    """The first candidate of ``name`` not in ``taken`` (lowest free number; case-sensitive) (§9.5).

    Args:
        name: A checked attachment name.
        taken: Names already present in ``scratchpad/attachments/``.

    Returns:
        ``report.pdf`` when free; with ``report.pdf`` and ``report-2.pdf`` taken, ``report-1.pdf``.
    """
    return next(candidate for candidate in candidate_names(name) if candidate not in taken)


def is_text(content: str | bytes | bytearray | memoryview) -> bool:
    """Whether content is text (§9.5): a ``str`` always; bytes that decode as UTF-8 and hold no NUL.

    Text is placed through any store; anything else is binary and needs ``upload_files``.

    Raises:
        TypeError: ``content`` is neither ``str`` nor bytes-like.
    """
    if isinstance(content, str):
        return True
    if not isinstance(content, (bytes, bytearray, memoryview)):
        raise TypeError(f"file content must be str or bytes, not {type(content).__name__}")
    raw = bytes(content)
    if b"\x00" in raw:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def check_seed_path(path: Any, *, session_id: str | None = None) -> str:
    """Return a ``sessions.seed`` path unchanged, or raise (§3.10).

    Allowed: a root-level session file (``notes.md``) or anything under ``scratchpad/``
    (``scratchpad/data/orders.json``). Refused: internal folders and store names
    (``checkpoints/``, ``artifacts/``, ``_specs``, ...), any other folder, ``..``, ``.``, empty
    segments, backslashes, control characters, absolute paths, segments over 255 bytes.

    Raises:
        InvalidFilePathError: naming the path and why.
    """
    check_relative_path(path, session_id=session_id)
    segments = path.split("/")
    for segment in segments:
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise InvalidFilePathError(
                path, f"a path segment must be at most {MAX_NAME_BYTES} UTF-8 bytes", session_id=session_id
            )
    if len(segments) == 1:
        if path in RESERVED_FIRST_SEGMENTS:
            raise InvalidFilePathError(path, f"'{path}' is reserved for the store", session_id=session_id)
        return path
    if segments[0] != SCRATCHPAD_DIR:
        raise InvalidFilePathError(
            path,
            f"seeded files go at the session's root or under 'scratchpad/'; '{segments[0]}/' is not writable",
            session_id=session_id,
        )
    return path


def encode_seed_value(value: Any) -> str | bytes:
    r"""What ``sessions.seed`` writes for one value (§3.10).

    Returns:
        A ``str`` verbatim; ``bytes`` (or bytearray) raw; anything else as
        ``json.dumps(value, indent=2) + "\n"``.

    Raises:
        TypeError: the value is not JSON-serialisable.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return json.dumps(value, indent=2) + "\n"
