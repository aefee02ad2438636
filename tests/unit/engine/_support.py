"""Shared helpers for the engine's rule tests: a recording model, a harness, snapshots.

The recording model wraps the real :class:`ScriptedModel` (BEHAVIOUR.md §10.4) and keeps every
:class:`ModelRequest` it received, so tests can read the prompt the engine built (state block,
tools, transcript) without mocking any of our own code.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.session.notes import is_runtime_note
from archmax.spec import Workflow, workflow_from_dict

REPO = Path(__file__).resolve().parents[3]
SUPPORT_INBOX = REPO / "examples" / "workflows" / "support-inbox"
BANK_CHECK = REPO / "examples" / "workflows" / "bank-check"

# A one-state chat: the entry state is terminal.
CHAT = {"states": {"chat": {"triggers": {"manual": None}}}}

# start → done (terminal), with an on-demand wait in either.
TWO = {
    "states": {
        "start": {
            "triggers": {"manual": None},
            "transitions": [{"to": "done", "description": "The work is done."}],
        },
        "done": {"instructions": "Answer the customer."},
    }
}

# start → review (human) → approved | start
HUMAN = {
    "states": {
        "start": {
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "Ready for a person."}],
        },
        "review": {
            "type": "human",
            "title": "  Review the refund  ",
            "evidence": ["scratchpad/policy.md"],
            "transitions": [
                {"to": "approved", "description": "Refund approved.", "type": "approve"},
                {"to": "second-review", "description": "Needs a second look.", "type": "refine"},
                {"to": "start", "description": "Start over."},
            ],
        },
        "second-review": {
            "type": "human",
            "transitions": [{"to": "approved", "description": "Approved on second look."}],
        },
        "approved": None,
    }
}


def wf(doc: dict[str, Any], slug: str = "demo") -> Workflow:
    """Build a workflow from an inline document."""
    return workflow_from_dict(doc, slug)


class RecordingModel:
    """A model that forwards to another and keeps a copy of every request it received."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self.requests.append(request.model_copy(deep=True))
        return self.inner.complete(request)

    @property
    def calls(self) -> int:
        return len(self.requests)


@dataclass
class Harness:
    """An agent over a store, a recorded scripted model, a fake clock and an event list."""

    agent: Any
    model: RecordingModel
    store: Any
    clock: FakeClock
    events: list[dict[str, Any]] = field(default_factory=list)

    def events_of(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == type_]

    def load(self, session_id: str):
        return self.store.load(session_id)


def harness(
    workflow: dict[str, Any] | Workflow | Path | str,
    entries: list[dict[str, Any]] | None = None,
    *,
    store: Any = None,
    clock: FakeClock | None = None,
    model: Any = None,
    **kwargs: Any,
) -> Harness:
    """Assemble an agent for a test. ``entries`` feed a ScriptedModel unless ``model`` is given."""
    spec = wf(workflow) if isinstance(workflow, dict) else workflow
    store = store if store is not None else MemoryStore()
    clock = clock or FakeClock("2025-01-01T00:00:00.000Z")
    recorder = RecordingModel(model if model is not None else ScriptedModel(list(entries or [])))
    events: list[dict[str, Any]] = []
    agent = create_agent(spec, store, recorder, clock=clock, on_event=events.append, **kwargs)
    return Harness(agent=agent, model=recorder, store=store, clock=clock, events=events)


def snapshot(store: Any, session_id: str) -> tuple[Any, dict[str, bytes | None]]:
    """Everything stored for one session: the latest checkpoint (as JSON) and every file's bytes."""
    rec = store.load(session_id)
    files = {p: store.get(session_id, p) for p in store.list_files(session_id, "")}
    return (rec.model_dump_json() if rec else None, files)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under a directory, relative path → bytes (for byte-for-byte comparisons)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def results_of(messages: list[Any], name: str | None = None) -> list[Any]:
    """Tool-result messages (notes excluded), optionally of one tool."""
    return [m for m in messages if m.role == "tool" and not is_runtime_note(m) and (name is None or m.name == name)]


def notes_of(messages: list[Any], kind: str | None = None) -> list[Any]:
    """The tool-message halves of runtime notes, optionally of one kind."""
    return [
        m for m in messages if m.role == "tool" and is_runtime_note(m) and (kind is None or m.archmax["note"] == kind)
    ]


def wait_then(reason: str = "the order number", say: str | None = "Which order?", **extra: Any) -> dict[str, Any]:
    """A script entry that (optionally) says something and calls archmax_wait."""
    entry: dict[str, Any] = {"call": {"archmax_wait": {"reason": reason, **extra}}}
    if say is not None:
        entry["say"] = say
    return entry
