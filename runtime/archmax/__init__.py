"""archmax: a runtime for LLM-agent sessions that park and resume.

The public surface is pinned by ``__all__`` (and by a test). Rule source: BEHAVIOUR.md, the seed.
"""

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
