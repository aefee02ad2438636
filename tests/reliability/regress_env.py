"""Shared parts of the issue-9 regression tests (``test_regress_*.py``): stores of every kind, hosts, faults.

Not a conftest (the randomized suite beside these owns ``tests/reliability/``'s conftest): test modules
import the fixtures (``from reliability.regress_env import *``) and get the fixtures ``env`` (every
store kind), ``aws_env`` (AWS only) and ``aws``. Real parts only: the memory and filesystem stores, ``AwsStore`` +
``DynamoInbox`` on the moto server of ``stores.aws.moto_env`` (tables built from template.yaml), the
scripted model. Faults are injected at the boundary a real fault would hit: botocore's ``before-send``
(a response lost after the request applied, an S3 ``SlowDown``), or a model call that kills the turn.
"""

from __future__ import annotations

import importlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox, FilesystemInbox, MemoryInbox
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

REPO = Path(__file__).resolve().parents[2]
SUPPORT_INBOX = REPO / "examples" / "workflows" / "support-inbox"
INBOX_TABLE = "archmax-inbox-regress"
REVIEW_WORKFLOW = {
    "states": {
        "start": {
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "Ready for a person."}],
        },
        "review": {"type": "human", "transitions": [{"to": "approved", "description": "Refund approved."}]},
        "approved": {"instructions": "Tell the customer the refund is approved."},
    }
}
"""start → review (a human state) → approved: a workflow with a decision park."""
STORE_KINDS = ["memory", "filesystem", "aws", "memory-protocol-only", "filesystem-protocol-only", "aws-protocol-only"]
"""Every store kind, and each behind a wrapper with exactly the store protocol's members (issue 23)."""
PROTOCOL_ONLY = "-protocol-only"
__all__ = ["aws_env_fixture", "aws_fixture", "env_fixture", "regress_moto_server_fixture"]


def moto_env() -> Any:
    """``tests/stores/aws/moto_env.py``: the one moto server of this process."""
    return importlib.import_module("stores.aws.moto_env")


@pytest.fixture(scope="session", name="regress_moto_server")
def regress_moto_server_fixture() -> Iterator[Any]:
    env = moto_env()
    yield env.server()
    env.stop_server()


@pytest.fixture(name="aws")
def aws_fixture(regress_moto_server: Any) -> Any:
    """A reset moto with the sessions table, the bucket and the inbox table, all from template.yaml."""
    env = moto_env()
    fresh = env.fresh_env()
    props = env.template_resource("InboxTable")
    fresh.dynamodb.create_table(
        TableName=INBOX_TABLE,
        KeySchema=props["KeySchema"],
        AttributeDefinitions=props["AttributeDefinitions"],
        GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
        BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
    )
    return fresh


class Env:
    """One store kind with its inbox, a fake clock, and agents/hosts built over them on demand.

    ``kind`` is the store kind (``memory``, ``filesystem``, ``aws``); with ``protocol_only`` every
    store this env hands out sits behind ``stores.protocol_only`` (the test id says ``-protocol-only``).
    """

    def __init__(
        self,
        kind: str,
        store: Any,
        inbox: Any,
        clock: FakeClock,
        aws: Any = None,
        *,
        protocol_only: bool = False,
        root: Path | None = None,
    ) -> None:
        self.kind, self.inbox, self.clock, self.aws = kind, inbox, clock, aws
        self.protocol_only, self.root = protocol_only, root
        self.store = self._seen(store)

    def _seen(self, store: Any) -> Any:
        return importlib.import_module("stores.protocol_only").protocol_only(store) if self.protocol_only else store

    def agent(self, model: Any, workflow: Any = SUPPORT_INBOX, **kwargs: Any) -> Any:
        """An agent on this store; a list of entries becomes a :class:`ScriptedModel`."""
        if isinstance(model, list):
            model = ScriptedModel(model)
        return create_agent(workflow, self.store, model, clock=self.clock, **kwargs)

    def host(self, model: Any, workflow: Any = SUPPORT_INBOX, **kwargs: Any) -> Host:
        """A :class:`Host` over :meth:`agent` and this inbox."""
        return Host(self.agent(model, workflow), self.inbox, **kwargs)

    def other_store(self) -> Any:
        """A second store instance on the same data (another process's view; AWS: no shared caches)."""
        if self.kind == "aws":
            return self._seen(self.aws.store())
        if self.kind == "filesystem":
            return self._seen(FilesystemStore(self.root))
        return self.store


