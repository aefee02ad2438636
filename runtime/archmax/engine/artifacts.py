"""Per-session observability files, overwritten at the end of every operation that ran a session.

Rule source: BEHAVIOUR.md §9.5. Writing them is best-effort: a failure emits a ``warning``
(scope ``artifacts``) and never fails the operation.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

from archmax.engine.runtime import Runtime
from archmax.session.records import Checkpoint


def _package_version() -> str:
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


def _json_text(doc: Any) -> str:
    r"""Pretty JSON; with ``\uXXXX`` escapes when a string holds a lone surrogate (no UTF-8 form)."""
    text = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(doc, indent=2, ensure_ascii=True, default=str)
    return text


def write_artifacts(rt: Runtime, record: Checkpoint) -> None:
    """Overwrite ``artifacts/{trail,variables,metadata,trajectory,graph}.json`` for the session."""
    sid, wf = record.session_id, record.workflow
    docs = {
        "trail": {"session_id": sid, "workflow": wf, "steps": [s.model_dump(exclude_none=True) for s in record.trail]},
        "variables": {
            "session_id": sid,
            "workflow": wf,
            "variables": {n: {"value": v.value, "locked": v.locked} for n, v in record.variables.items()},
        },
        "metadata": {
            "session_id": sid,
            "workflow": wf,
            "package_version": _package_version(),
            "spec_hash": record.spec_hash,
            "usage": record.usage.model_dump(),
        },
        "trajectory": {"session_id": sid, "workflow": wf, "messages": [m.model_dump(exclude_defaults=True) for m in record.messages]},
        "graph": graph_of(rt.workflow),
    }
    try:
        rt.store.seed(
            sid,
            {f"artifacts/{name}.json": _json_text(doc) for name, doc in docs.items()},
        )
    except Exception as exc:  # observability never fails the operation
        rt.warn(record, "artifacts", f"could not write artifacts: {exc}")
