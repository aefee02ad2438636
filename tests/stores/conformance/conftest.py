"""The store-conformance suite's fixtures: one ``store`` fixture, parametrised over every store.

Rule source: BEHAVIOUR.md §9 and CONVENTIONS.md ("one store-conformance suite ... a fresh store
and a fresh session id per test; a capability a store lacks skips with a reason").

Adding a store is one line in :data:`STORE_FACTORIES`: a name and a callable
``(request, tmp_path) -> SessionStore`` returning a fresh, empty store. A factory that needs a
long-lived resource (the AWS store's moto server on 127.0.0.1) asks for its own fixture through
``request.getfixturevalue("<fixture name>")``, the fixture being defined in a conftest pytest
sees from here (``tests/conftest.py`` or this file). For example::

    "aws": lambda request, tmp_path: make_aws_store(request.getfixturevalue("moto_server")),

Every test module here takes ``store`` and, where it needs one, ``session_id`` (fresh per test)
and builds records with :func:`make_record`. Each of the memory, filesystem and AWS stores also runs
behind :func:`~stores.protocol_only.protocol_only` (ids ``<kind>-protocol-only``): a wrapper with
exactly the protocol's members must pass everything the bare store passes (issue 23). One module
per declared capability (``test_<capability>.py``) tests what the capability promises, and what the
store's default does without it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from archmax.session.records import (
    Checkpoint,
    Lease,
    Message,
    PendingDecision,
    PendingInput,
    SessionStatus,
    ToolCall,
    TrailStep,
    TransitionRef,
    Variable,
)
from archmax.stores.backend import MemoryBackend, create_backend_session_store
from archmax.stores.base import Capability, SessionStore
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

from ..aws import moto_env
from ..protocol_only import protocol_only


def _aws_store(request: pytest.FixtureRequest) -> SessionStore:
    """An ``AwsStore`` on a freshly reset moto server (table and bucket built from template.yaml)."""
    request.getfixturevalue("moto_server")
    return moto_env.fresh_env().store()


STORE_FACTORIES: dict[str, Callable[[pytest.FixtureRequest, Path], SessionStore]] = {
    "memory": lambda request, tmp_path: MemoryStore(),
    "filesystem": lambda request, tmp_path: FilesystemStore(tmp_path / "sessions"),
    "aws": lambda request, tmp_path: _aws_store(request),
    "backend": lambda request, tmp_path: create_backend_session_store(MemoryBackend(binary=True)),
    "backend-text-only": lambda request, tmp_path: create_backend_session_store(MemoryBackend()),
}
for _kind in ("memory", "filesystem", "aws"):
    STORE_FACTORIES[f"{_kind}-protocol-only"] = lambda request, tmp_path, _k=_kind: protocol_only(
        STORE_FACTORIES[_k](request, tmp_path)
    )


@pytest.fixture(scope="session")
def moto_server() -> Iterator[moto_env.MotoServer]:
    """The ThreadedMotoServer on 127.0.0.1 the "aws" factory resets per test, started once per session."""
    yield moto_env.server()
    moto_env.stop_server()


@pytest.fixture(params=list(STORE_FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    """A fresh, empty store of each registered kind (the test id names the kind)."""
    return STORE_FACTORIES[request.param](request, tmp_path)


@pytest.fixture
def session_id() -> str:
    """A session id no other test uses (stores may outlive one test, e.g. a shared moto server)."""
    return f"conf-{uuid.uuid4()}"


def requires(store: SessionStore, capability: Capability | str) -> None:
    """Skip the test, with the store's declared reason, when ``store`` lacks ``capability`` (§9.1)."""
    wanted = Capability(capability)
    if wanted not in store.capabilities:
        pytest.skip(f"{type(store).__name__} lacks '{wanted}': {store.capabilities.reason(wanted)}")


def lacks(store: SessionStore, capability: Capability) -> None:
    """Skip the test when ``store`` has ``capability`` (a test of the default a store without it uses)."""
    if capability in store.capabilities:
        pytest.skip(f"{type(store).__name__} has '{capability}': its own behaviour is tested above")


T0 = "2025-01-01T00:00:00.000Z"


def make_record(
    session_id: str,
    version: int,
    *,
    status: SessionStatus | str = SessionStatus.RUNNING,
    messages: int = 0,
    trail: int = 0,
    resume_at: str | None = None,
    workflow: str = "support-inbox",
    lease_owner: str | None = None,
    lease_expires_at: str = "2025-01-01T00:15:00.000Z",
    updated_at: str = T0,
) -> Checkpoint:
    """A realistic checkpoint: ``messages`` entries, ``trail`` steps, a park record matching ``status``.

    Messages are deterministic in their index, so a record with more messages extends one with
    fewer (the transcript is append-only, §9.3). ``awaiting_input`` gets a ``PendingInput`` (with
    ``resume_at`` when given); ``awaiting_decision`` a ``PendingDecision``.
    """
    status = SessionStatus(status)
    pending_input = None
    pending_decision = None
    if status == SessionStatus.AWAITING_INPUT:
        pending_input = PendingInput(
            state="clarify", reason="waiting for the order id", parked_at=T0, resume_at=resume_at
        )
    elif status == SessionStatus.AWAITING_DECISION:
        pending_decision = PendingDecision(
            state="review", seq=1, transitions=[TransitionRef(to="approve", description="ok")], created_at=T0
        )
    return Checkpoint(
        session_id=session_id,
        version=version,
        workflow=workflow,
        spec_hash="0123456789abcdef0123456789abcdef",
        status=status,
        position="clarify",
        entry_state="intake",
        trigger="email_reply",
        messages=[_message(i) for i in range(messages)],
        variables={
            "reply_body": Variable(value="It's ORD-1001 — ünïcödé", locked=True),
            "n": Variable(value=version),
        },
        trail=[TrailStep(to="clarify", kind="agent", reason=f"step {i}", ts=1735689600000 + i) for i in range(trail)],
        pending_input=pending_input,
        pending_decision=pending_decision,
        park_counts={"clarify": version},
        lease=Lease(owner=lease_owner, expires_at=lease_expires_at) if lease_owner else None,
        created_at=T0,
        updated_at=updated_at,
    )


def _message(i: int) -> Message:
    kind = i % 3
    if kind == 0:
        return Message(role="user", content=f"message {i}: where is my order?")
    if kind == 1:
        return Message(
            role="assistant",
            content=f"looking {i}",
            tool_calls=[ToolCall(id=f"call_{i}", name="lookup", args={"q": i})],
        )
    return Message(role="tool", content=f"result {i}", tool_call_id=f"call_{i - 1}", name="lookup", status="success")