def make_env(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Env:
    clock = FakeClock("2025-01-01T00:00:00.000Z")
    base = kind.removesuffix(PROTOCOL_ONLY)
    wrapped = base != kind
    if base == "memory":
        return Env(base, MemoryStore(), MemoryInbox(), clock, protocol_only=wrapped)
    if base == "filesystem":
        root = tmp_path / "sessions"
        return Env(base, FilesystemStore(root), FilesystemInbox(root), clock, protocol_only=wrapped, root=root)
    env = request.getfixturevalue("aws")
    inbox = DynamoInbox(INBOX_TABLE, client=env.dynamodb, clock=clock)
    return Env(base, env.store(), inbox, clock, env, protocol_only=wrapped)


@pytest.fixture(params=STORE_KINDS, name="env")
def env_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Env:
    """Every store kind (memory, filesystem, AWS on moto) with its matching inbox, bare and protocol-only."""
    return make_env(request.param, request, tmp_path)


@pytest.fixture(name="aws_env", params=["aws", "aws" + PROTOCOL_ONLY])
def aws_env_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Env:
    """The AWS kind alone (AwsStore + DynamoInbox on moto), bare and protocol-only, for faults only AWS has."""
    return make_env(request.param, request, tmp_path)


# ---------------------------------------------------------------------- faults


class ProcessDied(BaseException):
    """Stands for a process killed at this point: not an Exception, so nothing on the way handles it."""


class DyingModel:
    """Follows the script, but the call numbered ``die_at`` (1-based) kills the process instead."""

    def __init__(self, entries: list[dict[str, Any]], die_at: int) -> None:
        self.script = ScriptedModel(entries)
        self.die_at = die_at
        self.calls = 0

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == self.die_at:
            raise ProcessDied(f"killed at model call {self.calls}")
        return self.script.complete(request)


class LoadsThen:
    """A store whose next ``load`` of a session answers what it read, but only after ``meanwhile`` ran.

    Arm it with :meth:`arm`; it fires once. It makes a race certain: another writer commits between a
    reader's load and its claim.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.capabilities = inner.capabilities
        self._meanwhile: Callable[[], Any] | None = None
        self.fired = 0

    def arm(self, meanwhile: Callable[[], Any]) -> None:
        self._meanwhile = meanwhile

    def load(self, session_id: str) -> Any:
        loaded = self._inner.load(session_id)
        meanwhile, self._meanwhile = self._meanwhile, None
        if meanwhile is not None:
            self.fired += 1
            meanwhile()
        return loaded

    def load_if(self, session_id: str, wanted: Callable[[Any], bool]) -> Any:
        # The AWS store answers load_if in one read; here it goes through load, so the race lands
        # between the read and the claim on every store.
        head = self._inner.head(session_id)
        if head is None or not wanted(head):
            return head, None
        return head, self.load(session_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class AwsFault:
    """Inject a fault into the next ``times`` calls of one operation of a boto3 client (``before-send``).

    ``lost_response``: the request is sent and applied, then the response is lost (a read timeout),
    so botocore's own retry sends it again. ``slow_down``: S3 answers 503 ``SlowDown`` without applying.
    Use as a context manager; ``fired`` counts the faults injected.
    """

    def __init__(
        self, client: Any, operation: str, kind: str, *, times: int = 1, when: Callable[[Any], bool] | None = None
    ) -> None:
        self.client, self.operation, self.kind, self.left = client, operation, kind, times
        self.when = when or (lambda request: True)
        self.fired = 0
        self._lock = threading.Lock()
        service = client.meta.service_model.service_id.hyphenize()
        self._event = f"before-send.{service}.{operation}"
        self._id = f"awsfault-{id(self)}"

    def _handler(self, request: Any, **_: Any) -> Any:
        with self._lock:
            if self.left <= 0 or not self.when(request):
                return None
            self.left -= 1
            self.fired += 1
        if self.kind == "lost_response":
            self.client._endpoint.http_session.send(request)  # applied at the server ...
            raise ReadTimeoutError(endpoint_url=request.url)  # ... and the answer never arrives
        body = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>'
        return AWSResponse(request.url, 503, {"Content-Type": "application/xml"}, _Raw(body))

    def __enter__(self) -> AwsFault:
        self.client.meta.events.register_first(self._event, self._handler, unique_id=self._id)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.meta.events.unregister(self._event, unique_id=self._id)


class _Raw:
    """The raw body of a canned HTTP response (what ``AWSResponse`` reads)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data

    def read(self, *_: Any, **__: Any) -> bytes:
        data, self._data = self._data, b""
        return data


class DieAfterCommitWhere:
    """A store wrapper: the first commit whose record satisfies ``where`` lands, then the process dies.

    After that every write raises :class:`ProcessDied` too (a killed process writes nothing more); reads
    pass through. The wrapped store keeps exactly what was committed up to the kill.
    """

    _WRITES = ("commit", "seed", "upload_files", "remove_files", "delete", "put_spec")

    def __init__(self, inner: Any, where: Callable[[Any], bool]) -> None:
        self._inner = inner
        self._where = where
        self.dead = False
        self.capabilities = inner.capabilities

    def commit(self, session_id: str, record: Any, *args: Any, **kwargs: Any) -> None:
        if self.dead:
            raise ProcessDied("the process is dead")
        self._inner.commit(session_id, record, *args, **kwargs)
        if self._where(record):
            self.dead = True
            raise ProcessDied("killed right after a commit landed")

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in self._WRITES and callable(attr):

            def write(*args: Any, **kwargs: Any) -> Any:
                if self.dead:
                    raise ProcessDied("the process is dead")
                return attr(*args, **kwargs)

            return write
        return attr


@contextmanager
def pair_driver(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A :class:`~.pair_schedules.PairDriver` over a fresh caller/child world on ``kind``, closed after.

    A replay of a found schedule, not a schedule: its counts stay off the soak's summary.
    """
    from . import counters
    from .harness import PairWorld
    from .invariants import Ledger
    from .pair_schedules import PairDriver

    if kind == "aws":
        request.getfixturevalue("regress_moto_server")
    table = counters.StoreCounters(Counter(), Counter())
    world = PairWorld(kind, table, tmp=tmp_path if kind == "filesystem" else None)
    try:
        yield PairDriver(world, Ledger(), table)
    finally:
        world.close()


def calls_answered_in_place(messages: list[Any]) -> list[str]:
    """Problems with the rule every provider enforces: each tool call is answered right after its message.

    Returns one line per assistant message whose tool calls are not all answered by the tool messages
    that directly follow it (empty when the transcript is valid).
    """
    problems = []
    for i, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        wanted = [c.id for c in message.tool_calls]
        following = []
        for later in messages[i + 1 :]:
            if later.role != "tool":
                break
            following.append(later.tool_call_id)
        if sorted(following) != sorted(wanted):
            problems.append(f"message {i} calls {wanted}, answered by {following}")
    return problems
