"""Correct defaults for the optional members of the store port, for stores without the fast path.

Rule source: issue 23 "The port" (the memory and filesystem stores implement every capability or
declare its absence with a default that is correct). A store inherits :class:`StoreFallbacks` and
overrides what it does better; its ``capabilities`` say which members are fast paths.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from archmax.session.records import Checkpoint
from archmax.stores.base import (
    CORE_FLAGS,
    Capabilities,
    Capability,
    OldestPark,
    ReadGuards,
    SessionHead,
    StoreLocation,
)
from archmax.stores.common import oldest_park_of
from archmax.stores.outbox_files import FileOutboxState


class NoReadGuards:
    """The guards of a block that served nothing from memory: every read was real, nothing to check."""

    def __init__(self) -> None:
        self.versions: dict[str, int] = {}
        self.committed: set[str] = set()
        """Always empty: nothing was served from memory (``versions`` is empty)."""


class StoreFallbacks(FileOutboxState):
    """Default members of :class:`~archmax.stores.base.SessionStore` for a store lacking their capability.

    ``load``, ``head``, ``get``, ``seed`` and ``list_files`` are the subclass's; everything here is
    built on them. The outbox entry state (``outbox_claim`` ...) is kept as files in the session
    folder (:class:`~archmax.stores.outbox_files.FileOutboxState`) unless the store overrides it.
    """

    @property
    def location(self) -> StoreLocation:
        """Neither a folder nor a bucket (the memory store's sessions live in the process)."""
        return StoreLocation()

    """Neither a folder nor a bucket (override where the store has one)."""

    def load(self, session_id: str, *, reads: ReadGuards | None = None) -> Checkpoint | None:  # pragma: no cover
        """Defined by each store itself."""
        raise NotImplementedError

    def head(self, session_id: str, *, reads: ReadGuards | None = None) -> SessionHead | None:  # pragma: no cover
        """Defined by each store itself."""
        raise NotImplementedError

    def get(self, session_id: str, path: str) -> bytes | None:  # pragma: no cover - every store defines it
        """Defined by each store itself."""
        raise NotImplementedError

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:  # pragma: no cover
        """Defined by each store itself."""
        raise NotImplementedError

    def load_if(
        self, session_id: str, wanted: Callable[[SessionHead], bool], *, reads: ReadGuards | None = None
    ) -> tuple[SessionHead | None, Checkpoint | None]:
        """:meth:`head`, then :meth:`load` only when ``wanted(head)`` (two reads where the store needs them).

        ``reads`` is ignored: a store without ``GUARDED_READS`` serves nothing from memory.
        """
        head = self.head(session_id)
        if head is None or not wanted(head):
            return head, None
        return head, self.load(session_id)

    def list(self) -> builtins.list[str]:  # pragma: no cover - every store defines it
        """Defined by each store itself."""
        raise NotImplementedError

    def oldest_park(self, workflow: str) -> OldestPark | None:
        """The workflow's oldest park from every session's head: :meth:`list`, then :meth:`head` of each.

        Correct on any store with ``list``, and a read per session: a store with an index overrides
        it (BEHAVIOUR.md §5.11). Raises what :meth:`list` raises without the ``list`` capability.
        """
        heads = (self.head(session_id) for session_id in self.list())
        return oldest_park_of((h for h in heads if h is not None), workflow)

    def append_text(self, session_id: str, path: str, text: str) -> None:
        """Append by rewriting: read the file, write it back longer (no ``APPEND_TEXT``)."""
        before = self.get(session_id, path)
        self.seed(session_id, {path: (before or b"").decode("utf-8") + text})

    def note_held_mail(self, session_id: str, delivery_id: str, *, held: bool) -> None:
        """No hint is kept (no ``HELD_MAIL_HINT``): the quarantine folder is the only truth."""

    def held_mail_hint(self, session_id: str, version: int) -> frozenset[str] | None:
        """Always unknown (no ``HELD_MAIL_HINT``): the caller lists the quarantine folder."""
        return None

    @contextmanager
    def guarded_reads(self, *, only: str | None = None, once: bool = False) -> Iterator[ReadGuards]:
        """A block that serves nothing from memory (no ``GUARDED_READS``): every read is real."""
        yield NoReadGuards()

    def prime(self, session_id: str, item: dict[str, Any] | None) -> None:
        """Nothing is remembered between reads, so nothing to prime."""


LOCAL_ABSENCES: dict[Capability, str] = {
    Capability.GUARDED_READS: "every read is real (a local read is cheap): nothing is served from memory",
    Capability.HELD_MAIL_HINT: "no hint is kept: a summary lists the quarantine folder",
    Capability.ARTIFACTS_ON_READ: "artifacts are files the engine writes at the end of each operation",
    Capability.OUTBOX_STREAM: "no change stream: the outbox is sent in process after the commit",
}
"""Why a local store (memory, filesystem, a backend store) lacks the AWS fast paths."""


def local_capabilities(switches: Iterable[Capability | str] | None, *always: Capability) -> Capabilities:
    """A local store's declared set: ``switches`` (default ``LIST``, ``DELETE``, ``UPLOAD_FILES``) plus ``always``."""
    on = {Capability(c) for c in (CORE_FLAGS if switches is None else switches)} | set(always)
    reasons = {
        **{c: "switched off when this store was built" for c in CORE_FLAGS},
        Capability.APPEND_TEXT: "files are rewritten whole (a read, then a write)",
        **LOCAL_ABSENCES,
    }
    return Capabilities(on, reasons={c: why for c, why in reasons.items() if c not in on})
