"""Reads a warm ``AwsStore`` answers from memory, each checked by the write that acts on them (issue 10).

Rule source: issue 10 (reads answered from memory), issue 24 (the operation's claim is the read:
engine/remembered.py); the port's ``Capability.GUARDED_READS`` (:mod:`archmax.stores.base`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archmax.stores.aws.state import AwsState


class GuardedReads:
    """Session reads a warm store answered from memory, each to be checked by the write that acts on them.

    Inside :meth:`AwsStore.guarded_reads` (``Capability.GUARDED_READS``), ``load``/``head``/``load_if`` make no call: they answer
    from the version this store instance last read or committed (a session it never saw reads as
    absent) and note that version here. The operation's claim, a commit conditional on the version
    read, then lands only if the session is still at that version: as if it had been read in the
    same call (issue 10; issue 24, engine/remembered.py).
    """

    def __init__(self, store: AwsState, *, only: str | None = None, once: bool = False) -> None:
        self.store = store
        self.only = only
        self.once = once
        self._asked: set[str] = set()
        self.versions: dict[str, int] = {}
        """Session id -> the version read (0: read as absent)."""
        self.committed: set[str] = set()
        """Session ids a commit of this store wrote (or may have) inside the block (``ReadGuards.committed``)."""

    def serves(self, session_id: str) -> bool:
        """Whether this read of ``session_id`` is answered from memory.

        With ``only``, reads of other sessions are real; with ``once``, only the first read of the
        session is (what the operation acts on: its claim is conditional on that version, and every
        later read, e.g. after a lost claim, must see the table). Without ``once`` every session is
        served, a session this store never saw as absent; with ``once``, only a session this store
        holds a version of, or was told is absent (:meth:`AwsStore.prime` with no item).
        """
        if self.only is not None and session_id != self.only:
            return False
        if not self.once:
            return True
        if session_id in self._asked:
            return False
        self._asked.add(session_id)
        with self.store._lock:
            return session_id in self.store._plans or session_id in self.store._absent

    def item(self, session_id: str) -> dict[str, Any] | None:
        """The session item as this store instance last saw it, or ``None`` (noted as absent)."""
        with self.store._lock:
            plan = self.store._plans.get(session_id)
        self.versions[session_id] = plan.version if plan is not None else 0
        if plan is None:
            return None
        return {
            **plan.attrs,
            "pk": {"S": session_id},
            "base": {"N": str(plan.base)},
            "chunks": {"L": list(plan.entries)},
        }


_GUARDED: ContextVar[GuardedReads | None] = ContextVar("archmax_guarded_reads", default=None)


def note_commit(store: AwsState, session_id: str) -> None:
    """A commit of ``store`` wrote ``session_id`` (or may have): the enclosing block of ``store`` notes it."""
    guards = _GUARDED.get()
    if guards is not None and guards.store is store:
        guards.committed.add(session_id)
