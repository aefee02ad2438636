"""The public surface of ``archmax`` (BEHAVIOUR.md §3, §3.1, §3.11, §7, §8, §10.4).

``archmax.__all__`` is pinned: adding or removing a public name is a deliberate change that
updates this list in the same commit.
"""

from __future__ import annotations

import inspect

import pytest

import archmax
from archmax import ArchmaxError, is_finished

PUBLIC = [
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
    "MissingHookExecutorError",
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
    "SessionStore",
    "SessionBackend",
    "SessionStoreCapabilityError",
    "SessionSummary",
    "Sessions",
    "StoreCapabilities",
    "SystemClock",
    "ToolCall",
    "UnknownSessionTriggerError",
    "UnknownTriggerError",
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

CONTRACT_ERRORS = [
    "SessionNotAwaitingInputError",
    "MissingDeliveryTriggerError",
    "SessionNotResumableError",
    "SessionNotParkedError",
    "InvalidDecisionTargetError",
    "EmptyMessageError",
    "InvalidSessionPathError",
    "UnknownTriggerError",
    "UnknownSessionTriggerError",
    "InvalidVariableNameError",
    "WorkflowDisabledError",
    "InvalidSessionIdError",
    "SessionStoreCapabilityError",
    "WorkflowSpecError",
    "InvalidFilePathError",
    "ReservedToolNameError",
]


def test_the_public_names_are_pinned():
    assert sorted(archmax.__all__) == sorted(PUBLIC)
    assert len(set(archmax.__all__)) == len(archmax.__all__)


def test_every_public_name_is_importable_from_the_package():
    for name in archmax.__all__:
        assert getattr(archmax, name) is not None, name


@pytest.mark.parametrize("name", CONTRACT_ERRORS)
def test_every_contract_error_is_exported_and_subclasses_archmax_error(name):
    cls = getattr(archmax, name)
    assert issubclass(cls, ArchmaxError)


def test_unknown_session_trigger_error_is_an_unknown_trigger_error():
    assert issubclass(archmax.UnknownSessionTriggerError, archmax.UnknownTriggerError)


@pytest.mark.parametrize(
    ("status", "finished"),
    [
        ("completed", True),
        ("failed", True),
        ("rejected", True),
        ("running", False),
        ("awaiting_input", False),
        ("awaiting_decision", False),
        (None, False),
        ("COMPLETED", False),
        ("", False),
        (1, False),
    ],
)
def test_is_finished_is_true_exactly_for_the_three_finished_statuses(status, finished):
    assert is_finished(status) is finished


def test_create_agent_takes_workflow_store_model_then_keyword_only_options_defaulting_to_none():
    params = inspect.signature(archmax.create_agent).parameters
    assert list(params)[:3] == ["workflow", "store", "model"]
    keyword_only = {n: p.default for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keyword_only == dict.fromkeys(
        [
            "tools",
            "session_path",
            "variables",
            "on_event",
            "clock",
            "lease_ttl_s",
            "model_overrides",
            "hooks",
            "hook_model",
            "outbound",
            "workflows",
        ],
        None,
    )
    assert params["store"].default is None and params["model"].default is None


def test_the_reset_instruction_is_an_exported_non_empty_constant():
    assert isinstance(archmax.RESET_INSTRUCTION, str) and "archmax_reset" in archmax.RESET_INSTRUCTION


def test_hosts_get_the_scripted_model_fake_clock_and_memory_store_from_archmax_testing():
    from archmax import testing

    assert testing.ScriptedModel([{"say": "hi"}]).remaining == 1
    assert testing.FakeClock is archmax.FakeClock and testing.MemoryStore is archmax.MemoryStore


def test_the_store_protocol_is_importable_where_behaviour_9_1_names_it():
    from archmax.stores import FilesystemStore, MemoryStore, SessionStore

    assert isinstance(MemoryStore(), SessionStore)
    assert FilesystemStore is archmax.FilesystemStore
