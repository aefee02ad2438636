"""Artifacts: views of the checkpoint (trail, variables, metadata, trajectory, graph), never a second record.

Rule source: BEHAVIOUR.md §9.5 ("Artifacts are views of the checkpoint ... On the filesystem store
they are up to date in the session's folder when an operation ends. On AWS they are materialized
off the operation's path ... ``agent.sessions.artifact(id, name)`` returns any of them from any
store. Keeping them never costs an operation work or bytes that grow with the transcript. Writing
them is best-effort: a failure emits a ``warning`` (scope ``artifacts``) and never fails the
operation"); DESIGN.md §3 "The change stream"; issue 10.

* :func:`render` builds one artifact's text from a record, for any store (the read path).
* :class:`ArtifactWriter` keeps a local store's ``artifacts/`` folder current at the end of an
  operation: once, only the files whose text changed, and the trajectory appended line by line
  when this process wrote the version the operation started from (a rewrite otherwise). A store
  that declares ``writes_artifacts = False`` (the AWS store) gets no writes at all.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from archmax.errors import UnknownArtifactError
from archmax.session.records import Checkpoint, Message
from archmax.stores.base import Capability

ARTIFACTS = ("trail", "variables", "metadata", "trajectory", "graph")
"""The artifact names ``sessions.artifact`` accepts."""

FILES = {name: f"artifacts/{name}.jsonl" if name == "trajectory" else f"artifacts/{name}.json" for name in ARTIFACTS}
"""Each artifact's path in the session folder (§9.2 layout)."""

_REMEMBERED = 4096  # sessions whose last written artifacts a writer remembers


@functools.cache
def package_version() -> str:
    """The installed archmax version, read once per process (``0+unknown`` when not installed)."""
    from importlib import metadata  # only the metadata view asks; importing it is a visible share of a cold start

    try:
        return metadata.version("archmax")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def graph_of(workflow: Any) -> dict[str, Any]:
    """``{states: [{slug, type, terminal}], edges: [{from, to, type}]}`` of a workflow."""
    return {
        "states": [{"slug": s.slug, "type": s.type, "terminal": s.is_terminal} for s in workflow.states.values()],
        "edges": [
            {"from": s.slug, "to": t.to, "type": t.type} for s in workflow.states.values() for t in s.transitions
        ],
    }


def _json_text(doc: Any, *, indent: int | None = 2) -> str:
    r"""JSON text; with ``\uXXXX`` escapes when a string holds a lone surrogate (no UTF-8 form)."""
    separators = None if indent else (",", ":")
    text = json.dumps(doc, indent=indent, separators=separators, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(doc, indent=indent, separators=separators, ensure_ascii=True, default=str)
    return text


def trajectory_lines(messages: list[Message]) -> str:
    """``trajectory.jsonl`` text of ``messages``: one compact JSON message per line, notes included."""
    return "".join(_json_text(m.model_dump(exclude_defaults=True), indent=None) + "\n" for m in messages)


def _doc(name: str, record: Checkpoint, workflow: Any) -> dict[str, Any]:
    sid, wf = record.session_id, record.workflow
    if name == "trail":
        return {"session_id": sid, "workflow": wf, "steps": [s.model_dump(exclude_none=True) for s in record.trail]}
    if name == "variables":
        variables = {n: {"value": v.value, "locked": v.locked} for n, v in record.variables.items()}
        return {"session_id": sid, "workflow": wf, "variables": variables}
    if name == "metadata":
        return {
            "session_id": sid,
            "workflow": wf,
            "package_version": package_version(),
            "spec_hash": record.spec_hash,
            "usage": record.usage.model_dump(),
        }
    return graph_of(workflow)


def render(name: str, record: Checkpoint, workflow: Any) -> str:
    """One artifact's text as a store would hold it, built from the record (§9.5 shapes).

    Args:
        name: One of :data:`ARTIFACTS`.
        record: The session's checkpoint.
        workflow: The workflow (for ``graph``).

    Raises:
        UnknownArtifactError: ``name`` is not an artifact.
    """
    if name not in ARTIFACTS:
        raise UnknownArtifactError(name, list(ARTIFACTS), session_id=record.session_id)
    if name == "trajectory":
        return trajectory_lines(record.messages)
    return _json_text(_doc(name, record, workflow)) + "\n"


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass
class _Written:
    version: int  # the checkpoint version these files describe
    lines: int  # trajectory lines written
    digests: dict[str, str] = field(default_factory=dict)


class ArtifactWriter:
    """Keeps a local store's ``artifacts/`` current, writing only what changed (§9.5).

    Args:
        store: The session store; no writes when it says ``writes_artifacts = False``.
        workflow: The workflow (for ``graph.json``).
        warn: ``(record, scope, message)``: how a failed write is reported (scope ``artifacts``).
    """

    def __init__(self, store: Any, workflow: Any, warn: Callable[[Checkpoint, str, str], None]) -> None:
        self.store = store
        self.workflow = workflow
        self._warn = warn
        self._lock = threading.Lock()
        self._written: OrderedDict[str, _Written] = OrderedDict()

    @property
    def enabled(self) -> bool:
        """Whether this store keeps artifacts as files (not with ``Capability.ARTIFACTS_ON_READ``: AWS)."""
        return Capability.ARTIFACTS_ON_READ not in self.store.capabilities

    def write(self, record: Checkpoint, started_from: int) -> None:
        """Bring the session's artifacts up to ``record`` at the end of an operation; never raises.

        Args:
            record: The session's record as this operation left it (its last commit).
            started_from: The version the operation loaded; when this writer wrote exactly that
                version's artifacts, the trajectory gets only the new lines, else it is rewritten.
        """
        if not self.enabled:
            return
        sid = record.session_id
        with self._lock:
            before = self._written.pop(sid, None)
        if before is not None and (before.version != started_from or before.lines > len(record.messages)):
            before = None  # another writer moved the session on: rewrite everything once
        texts = {name: render(name, record, self.workflow) for name in ARTIFACTS if name != "trajectory"}
        digests = {name: _digest(text) for name, text in texts.items()}
        changed = {
            FILES[name]: text
            for name, text in texts.items()
            if before is None or before.digests.get(name) != digests[name]
        }
        new_lines = record.messages[before.lines :] if before is not None else []
        append = Capability.APPEND_TEXT in self.store.capabilities  # else a rewrite is cheaper than an append
        try:
            if before is None or not append:
                changed[FILES["trajectory"]] = trajectory_lines(record.messages)
            if changed:
                self.store.seed(sid, changed)
            if before is not None and append and new_lines:
                self.store.append_text(sid, FILES["trajectory"], trajectory_lines(new_lines))
        except Exception as exc:  # observability never fails the operation
            self._warn(record, "artifacts", f"could not write artifacts: {exc}")
            return
        with self._lock:
            self._written[sid] = _Written(record.version, len(record.messages), digests)
            while len(self._written) > _REMEMBERED:
                self._written.popitem(last=False)

    def forget(self, session_id: str) -> None:
        """Drop what this writer remembers of a session (after a delete: its files are gone)."""
        with self._lock:
            self._written.pop(session_id, None)
