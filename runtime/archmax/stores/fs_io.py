"""The filesystem store's file primitives: durable writes, the session lock, I/O errors, the head cache.

Rule source: DESIGN.md §3 ("a file lock for the filesystem store, so two processes on one machine
are safe too"); used only by :mod:`archmax.stores.filesystem`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archmax.errors import StoreError
from archmax.stores.codec import chunk_counts, head_of_chunk

if TYPE_CHECKING:
    from filelock import FileLock


def head_doc(chunk: dict[str, Any]) -> dict[str, Any]:
    """What ``head.json`` holds: the version, its chunk base and counts, and the head."""
    message_count, trail_count = chunk_counts(chunk)
    return {
        "version": chunk["version"],
        "base": chunk["base"],
        "message_count": message_count,
        "trail_count": trail_count,
        "head": head_of_chunk(chunk).model_dump(mode="json"),
    }


def scan_latest(checkpoints: Path) -> int:
    """The highest ``<n>.json`` in ``checkpoints/`` (0 when none): used only without a ``head.json``."""
    try:
        names = os.listdir(checkpoints)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    versions = [int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()]
    return max(versions, default=0)


def write_file(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` (flushed to disk with ``fsync``)."""
    with open(path, "wb") as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())


LOCK_POLL_S = 0.002
"""Seconds between attempts to take a session's file lock (a commit holds it for about a millisecond)."""


@contextlib.contextmanager
def acquired(lock: FileLock, session_id: str) -> Iterator[None]:
    """Hold the session's file lock inside the block; a timeout or lock failure is a ``StoreError``."""
    from filelock import Timeout

    try:
        # filelock polls every 50 ms by default: far longer than a commit holds the lock here
        lock.acquire(poll_interval=LOCK_POLL_S)
    except Timeout as exc:
        raise StoreError(f"session '{session_id}' stayed locked by another writer", session_id=session_id) from exc
    except OSError as exc:
        raise StoreError(f"cannot lock session '{session_id}': {exc}", session_id=session_id) from exc
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def io_errors(session_id: str | None) -> Iterator[None]:
    """Turn an ``OSError`` into ``StoreError`` (foreign errors stop at the store).

    Callers that give ``FileExistsError`` or ``FileNotFoundError`` a meaning catch it inside the block.
    """
    try:
        yield
    except OSError as exc:
        raise StoreError(f"session store I/O failed: {exc}", session_id=session_id) from exc
