"""Shared by the adversarial AWS tests: the handlers over AwsStore + DynamoInbox + S3 on the moto server.

Reuses ``tests/stores/aws/moto_env.py`` under the module name the store, hosting and handler tests
give it (so one server per pytest process), and builds both tables from template.yaml's own
properties. ``Deployment.snapshot()`` is every item of both tables and every object's key and ETag:
"writes nothing" is asserted by comparing two snapshots.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.handlers import deliver, resolve, send, timer
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox
from archmax.hosting.wiring import Collaborators, s3_reader
from archmax.models.scripted import ScriptedModel
from archmax.testing import FakeLambdaContext
from hosting._models import Runner  # noqa: F401 - re-exported for the adversarial tests

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "events"
SUPPORT_INBOX = REPO / "examples" / "workflows" / "support-inbox"
INBOX_TABLE = "archmax-inbox-adversarial"
STORE_PREFIX = "sessions"  # what template.yaml gives the functions (SESSIONS_PREFIX)

PARK = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
]
ANSWER = [
    {"call": {"archmax_advance": {"to": "answer", "reason": "the reply names ORD-1001"}}},
    {"say": "ORD-1001 ships tomorrow."},
]


def moto_env() -> ModuleType:
    """``tests/stores/aws/moto_env.py``, the one moto server of this process (tests/ is on sys.path)."""
    return importlib.import_module("stores.aws.moto_env")


def fresh_aws() -> Any:
    """A reset moto with the sessions table, the bucket and the inbox table (both tables from template.yaml)."""
    env = moto_env().fresh_env()
    props = moto_env().template_resource("InboxTable")
    env.dynamodb.create_table(
        TableName=INBOX_TABLE,
        KeySchema=props["KeySchema"],
        AttributeDefinitions=props["AttributeDefinitions"],
        GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
        BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
    )
    return env


def event(name: str) -> dict[str, Any]:
    """A deep copy of one file of ``events/`` (tests mutate it)."""
    return copy.deepcopy(json.loads((EVENTS / name).read_text(encoding="utf-8")))


@dataclass
class Deployment:
    """The four handlers over AwsStore (prefix ``sessions``) + DynamoInbox + S3 mail reads."""

    env: Any
    clock: FakeClock
    script: Any
    """Model entries (a ``ScriptedModel`` is built) or a model object with ``complete``."""
    context: FakeLambdaContext = field(default_factory=FakeLambdaContext)
    refused: list[Any] = field(default_factory=list)
    workflow: Path = SUPPORT_INBOX
    """The workflow folder the agent serves (support-inbox unless a test adds triggers to a copy)."""

    def __post_init__(self) -> None:
        self.store = self.env.store(STORE_PREFIX)
        self.inbox = DynamoInbox(INBOX_TABLE, client=self.env.dynamodb, clock=self.clock)
        model = self.script if hasattr(self.script, "complete") else ScriptedModel(self.script)
        self.agent = create_agent(self.workflow, self.store, model, clock=self.clock)
        self.host = Host(self.agent, self.inbox, clock=self.clock)
        self.collaborators = Collaborators(
            agent=self.agent, host=self.host, bucket=self.env.bucket, fetch_mail=s3_reader(self.env.s3)
        )
        self.collaborators.on_refused = self.refused.append
        self.handlers = {
            "send": send.build(self.collaborators),
            "deliver": deliver.build(self.collaborators),
            "resolve": resolve.build(self.collaborators),
            "timer": timer.build(self.collaborators),
        }

    def call(self, handler: str, evt: Any) -> Any:
        return self.handlers[handler](evt, self.context)

    def put_object(self, key: str, data: bytes) -> None:
        self.env.s3.put_object(Bucket=self.env.bucket, Key=key, Body=data)

    def snapshot(self) -> Any:
        """Every item of both tables and every object (key, ETag): compare two to assert "wrote nothing"."""
        tables = {}
        for table in (self.env.table_name, INBOX_TABLE):
            items = self.env.dynamodb.scan(TableName=table)["Items"]
            tables[table] = sorted(items, key=repr)
        objects = self.env.s3.list_objects_v2(Bucket=self.env.bucket).get("Contents", [])
        return tables, sorted((o["Key"], o["ETag"]) for o in objects)


class GatedModel:
    """A real :class:`ScriptedModel` whose first ``complete`` waits until :meth:`open`: a turn held mid-flight.

    Nothing of ours is mocked: every answer comes from the script. ``entered`` is set when the held
    call starts, so a test knows the turn is running (engine lease and drain lease held).
    """

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.script = ScriptedModel(entries)
        self.entered = threading.Event()
        self._gate = threading.Event()
        self._first = True
        self._lock = threading.Lock()
        self.calls = 0

    def open(self) -> None:
        self._gate.set()

    def complete(self, request: Any) -> Any:
        with self._lock:
            first, self._first = self._first, False
            self.calls += 1
        if first:
            self.entered.set()
            assert self._gate.wait(timeout=120), "the gate was never opened"
        return self.script.complete(request)


def body(answer: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of an API Gateway proxy response."""
    return json.loads(answer["body"])
