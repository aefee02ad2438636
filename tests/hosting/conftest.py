"""Fixtures for the hosting tests: inboxes of every kind, hosts over matching stores, moto with InboxTable.

The AWS side reuses ``tests/stores/aws/moto_env.py`` (one moto server per process, reset per
test) under the module name the store tests give it, and builds ``InboxTable`` from
template.yaml's own properties, so drift between template and ``DynamoInbox`` fails a test.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox, FilesystemInbox, MemoryInbox
from archmax.models.scripted import ScriptedModel
from archmax.stores.base import SessionStore
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore
from stores.protocol_only import protocol_only

REPO = Path(__file__).resolve().parents[2]
SUPPORT_INBOX = REPO / "examples" / "workflows" / "support-inbox"
INBOX_TABLE = "archmax-inbox-test"


def moto_env() -> ModuleType:
    """``tests/stores/aws/moto_env.py``, the one moto server of this process (tests/ is on sys.path)."""
    return importlib.import_module("stores.aws.moto_env")


def inbox_table_definition() -> dict[str, Any]:
    """``create_table`` arguments read from ``InboxTable`` in template.yaml."""
    props = moto_env().template_resource("InboxTable")
    return {
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "GlobalSecondaryIndexes": props["GlobalSecondaryIndexes"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }


@pytest.fixture(scope="session")
def hosting_moto_server() -> Iterator[Any]:
    env = moto_env()
    yield env.server()
    env.stop_server()


@pytest.fixture
def aws(hosting_moto_server: Any) -> Any:
    """A reset moto with the sessions table, the bucket and the inbox table (all from template.yaml)."""
    env = moto_env().fresh_env()
    env.dynamodb.create_table(TableName=INBOX_TABLE, **inbox_table_definition())
    return env


@pytest.fixture(params=["memory", "filesystem", "dynamo"])
def inbox(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Any:
    """Every inbox implementation, fresh."""
    if request.param == "memory":
        return MemoryInbox()
    if request.param == "filesystem":
        return FilesystemInbox(tmp_path / "sessions")
    env = request.getfixturevalue("aws")
    return DynamoInbox(INBOX_TABLE, client=env.dynamodb, clock=clock)


HostFactory = Callable[..., Host]


@pytest.fixture(params=["memory", "filesystem", "aws"])
def make_host(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> HostFactory:
    """``make_host(model_or_entries, **host_kwargs)``: a Host over the support-inbox workflow on a
    store and inbox of one kind (memory+memory, filesystem+filesystem, AwsStore+DynamoInbox)."""
    kind = request.param
    if kind == "memory":
        store, inbox = MemoryStore(), MemoryInbox()
    elif kind == "filesystem":
        store, inbox = FilesystemStore(tmp_path / "sessions"), FilesystemInbox(tmp_path / "sessions")
    else:
        env = request.getfixturevalue("aws")
        store, inbox = env.store(), DynamoInbox(INBOX_TABLE, client=env.dynamodb, clock=clock)

    def build(model: Any, **kwargs: Any) -> Host:
        if isinstance(model, list):
            model = ScriptedModel(model)
        agent = create_agent(SUPPORT_INBOX, store, model, clock=clock)
        return Host(agent, inbox, **kwargs)

    build.kind = kind  # type: ignore[attr-defined]
    return build


@pytest.fixture
def make_aws_host(aws: Any, clock: FakeClock) -> HostFactory:
    """``make_aws_host(model_or_entries, **host_kwargs)``: a Host on AwsStore + DynamoInbox (moto)."""
    store, inbox = aws.store(), DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)

    def build(model: Any, **kwargs: Any) -> Host:
        if isinstance(model, list):
            model = ScriptedModel(model)
        return Host(create_agent(SUPPORT_INBOX, store, model, clock=clock), inbox, **kwargs)

    return build


Wrap = Callable[[SessionStore], SessionStore]
"""How a test sees its store: as built, or behind the protocol-only wrapper (issue 23)."""


def bare(store: SessionStore) -> SessionStore:
    """The store as built."""
    return store


@pytest.fixture(params=["bare", "protocol-only"])
def wrap(request: pytest.FixtureRequest) -> Wrap:
    """The store as built, or behind the protocol-only wrapper (the test id names which)."""
    return protocol_only if request.param == "protocol-only" else bare
