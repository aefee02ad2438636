"""archmax: a runtime for LLM-agent sessions that park and resume.

The public surface is pinned by ``__all__`` (and by a test). Rule source: BEHAVIOUR.md, the seed.

Each public name is imported from its module when first asked for (PEP 562), not when the package
loads: a module under ``archmax`` (a Lambda function's handler, the outbound sender) then loads only
what it imports itself, not the whole engine (issue 24 goal 4, cold start; ``bench/cold_import.py``).
``from archmax import create_agent`` and ``archmax.create_agent`` work as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archmax.agent import Agent, Sessions, WorkflowOperations, create_agent
    from archmax.clock import Clock, FakeClock, SystemClock
    from archmax.engine.prompt import RESET_INSTRUCTION
    from archmax.engine.tools import HostTool
    from archmax.errors import (
        ArchmaxError,
        CommitConflictError,
        DeliveryQueuedError,
        Diagnostic,
        DuplicateDeliveryError,
        EmptyMessageError,
        InvalidDecisionTargetError,
        InvalidFilePathError,
        InvalidSessionIdError,
        InvalidSessionPathError,
        InvalidVariableNameError,
        MissingDeliveryTriggerError,
        MissingHookExecutorError,
        ModelConfigurationError,
        ModelError,
        ReservedToolNameError,
        SessionNotAwaitingInputError,
        SessionNotParkedError,
        SessionNotResumableError,
        SessionStoreCapabilityError,
        UnknownSessionTriggerError,
        UnknownTriggerError,
        WorkflowDisabledError,
        WorkflowSpecError,
    )
    from archmax.models.base import Model, ModelRequest, ModelResponse
    from archmax.session.firing import FileIn, Firing
    from archmax.session.notes import is_runtime_note, runtime_note_kind
    from archmax.session.records import (
        Checkpoint,
        Message,
        PendingDecision,
        PendingInput,
        SessionStatus,
        ToolCall,
        Usage,
        is_finished,
    )
    from archmax.session.results import Outcome, Resolution, SessionExit, SessionSummary
    from archmax.spec import Workflow, load_workflow
    from archmax.stores.backend import SessionBackend, create_backend_session_store
    from archmax.stores.base import SessionStore, StoreCapabilities
    from archmax.stores.filesystem import FilesystemStore
    from archmax.stores.memory import MemoryStore

_HOMES: dict[str, str] = {
    "Agent": "archmax.agent",
    "Sessions": "archmax.agent",
    "WorkflowOperations": "archmax.agent",
    "create_agent": "archmax.agent",
    "Clock": "archmax.clock",
    "FakeClock": "archmax.clock",
    "SystemClock": "archmax.clock",
    "RESET_INSTRUCTION": "archmax.engine.prompt",
    "HostTool": "archmax.engine.tools",
    "ArchmaxError": "archmax.errors",
    "CommitConflictError": "archmax.errors",
    "DeliveryQueuedError": "archmax.errors",
    "Diagnostic": "archmax.errors",
    "DuplicateDeliveryError": "archmax.errors",
    "EmptyMessageError": "archmax.errors",
    "InvalidDecisionTargetError": "archmax.errors",
    "InvalidFilePathError": "archmax.errors",
    "InvalidSessionIdError": "archmax.errors",
    "InvalidSessionPathError": "archmax.errors",
    "InvalidVariableNameError": "archmax.errors",
    "MissingDeliveryTriggerError": "archmax.errors",
    "MissingHookExecutorError": "archmax.errors",
    "ModelConfigurationError": "archmax.errors",
    "ModelError": "archmax.errors",
    "ReservedToolNameError": "archmax.errors",
    "SessionNotAwaitingInputError": "archmax.errors",
    "SessionNotParkedError": "archmax.errors",
    "SessionNotResumableError": "archmax.errors",
    "SessionStoreCapabilityError": "archmax.errors",
    "UnknownSessionTriggerError": "archmax.errors",
    "UnknownTriggerError": "archmax.errors",
    "WorkflowDisabledError": "archmax.errors",
    "WorkflowSpecError": "archmax.errors",
    "Model": "archmax.models.base",
    "ModelRequest": "archmax.models.base",
    "ModelResponse": "archmax.models.base",
    "FileIn": "archmax.session.firing",
    "Firing": "archmax.session.firing",
    "is_runtime_note": "archmax.session.notes",
    "runtime_note_kind": "archmax.session.notes",
    "Checkpoint": "archmax.session.records",
    "Message": "archmax.session.records",
    "PendingDecision": "archmax.session.records",
    "PendingInput": "archmax.session.records",
    "SessionStatus": "archmax.session.records",
    "ToolCall": "archmax.session.records",
    "Usage": "archmax.session.records",
    "is_finished": "archmax.session.records",
    "Outcome": "archmax.session.results",
    "Resolution": "archmax.session.results",
    "SessionExit": "archmax.session.results",
    "SessionSummary": "archmax.session.results",
    "Workflow": "archmax.spec",
    "load_workflow": "archmax.spec",
    "SessionBackend": "archmax.stores.backend",
    "create_backend_session_store": "archmax.stores.backend",
    "SessionStore": "archmax.stores.base",
    "StoreCapabilities": "archmax.stores.base",
    "FilesystemStore": "archmax.stores.filesystem",
    "MemoryStore": "archmax.stores.memory",
}
"""Where each public name lives: imported from there on first access."""


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first access (then kept in the package's namespace).

    Raises:
        AttributeError: ``name`` is not a public name of the package (nor a loaded submodule).
    """
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'archmax' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "Agent",
    "ArchmaxError",
    "Checkpoint",
    "Clock",
    "CommitConflictError",
    "Diagnostic",
    "DeliveryQueuedError",
    "DuplicateDeliveryError",
    "EmptyMessageError",
    "FakeClock",
    "FileIn",
    "FilesystemStore",
    "Firing",
    "HostTool",
    "InvalidDecisionTargetError",
    "InvalidFilePathError",
    "InvalidSessionIdError",
    "InvalidSessionPathError",
    "InvalidVariableNameError",
    "MemoryStore",
    "Message",
    "MissingDeliveryTriggerError",
    "Model",
    "ModelConfigurationError",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "Outcome",
    "PendingDecision",
    "PendingInput",
    "RESET_INSTRUCTION",
    "ReservedToolNameError",
    "Resolution",
    "SessionExit",
    "SessionNotAwaitingInputError",
    "SessionNotParkedError",
    "SessionNotResumableError",
    "SessionStatus",
    "SessionBackend",
    "SessionStore",
    "SessionStoreCapabilityError",
    "SessionSummary",
    "Sessions",
    "StoreCapabilities",
    "SystemClock",
    "ToolCall",
    "UnknownSessionTriggerError",
    "UnknownTriggerError",
    "MissingHookExecutorError",
    "Usage",
    "Workflow",
    "WorkflowDisabledError",
    "WorkflowOperations",
    "WorkflowSpecError",
    "create_agent",
    "create_backend_session_store",
    "is_finished",
    "is_runtime_note",
    "load_workflow",
    "runtime_note_kind",
]
