"""Fixtures for the handler tests: the four handlers over real collaborators, and store snapshots.

Two backends: the filesystem store + filesystem inbox (a temporary folder), and the AWS store +
DynamoDB inbox + S3 mail reads against the moto server of ``tests/stores/aws/moto_env.py`` (tables
built from template.yaml). The waker is the host's default: the inbox is drained inline, so a
202 means the turn already ran when the test looks.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.handlers import deliver, resolve, send, timer
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox, FilesystemInbox
from archmax.hosting.wiring import Collaborators, s3_reader
from archmax.inbound.ses import SesMail
from archmax.models.scripted import ScriptedModel
from archmax.stores.filesystem import FilesystemStore
from archmax.testing import FakeLambdaContext, load_event

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
SUPPORT_INBOX = REPO / "examples" / "workflows" / "support-inbox"
INBOX_TABLE = "archmax-inbox-handlers-test"

# The seed's park-and-resume conversation, as model answers (BEHAVIOUR.md §10.4 entry format).
PARK = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
]
ANSWER = [
    {"call": {"archmax_advance": {"to": "answer", "reason": "the reply names ORD-1001"}}},
    {"say": "ORD-1001 ships tomorrow."},
]


def event(name: str) -> dict[str, Any]:
    """One file of ``events/``, loaded."""
    return load_event(EVENTS / name)


def moto_env() -> ModuleType:
    """``tests/stores/aws/moto_env.py``, the one moto server of this process (tests/ is on sys.path)."""
    return importlib.import_module("stores.aws.moto_env")


@dataclass
class Deployment:
    """The handlers over one backend, and a way to see everything that backend holds."""

    collaborators: Collaborators
    snapshot: Callable[[], Any]
    refused: list[SesMail] = field(default_factory=list)
    put_mail: Callable[[str, bytes], None] | None = None
    context: FakeLambdaContext = field(default_factory=FakeLambdaContext)

    def __post_init__(self) -> None:
        self.collaborators.on_refused = self.refused.append
        self.handlers = {
            "send": send.build(self.collaborators),
            "deliver": deliver.build(self.collaborators),
            "resolve": resolve.build(self.collaborators),
            "timer": timer.build(self.collaborators),
        }

    def call(self, handler: str, evt: dict[str, Any]) -> dict[str, Any]:
        return self.handlers[handler](evt, self.context)


def _fs_snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {".locks", ".tmp"} & set(p.relative_to(root).parts)
    }


@pytest.fixture
def filesystem(tmp_path: Path, clock: FakeClock) -> Callable[[list[dict[str, Any]]], Deployment]:
    """``make(script, workflow=SUPPORT_INBOX)`` -> the handlers over a filesystem store and inbox in ``tmp_path``."""

    def make(script: list[dict[str, Any]], workflow: Path = SUPPORT_INBOX) -> Deployment:
        root = tmp_path / "sessions"
        agent = create_agent(workflow, FilesystemStore(root), ScriptedModel(script), clock=clock)
        host = Host(agent, FilesystemInbox(root), clock=clock)
        return Deployment(Collaborators(agent=agent, host=host), snapshot=lambda: _fs_snapshot(root))

    return make


@pytest.fixture(scope="session")
def handlers_moto_server() -> Iterator[Any]:
    env = moto_env()
    yield env.server()
    env.stop_server()


@pytest.fixture
def aws(handlers_moto_server: Any, clock: FakeClock) -> Callable[[list[dict[str, Any]]], Deployment]:
    """``make(script, workflow=SUPPORT_INBOX)`` -> the handlers over AwsStore + DynamoInbox + S3 mail reads on a fresh moto."""
    env = moto_env().fresh_env()
    props = moto_env().template_resource("InboxTable")
    env.dynamodb.create_table(
        TableName=INBOX_TABLE,
        KeySchema=props["KeySchema"],
        AttributeDefinitions=props["AttributeDefinitions"],
        GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
        BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
    )

    def snapshot() -> Any:
        tables = {}
        for table in (env.table_name, INBOX_TABLE):
            items = env.dynamodb.scan(TableName=table)["Items"]
            tables[table] = sorted(items, key=repr)
        objects = env.s3.list_objects_v2(Bucket=env.bucket).get("Contents", [])
        return tables, sorted((o["Key"], o["ETag"]) for o in objects)

    def put_mail(key: str, raw: bytes) -> None:
        env.s3.put_object(Bucket=env.bucket, Key=key, Body=raw)

    def make(script: list[dict[str, Any]], workflow: Path = SUPPORT_INBOX) -> Deployment:
        agent = create_agent(workflow, env.store(), ScriptedModel(script), clock=clock)
        host = Host(agent, DynamoInbox(INBOX_TABLE, client=env.dynamodb), clock=clock)
        collaborators = Collaborators(agent=agent, host=host, bucket=env.bucket, fetch_mail=s3_reader(env.s3))
        return Deployment(collaborators, snapshot=snapshot, put_mail=put_mail)

    return make
