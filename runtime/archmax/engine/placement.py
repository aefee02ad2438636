"""Placing host files into a session's ``scratchpad/attachments/``.

Rule source: seed "Files handed to a session"; BEHAVIOUR.md §9.5; issue 9 item 7. Every file of a
firing is checked before any is stored, so a refusal stores none. Each placement claims its name
with a create-only write and tries the next number when it loses; placements into one session are
serialized in-process by a lock (and across processes by the create-only claim). The engine places
a firing's files before the commit that claims the session, and that commit carries their variables;
a placement or claim that fails removes the files it created.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from archmax.errors import InvalidFilePathError, PathExistsError, SessionStoreCapabilityError
from archmax.session.files import (
    ATTACHMENTS_DIR,
    attachment_path,
    candidate_names,
    check_attachment_name,
    is_text,
)
from archmax.session.firing import FileIn
from archmax.stores.base import Capability, SessionStore

# Re-entrant: a placement that runs inside another's store write on the same thread (a host hook, the
# reliability suite's interleavings) waits for nothing it holds itself; create-only writes keep the
# names apart, the lock only spares needless collisions between threads.
_locks: dict[str, threading.RLock] = defaultdict(threading.RLock)
_locks_guard = threading.Lock()


@dataclass(frozen=True)
class PreparedFile:
    """A validated file waiting to be placed."""

    variable: str
    name: str
    content: str | bytes
    text: bool


def _as_file(variable: str, value: Any, session_id: str) -> FileIn:
    if isinstance(value, FileIn):
        return value
    if isinstance(value, Mapping) and "name" in value and "content" in value:
        return FileIn(name=value["name"], content=value["content"])
    if isinstance(value, tuple) and len(value) == 2:
        return FileIn(name=value[0], content=value[1])
    raise InvalidFilePathError(variable, "a file must be {name, content}", session_id=session_id)


def prepare_files(store: SessionStore, session_id: str, files: Mapping[str, Any] | None) -> list[PreparedFile]:
    """Check every file of a firing before anything is stored.

    Args:
        store: The session's store; its ``upload_files`` capability decides whether binary content is allowed.
        session_id: The session the files are for, named in errors.
        files: variable name → ``FileIn`` | ``{name, content}`` | ``(name, content)``; content is ``str`` or ``bytes``.

    Returns:
        One :class:`PreparedFile` per entry, in order, with its checked name and whether it is text (§9.5).

    Raises:
        InvalidFilePathError: a bad name, or a value that is not a file (§9.5).
        UnicodeEncodeError: a ``str`` content holding a lone surrogate (it has no UTF-8 form).
        SessionStoreCapabilityError: binary content through a store without ``upload_files``; names the path.
    """
    prepared = []
    for variable, value in (files or {}).items():
        file = _as_file(variable, value, session_id)
        name = check_attachment_name(file.name, session_id=session_id)
        if isinstance(file.content, str):
            file.content.encode("utf-8")  # UnicodeEncodeError now, not after the session is claimed
        text = is_text(file.content)
        if not text and Capability.UPLOAD_FILES not in store.capabilities:
            raise SessionStoreCapabilityError("upload_files", attachment_path(name), session_id=session_id)
        prepared.append(PreparedFile(variable, name, file.content, text))
    return prepared


@dataclass(frozen=True)
class Placement:
    """Where a firing's files went: ``paths`` (variable → placed path) and what this call ``created``."""

    paths: dict[str, str]
    created: tuple[str, ...] = ()


def place_files(
    store: SessionStore, session_id: str, prepared: list[PreparedFile], *, redriven: bool = False
) -> dict[str, str]:
    """Place prepared files, never overwriting; returns variable → ``scratchpad/attachments/<placed name>``.

    :func:`place_firing_files` without the list of created paths (sub-workflow file returns use it).
    """
    return place_firing_files(store, session_id, prepared, reuse=redriven).paths


def place_firing_files(
    store: SessionStore, session_id: str, prepared: list[PreparedFile], *, reuse: bool = False
) -> Placement:
    """Place a firing's files, never overwriting; all of them, or (on a failure) none this call wrote.

    The engine places a firing's files before the commit that claims the session, and that commit
    carries their variables (issue 9: a firing's files are part of the firing). A claim that then
    loses gives the created paths to :func:`discard_files`.

    Args:
        store: The session's store.
        session_id: The session.
        prepared: The firing's files (:func:`prepare_files`).
        reuse: The firing carries a delivery id, so it may be the same event applied again after an
            attempt that placed its files and died before its claim (or a put whose answer was lost).
            A candidate name already holding exactly a file's bytes is then taken as that file and
            not copied, so a retried firing leaves no orphans. Two distinct firings with ids that hand
            a session the same name and the same bytes share one file (the bytes each variable names
            are the bytes its firing sent). Without a delivery id a firing is a new event: it never reuses.

    Returns:
        :class:`Placement`: variable → ``scratchpad/attachments/<placed name>``, and the paths this
        call created (reused files are not in it).

    Raises:
        StoreError: a write failed; the files this call created are discarded first (best-effort),
            so the session is left as it was, and a retry of the firing finds any that survived.
    """
    if not prepared:
        return Placement({})
    with _locks_guard:
        lock = _locks[session_id]
    placed: dict[str, str] = {}
    created: list[str] = []
    with lock:
        try:
            taken = {p.rsplit("/", 1)[-1] for p in store.list_files(session_id, ATTACHMENTS_DIR + "/")}
            used: set[str] = set()  # names this call placed or reused: two files of a firing never share one
            for item in prepared:
                data = item.content.encode("utf-8") if isinstance(item.content, str) else bytes(item.content)
                for candidate in candidate_names(item.name):
                    if candidate in used:
                        continue
                    path = attachment_path(candidate)
                    if candidate in taken or not _create(store, session_id, path, item, data):
                        taken.add(candidate)
                        if not (reuse and store.get(session_id, path) == data):
                            continue  # another placement holds this name: take the next number
                    else:
                        created.append(path)
                    used.add(candidate)
                    placed[item.variable] = path
                    break
        except Exception:
            discard_files(store, session_id, created)
            raise
    return Placement(placed, tuple(created))


def discard_files(store: SessionStore, session_id: str, paths: list[str] | tuple[str, ...]) -> None:
    """Best-effort removal of files a firing created before its claim failed (they are create-only and ours).

    Uses the store's ``remove_files`` (§9.1 protocol); a removal that fails leaves them: an orphan is
    never named by a variable, and a retry of the same firing (same delivery id) reuses it
    (:func:`place_firing_files` ``reuse``).
    """
    if not paths:
        return
    try:
        store.remove_files(session_id, list(paths))
    except Exception:  # noqa: BLE001 - best-effort: the caller re-raises the error that made it discard
        pass


def _create(store: SessionStore, session_id: str, path: str, item: PreparedFile, data: bytes) -> bool:
    """Write one file create-only; False when the path exists already."""
    try:
        if item.text:
            store.seed(session_id, {path: data.decode("utf-8")}, create_only=True)
        else:
            store.upload_files(session_id, {path: data}, create_only=True)
    except PathExistsError:
        return False
    return True


def session_file_exists(store: SessionStore, session_id: str, path: str) -> bool:
    """Whether ``path`` names a file of the session (a ``file``-typed value, evidence; §2.2, §5.1).

    An unsafe path names no file (False); a store outage raises, so it is never mistaken for absence.
    """
    try:
        return store.get(session_id, path) is not None
    except InvalidFilePathError:
        return False
