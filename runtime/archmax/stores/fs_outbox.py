"""The filesystem store's outbox marks: which sessions hold entries not all sent (issue 20 item 2).

A commit that records outbox entries writes ``<root>/.outbox/<folder>/<version>.json``; the sender
removes the marks of the version it settled (a later commit's mark stays). The sweep lists only
``.outbox/``, so sessions with nothing to send are never read.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
from pathlib import Path

from archmax.session.records import Checkpoint
from archmax.stores import common as _common
from archmax.stores.fs_io import io_errors


class FsOutboxMarks:
    """Outbox-mark members of :class:`~archmax.stores.filesystem.FilesystemStore` (its ``root``, ``_folder``, ``_replace``)."""

    root: Path

    def _folder(self, session_id: str) -> Path:
        raise NotImplementedError

    def _replace(self, target: Path, data: bytes) -> None:
        raise NotImplementedError

    def outbox_pending(self, workflow: str | None = None) -> builtins.list[str]:
        """Ids of sessions with an outbox mark (entries a commit recorded, not all sent yet), sorted.

        Lists ``.outbox/`` alone: sessions with nothing to send are never read (issue 20 item 2).

        Raises:
            StoreError: on I/O failure.
        """
        found: set[str] = set()
        root = self.root / ".outbox"
        with io_errors(None):
            folders = sorted(os.scandir(root), key=lambda e: e.name) if root.is_dir() else []
            for folder in folders:
                marks = sorted(Path(folder.path).glob("*.json"))
                if not marks:
                    continue
                with contextlib.suppress(OSError, ValueError):
                    doc = json.loads(marks[-1].read_bytes())
                    if workflow is None or doc.get("workflow") == workflow:
                        found.add(doc["session_id"])
        return sorted(found)

    def outbox_settled(self, session_id: str, version: int, *, created_at: str | None = None) -> None:
        """Remove the session's outbox marks of ``version`` and before (a later commit's mark stays).

        ``created_at``: see the port (these marks go with ``delete``).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on I/O failure.
        """
        marks = self.root / ".outbox" / self._folder(session_id).name
        with io_errors(session_id):
            for mark in marks.glob("*.json") if marks.is_dir() else []:
                if mark.stem.isdigit() and int(mark.stem) <= version:
                    with contextlib.suppress(FileNotFoundError):
                        mark.unlink()
            with contextlib.suppress(OSError):
                marks.rmdir()  # only when empty

    def _mark_outbox(self, folder: Path, record: Checkpoint) -> None:
        version = _common.outbox_mark(record)
        if version is None:
            return
        marks = self.root / ".outbox" / folder.name
        marks.mkdir(parents=True, exist_ok=True)
        doc = {"session_id": record.session_id, "workflow": record.workflow, "version": version}
        self._replace(marks / f"{version:010d}.json", json.dumps(doc).encode("utf-8"))
