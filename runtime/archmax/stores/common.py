"""Rules every store applies the same way: record/lease checks on commit, file paths, due parks, stale turns.

Rule source: BEHAVIOUR.md §9.1 (protocol), §9.2 (layout), §3.12 (lease owner on commit),
§11 ``sweep`` (due order). Store-agnostic: the memory, filesystem and AWS stores share it, so
the conformance suite sees one behaviour.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, TypeVar

from archmax.errors import CommitConflictError, InvalidFilePathError, SessionIdMismatchError, StoreError
from archmax.session.records import PARKED_STATUSES, Checkpoint, SessionStatus
from archmax.stores.base import DuePark, OldestPark, SessionHead, check_relative_path

CHECKPOINTS = "checkpoints"
"""The folder holding checkpoint chunks; file methods refuse paths inside it (§9.2)."""

_SPEC_HASH = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


_Found = TypeVar("_Found", Checkpoint | None, SessionHead | None)


def same_session(session_id: str, found: _Found) -> _Found:
    """``found`` (a loaded record or head, or ``None``) if it belongs to ``session_id``, else raise.

    Every store's ``load`` and ``head`` pass their answer through here (issue 13 item 4): a folder a
    case-insensitive disk shares between ``order-1`` and ``Order-1``, or a corrupted item, must
    never hand one session another's record.

    Raises:
        SessionIdMismatchError: the stored ``session_id`` differs from the one asked for.
    """
    if found is not None and found.session_id != session_id:
        raise SessionIdMismatchError(session_id, found.session_id)
    return found


def check_record_fits(session_id: str, record: Checkpoint, expected_version: int) -> None:
    """Refuse a record that cannot be version ``expected_version + 1`` of ``session_id``.

    Raises:
        StoreError: the record names another session, ``expected_version`` is negative, or
            ``record.version != expected_version + 1`` (a caller bug, not a conflict).
    """
    if record.session_id != session_id:
        raise StoreError(
            f"record for session '{record.session_id}' committed to session '{session_id}'",
            session_id=session_id,
        )
    if expected_version < 0 or record.version != expected_version + 1:
        raise StoreError(
            f"record version {record.version} cannot follow expected version {expected_version}",
            session_id=session_id,
        )


def check_lease_owner(session_id: str, expected_version: int, stored: SessionHead | None, owner: str) -> None:
    """Refuse a commit whose writer no longer holds the lease (§3.12).

    Args:
        session_id: The session.
        expected_version: The version the writer read (carried in the error).
        stored: The head of the latest stored version, or ``None`` when there is none.
        owner: The lease owner the writer claims to be.

    Raises:
        CommitConflictError: no stored record, no stored lease, or a lease held by another owner.
    """
    if stored is None:
        raise CommitConflictError(session_id, expected_version, f"no record holding a lease for {owner!r}")
    if stored.lease is None:
        raise CommitConflictError(session_id, expected_version, f"no lease (expected owner {owner!r})")
    if stored.lease.owner != owner:
        raise CommitConflictError(session_id, expected_version, f"lease owner {stored.lease.owner!r}")


def due_parks_of(heads: Iterable[SessionHead], now: str, workflow: str | None) -> list[DuePark]:
    """The due input parks among ``heads``: ``resume_at <= now``, by ``resume_at`` then id (§11 ``sweep``)."""
    due = [
        DuePark(h.session_id, h.resume_at, h.version)
        for h in heads
        if h.status in (SessionStatus.AWAITING_INPUT, SessionStatus.AWAITING_DECISION)  # deadlines too (§5.11)
        and h.resume_at is not None
        and h.resume_at <= now
        and (workflow is None or h.workflow == workflow)
    ]
    return sorted(due, key=lambda park: (park.resume_at, park.session_id))


def oldest_park_of(heads: Iterable[SessionHead], workflow: str) -> OldestPark | None:
    """The park made longest ago among ``heads`` of ``workflow`` (ties: the lowest id), or ``None`` (§5.11)."""
    parks = [
        (h.parked_at, h.session_id)
        for h in heads
        if h.status in PARKED_STATUSES and h.parked_at is not None and h.workflow == workflow
    ]
    if not parks:
        return None
    parked_at, session_id = min(parks)
    return OldestPark(session_id, parked_at)


def due_of(heads: Iterable[SessionHead], now: str, workflow: str | None) -> list[tuple[str, str]]:
    """``(session_id, resume_at)`` of :func:`due_parks_of`."""
    return due_pairs(due_parks_of(heads, now, workflow))


def due_pairs(parks: Iterable[DuePark]) -> list[tuple[str, str]]:
    """What ``SessionStore.due`` answers for the parks ``due_parks`` found: ``(session_id, resume_at)``."""
    return [(park.session_id, park.resume_at) for park in parks]


def stale_of(heads: Iterable[SessionHead], now: str, workflow: str | None) -> list[str]:
    """Ids of the stale turns among ``heads``, sorted (DESIGN.md §3 "Inbox": expired leases).

    A head is stale when its status is ``running`` and its lease expired (``expires_at <= now``);
    a ``running`` head with no lease (let go after a crash, §3.12) counts as expired at its
    ``updated_at``. The AWS store's ``stale-leases`` index keys on the same instant.

    Args:
        heads: Session heads to look through.
        now: An instant string; string order is time order.
        workflow: Only sessions of this workflow, when given.
    """
    return sorted(
        h.session_id
        for h in heads
        if h.status == SessionStatus.RUNNING
        and (h.lease.expires_at if h.lease is not None else h.updated_at) <= now
        and (workflow is None or h.workflow == workflow)
    )


def check_file_path(path: object, session_id: str) -> str:
    """A safe session-relative file path (``check_relative_path``) that is not inside ``checkpoints/``.

    Raises:
        InvalidFilePathError: for an unsafe path or one inside the checkpoints folder.
    """
    path = check_relative_path(path, session_id=session_id)
    if path.split("/", 1)[0] == CHECKPOINTS:
        raise InvalidFilePathError(path, "'checkpoints/' belongs to the store", session_id=session_id)
    return path


def check_prefix(prefix: object, session_id: str) -> str:
    """A ``list_files`` prefix as a folder path without trailing ``/`` (``""`` for the whole folder).

    Raises:
        InvalidFilePathError: for an unsafe prefix.
    """
    if prefix == "":
        return ""
    if not isinstance(prefix, str):
        raise InvalidFilePathError(prefix, "a prefix must be a string", session_id=session_id)
    return check_file_path(prefix.removesuffix("/"), session_id)


def is_under(path: str, folder: str) -> bool:
    """Whether ``path`` lies inside ``folder`` (every path is inside ``""``)."""
    return folder == "" or path.startswith(folder + "/")


def is_folder_of(path: str, paths: Iterable[str]) -> bool:
    """Whether ``path`` is a folder holding one of ``paths`` (a create-only write there must fail)."""
    return any(p.startswith(path + "/") for p in paths)


def encode_texts(session_id: str, files: dict[str, str]) -> dict[str, bytes]:
    """Check every path and encode every text as UTF-8, before anything is written.

    Raises:
        InvalidFilePathError: for an unsafe path.
        TypeError: for a value that is not ``str`` (bytes go through ``upload_files``).
    """
    out: dict[str, bytes] = {}
    for path, text in files.items():
        path = check_file_path(path, session_id)
        if not isinstance(text, str):
            raise TypeError(f"seed takes text; {path!r} holds {type(text).__name__} (use upload_files for bytes)")
        out[path] = text.encode("utf-8")
    return out


def check_bytes(session_id: str, files: dict[str, bytes]) -> dict[str, bytes]:
    """Check every path and value of an ``upload_files`` call, before anything is written.

    Raises:
        InvalidFilePathError: for an unsafe path.
        TypeError: for a value that is not bytes-like.
    """
    out: dict[str, bytes] = {}
    for path, data in files.items():
        path = check_file_path(path, session_id)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"upload_files takes bytes; {path!r} holds {type(data).__name__}")
        out[path] = bytes(data)
    return out


def check_spec_hash(spec_hash: object) -> str:
    """A spec hash that is safe as a file name or key (``[A-Za-z0-9_-]{1,128}``; real ones are 32 hex).

    Raises:
        InvalidFilePathError: otherwise.
    """
    if not isinstance(spec_hash, str) or not _SPEC_HASH.match(spec_hash):
        raise InvalidFilePathError(spec_hash, "a spec hash must match [A-Za-z0-9_-]{1,128}")
    return spec_hash


def spec_bytes(doc: dict[str, Any]) -> bytes:
    """A spec snapshot as pretty UTF-8 JSON (§9.4), ending in a newline."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def outbox_mark(record: Checkpoint) -> int | None:
    """The version a commit of ``record`` marks its session's outbox pending at, or ``None`` (issue 20 item 2).

    A commit marks the session when it records outbox entries (entries of its own version); one
    that records none leaves any earlier mark as it is.
    """
    return record.version if any(entry.version == record.version for entry in record.outbox) else None
