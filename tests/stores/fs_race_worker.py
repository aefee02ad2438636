"""A commit run in a separate process, for the two-process FilesystemStore race.

Imported as a top-level module (its folder is put on ``sys.path`` by the test) so that a
``spawn``-ed child can import it whatever pytest's import mode is.
"""

from __future__ import annotations

from archmax.errors import CommitConflictError
from archmax.session.records import Checkpoint, Message
from archmax.stores.filesystem import FilesystemStore


def record_of(session_id: str, i: int) -> Checkpoint:
    """The version-1 record contender ``i`` commits: ``i + 1`` messages, so the winner is recognisable."""
    return Checkpoint(
        session_id=session_id,
        version=1,
        workflow="support-inbox",
        messages=[Message(role="user", content=f"contender {i}, message {k}") for k in range(i + 1)],
        created_at="2025-01-01T00:00:00.000Z",
        updated_at="2025-01-01T00:00:00.000Z",
    )


def commit_once(root: str, session_id: str, i: int, barrier, results) -> None:
    """Wait for every contender, commit version 1, report ``(i, "won" | "conflict")``."""
    store = FilesystemStore(root)
    record = record_of(session_id, i)
    barrier.wait()
    try:
        store.commit(session_id, record, 0)
        results.put((i, "won"))
    except CommitConflictError:
        results.put((i, "conflict"))
