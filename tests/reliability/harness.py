"""The world a reliability schedule runs in: one store kind, its inbox, a fake clock, and the faults.

A *world* is a store (memory, filesystem, or AwsStore on the moto server) with its inbox
(MemoryInbox, FilesystemInbox, DynamoInbox), an injected clock, a deterministic model, and a
:class:`Faults` plan that the schedule arms for one operation at a time:

* ``crash-before`` / ``crash-after``: the process dies just before / just after the k-th write
  (store commit, seed, upload, spec; inbox put, mark, lease) — :class:`Crash` is a BaseException, so
  nothing on the way handles it, and every later write of that "process" dies too;
* ``error-before`` / ``error-after``: the k-th write raises ``StoreError`` before / after it applied;
* ``lost-response`` (AWS): the k-th AWS write call reaches moto and is applied, then botocore sees a
  ``ReadTimeoutError`` (through a ``before-send`` hook) and retries it, as it does in production;
* ``slowdown`` (AWS): the k-th S3 ``PutObject`` answers ``503 SlowDown`` on every attempt;
* ``model-error`` / ``model-crash``: the k-th model call raises ``ModelError`` / dies;
* ``outage`` (issue 20): the outbound provider (SMTP, SES, EventBridge: :class:`SinkPublisher`)
  refuses every send for the whole operation, as a server that is down does;
* an *interloper*: just before the k-th write, another whole operation runs (a deterministic
  interleaving of two threads: the other firing lands between this one's read and its write).

After a crash the "process" restarts: a fresh agent, store object and host over the same storage.
Nothing of archmax is mocked: the wrappers delegate every call to the real store and inbox.
"""

from __future__ import annotations

import contextvars
import hashlib
import importlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from archmax import create_agent
from archmax.clock import FakeClock, format_instant
from archmax.errors import ModelError, StoreError
from archmax.hosting.host import Host
from archmax.hosting.inbox import DynamoInbox, FilesystemInbox, MemoryInbox
from archmax.models.base import ModelRequest, ModelResponse
from archmax.spec import workflow_from_dict
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

from .model import ReactiveModel

LEASE_TTL_S = 60.0
"""Engine lease and drain lease: short, so recovery is one clock step away."""

START = "2025-01-01T00:00:00.000Z"
INBOX_TABLE = "archmax-inbox-reliability"

WORKFLOW = {
    "instructions": "Do what each event asks: act:<word> names the move.",
    "states": {
        "work": {
            "triggers": {"manual": None},
            "tools": {"allow": ["lookup"]},
            "transitions": [{"to": "review", "description": "A person checks the work."}],
        },
        "review": {
            "type": "human",
            "transitions": [
                {"to": "work", "description": "More work is needed."},
                {"to": "done", "description": "The work is accepted."},
            ],
        },
        "done": None,
    },
}

STORE_WRITES = (
    "commit", "seed", "upload_files", "remove_files", "delete", "put_spec",
    "outbox_claim", "outbox_release", "outbox_record",
)  # fmt: skip
INBOX_WRITES = ("put", "mark", "try_acquire", "release")
STORE_FAULTS = ("crash-before", "crash-after", "error-before", "error-after")
KILLS = ("kill-before", "kill-after")
"""A real process death (SIGKILL) at a write: only in the worker process of test_sigkill.py."""
MODEL_FAULTS = ("model-error", "model-crash")
AWS_FAULTS = ("lost-response", "slowdown")
OUTBOUND_FAULTS = ("outage",)
"""The outbound provider is down for the operation (issue 20: SMTP/SES outages among the faults)."""
CRASHES = ("crash-before", "crash-after", "model-crash", "sigkill")


class Crash(BaseException):
    """The process died here (a BaseException: no ``except Exception`` on the way handles it)."""


def lookup(ref: str) -> str:
    """A host tool the model calls: answers with what it looked up."""
    return f"found {ref}"


@dataclass
class Fault:
    """One fault: ``kind`` fires at the ``at``-th write (model call, AWS write call) of an operation."""

    kind: str
    at: int


@dataclass
class Interloper:
    """Another operation that runs whole just before the ``at``-th write of the armed one."""

    at: int
    run: Callable[[], Any]
    ran: bool = False


@dataclass
class Faults:
    """The plan of one operation, shared by the store, inbox, model and AWS wrappers."""

    counters: Any
    fault: Fault | None = None
    interloper: Interloper | None = None
    writes: int = 0
    model_calls: int = 0
    aws_calls: int = 0
    s3_puts: int = 0
    dead: bool = False
    fired: str | None = None
    suspended: int = 0
    unrecorded: set[str] = field(default_factory=set)
    committed: set[str] = field(default_factory=set)
    """``<session>/<entry id>`` of every outbox entry a commit that applied recorded (issue 20)."""
    """``<session>/<entry id>`` of sends whose sent record a fault cut (the documented duplicate window)."""

    def arm(self, fault: Fault | None, interloper: Interloper | None = None) -> None:
        self.fault, self.interloper = fault, interloper
        self.writes = self.model_calls = self.aws_calls = self.s3_puts = 0
        self.dead, self.fired = False, None

    def disarm(self) -> None:
        self.arm(None)

    @property
    def active(self) -> bool:
        return self.suspended == 0

    @contextmanager
    def suspend(self) -> Iterator[None]:
        self.suspended += 1
        try:
            yield
        finally:
            self.suspended -= 1

    def _fire(self, kind: str) -> None:
        self.fired = kind
        self.counters.fault(kind)

    def write(self, name: str, do: Callable[[], Any]) -> Any:
        """Run one store or inbox write under the plan."""
        if not self.active:
            return do()
        if self.dead:
            raise Crash(f"write {name} after the process died")
        self.writes += 1
        inter = self.interloper
        if inter is not None and not inter.ran and inter.at == self.writes:
            inter.ran = True
            self.counters.fault("interleaving")
            with self.suspend():
                try:  # as another process: none of this operation's context (callers waiting, releases)
                    contextvars.Context().run(inter.run)
                except Exception:  # noqa: BLE001 - the other firing's refusal is its own business
                    pass
        f = self.fault
        if f is None or f.at != self.writes or f.kind not in STORE_FAULTS + KILLS:
            return do()
        self._fire(f.kind)
        if f.kind == "kill-before":
            os.kill(os.getpid(), signal.SIGKILL)
        if f.kind == "kill-after":
            result = do()
            os.kill(os.getpid(), signal.SIGKILL)
        if f.kind == "crash-before":
            self.dead = True
            raise Crash(f"killed before {name}")
        if f.kind == "error-before":
            raise StoreError(f"injected: {name} failed before it was applied")
        result = do()
        if f.kind == "crash-after":
            self.dead = True
            raise Crash(f"killed after {name}")
        raise StoreError(f"injected: {name} applied, then its answer was lost")
        return result  # pragma: no cover

    def model_call(self) -> None:
        if not self.active:
            return
        if self.dead:
            raise Crash("model call after the process died")
        self.model_calls += 1
        f = self.fault
        if f is not None and f.at == self.model_calls and f.kind in MODEL_FAULTS:
            self._fire(f.kind)
            if f.kind == "model-crash":
                self.dead = True
                raise Crash("killed while the model was answering")
            raise ModelError("injected: the provider failed")


class FaultyStore:
    """A SessionStore that runs every write through :class:`Faults` (reads pass straight through)."""

    def __init__(self, inner: Any, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults
        self.capabilities = inner.capabilities

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in STORE_WRITES:
            return attr
        return lambda *a, **k: self._faults.write(f"store.{name}", lambda: attr(*a, **k))

    # the SessionStore protocol, spelled out so isinstance(store, SessionStore) holds
    def load(self, session_id: str) -> Any:
        return self._inner.load(session_id)

    def head(self, session_id: str) -> Any:
        return self._inner.head(session_id)

    def commit(self, *a: Any, **k: Any) -> Any:
        def commit() -> Any:
            result = self._inner.commit(*a, **k)
            record = a[1] if len(a) > 1 else k["record"]
            self._faults.committed.update(
                f"{record.session_id}/{e.id}" for e in record.outbox if e.version == record.version
            )
            return result

        return self._faults.write("store.commit", commit)

    def list(self) -> Any:
        return self._inner.list()

    def due(self, *a: Any, **k: Any) -> Any:
        return self._inner.due(*a, **k)

    def stale(self, *a: Any, **k: Any) -> Any:
        return self._inner.stale(*a, **k)

    def get(self, *a: Any, **k: Any) -> Any:
        return self._inner.get(*a, **k)

    def seed(self, *a: Any, **k: Any) -> Any:
        return self._faults.write("store.seed", lambda: self._inner.seed(*a, **k))

    def outbox_record(self, session_id: str, entry_id: str, outcome: Any, body: str, **kw: Any) -> Any:
        try:
            return self._faults.write(
                "store.outbox_record", lambda: self._inner.outbox_record(session_id, entry_id, outcome, body, **kw)
            )
        except (Crash, StoreError):
            if outcome == "sent":
                self._faults.unrecorded.add(f"{session_id}/{entry_id}")  # the documented duplicate window
            raise

    def upload_files(self, *a: Any, **k: Any) -> Any:
        return self._faults.write("store.upload_files", lambda: self._inner.upload_files(*a, **k))

    def list_files(self, *a: Any, **k: Any) -> Any:
        return self._inner.list_files(*a, **k)

    def delete(self, *a: Any, **k: Any) -> Any:
        return self._faults.write("store.delete", lambda: self._inner.delete(*a, **k))

    def get_spec(self, *a: Any, **k: Any) -> Any:
        return self._inner.get_spec(*a, **k)

    def put_spec(self, *a: Any, **k: Any) -> Any:
        return self._faults.write("store.put_spec", lambda: self._inner.put_spec(*a, **k))


class SinkPublisher:
    """The outbound provider of a world: takes every lifecycle event and keeps it; down during an ``outage``.

    It stands where EventBridge (or SMTP) stands: outside archmax. Its list outlives a process
    restart, so the checks count every send ever made (issue 20: each committed entry exactly once).
    """

    def __init__(self, faults: Faults) -> None:
        self._faults = faults
        self.sent: list[str] = []
        """``<session>/<entry id>`` of every event taken, in order."""

    def publish(self, session_id: str, entry: Any) -> Any:
        from archmax.errors import OutboundError
        from archmax.outbound.transports import Delivery

        faults = self._faults
        if faults.active and faults.dead:
            raise Crash("a send after the process died")
        if faults.active and faults.fault is not None and faults.fault.kind in OUTBOUND_FAULTS:
            faults._fire("outage")
            raise OutboundError("injected: the provider is down")
        self.sent.append(f"{session_id}/{entry.id}")
        return Delivery("sink", "sink")


class FaultyInbox:
    """An Inbox whose writes (put, mark, lease take and release) run through :class:`Faults`."""

    def __init__(self, inner: Any, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in INBOX_WRITES:
            return attr
        return lambda *a, **k: self._faults.write(f"inbox.{name}", lambda: attr(*a, **k))

    def put(self, item: Any, **kwargs: Any) -> bool:  # kwargs: the new_session hint
        return self._faults.write("inbox.put", lambda: self._inner.put(item, **kwargs))

    def pending(self, session_id: str) -> Any:
        return self._inner.pending(session_id)

    def get(self, session_id: str, delivery_id: str) -> Any:
        return self._inner.get(session_id, delivery_id)

    def mark(self, *a: Any, **k: Any) -> Any:
        return self._faults.write("inbox.mark", lambda: self._inner.mark(*a, **k))

    def sessions_with_pending(self) -> Any:
        return self._inner.sessions_with_pending()

    def try_acquire(self, *a: Any, **k: Any) -> Any:
        return self._faults.write("inbox.try_acquire", lambda: self._inner.try_acquire(*a, **k))

    def arrivals(self, session_id: str) -> int:
        return self._inner.arrivals(session_id)

    def release(self, *a: Any, **k: Any) -> Any:
        return self._faults.write("inbox.release", lambda: self._inner.release(*a, **k))


class FaultyModel:
    """The reactive model, with the plan's model faults in front of every call."""

    def __init__(self, inner: ReactiveModel, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults

    def complete(self, request: ModelRequest) -> ModelResponse:
        self._faults.model_call()
        return self._inner.complete(request)


# --------------------------------------------------------------------------- AWS faults (botocore hooks)

AWS_WRITE_CALLS = {
    "PutObject",
    "DeleteObject",
    "DeleteObjects",
    "UpdateItem",
    "PutItem",
    "DeleteItem",
    "TransactWriteItems",
}


class AwsFaultHooks:
    """``before-send`` hooks on the shared boto3 clients: lost responses and S3 throttling.

    A lost response sends the request to moto for real (so it is applied), then raises botocore's
    ``ReadTimeoutError``; botocore's own retry handler then sends it again, as in production.
    """

    def __init__(self, faults: Faults, clients: list[Any]) -> None:
        from botocore.httpsession import URLLib3Session

        self._faults = faults
        self._clients = clients
        self._http = URLLib3Session()
        self._uid = f"reliability-{id(self)}"
        self._throttled: int | None = None

    def __enter__(self) -> AwsFaultHooks:
        for client in self._clients:
            service = client.meta.service_model.service_id.hyphenize()
            client.meta.events.register(f"before-send.{service}", self._before_send, unique_id=self._uid)
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self._clients:
            service = client.meta.service_model.service_id.hyphenize()
            client.meta.events.unregister(f"before-send.{service}", unique_id=self._uid)

    def _before_send(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse
        from botocore.exceptions import ReadTimeoutError

        faults = self._faults
        if not faults.active or faults.fault is None or faults.fault.kind not in AWS_FAULTS:
            return None
        operation = request.context.get("operation_name") or _operation_of(request)
        retry = (request.context.get("retries") or {}).get("attempt", 1) > 1
        kind = faults.fault.kind
        if kind == "slowdown":
            if operation != "PutObject":
                return None
            if not retry:
                faults.s3_puts += 1
                self._throttled = faults.s3_puts
            if self._throttled == faults.fault.at:
                if not retry:
                    faults._fire("slowdown")
                body = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
                return AWSResponse(request.url, 503, {"Content-Type": "application/xml"}, _Raw(body))
            return None
        if operation not in AWS_WRITE_CALLS or retry:
            return None
        faults.aws_calls += 1
        if faults.aws_calls != faults.fault.at:
            return None
        faults._fire("lost-response")
        self._http.send(request)  # applied by the server ...
        raise ReadTimeoutError(endpoint_url=request.url)  # ... and the answer never arrives


class _Raw:
    """The raw body botocore reads from a response."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body


def _operation_of(request: Any) -> str:
    target = request.headers.get("X-Amz-Target")
    if target:
        return target.decode().split(".")[-1] if isinstance(target, bytes) else target.split(".")[-1]
    method = request.method
    if method == "PUT":
        return "PutObject"
    if method == "DELETE":
        return "DeleteObject"
    if method == "POST" and "delete" in request.url:
        return "DeleteObjects"
    return method


# --------------------------------------------------------------------------- worlds


def moto_env() -> Any:
    """``tests/stores/aws/moto_env.py`` (tests/ is on sys.path): one moto server per process."""
    return importlib.import_module("stores.aws.moto_env")


def protocol_only(store: Any) -> Any:
    """``store`` behind ``tests/stores/protocol_only.py``: exactly the store protocol's members."""
    return importlib.import_module("stores.protocol_only").protocol_only(store)


def inbox_table_definition() -> dict[str, Any]:
    props = moto_env().template_resource("InboxTable")
    return {
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "GlobalSecondaryIndexes": props["GlobalSecondaryIndexes"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }


def aws_env_at(endpoint: str) -> Any:
    """An ``AwsEnv`` on a moto server another process started (a worker joining the parent's)."""
    import boto3
    from botocore.config import Config

    env = moto_env()

    def client(service: str) -> Any:
        return boto3.session.Session().client(
            service,
            endpoint_url=endpoint,
            region_name=env.REGION,
            config=Config(retries={"max_attempts": 2, "mode": "standard"}),
            **env.CREDENTIALS,
        )

    return env.AwsEnv(server=None, dynamodb=client("dynamodb"), s3=client("s3"))


@dataclass
class World:
    """One schedule's storage and the "process" acting on it (rebuilt after every crash)."""

    kind: str
    counters: Any
    tmp: Path | None = None
    clock: FakeClock = field(default_factory=lambda: FakeClock(START))
    faults: Faults = field(init=False)
    model: ReactiveModel = field(default_factory=ReactiveModel)
    raw_store: Any = None
    raw_inbox: Any = None
    aws: Any = None
    """An ``AwsEnv``: given (a worker process joining the parent's moto), else a fresh one is made."""
    hooks: AwsFaultHooks | None = None
    protocol_only: bool = False
    """The agent's store is the raw store behind ``stores.protocol_only`` (issue 23)."""

    def __post_init__(self) -> None:
        self.faults = Faults(self.counters)
        self.sink = SinkPublisher(self.faults)
        self.workflow = workflow_from_dict(WORKFLOW, "reliability")
        if self.kind == "memory":
            self._memory = (MemoryStore(), MemoryInbox())
        elif self.kind == "aws":
            if self.aws is None:
                self.aws = moto_env().fresh_env()
                self.aws.dynamodb.create_table(TableName=INBOX_TABLE, **inbox_table_definition())
            self.hooks = AwsFaultHooks(self.faults, [self.aws.dynamodb, self.aws.s3]).__enter__()
        self.restart()

    def restart(self) -> None:
        """A new process: fresh store and inbox objects over the same storage, a fresh agent and host."""
        if self.kind == "memory":
            self.raw_store, self.raw_inbox = self._memory
        elif self.kind == "filesystem":
            assert self.tmp is not None
            self.raw_store = FilesystemStore(self.tmp / "sessions")
            self.raw_inbox = FilesystemInbox(self.tmp / "sessions")
        else:
            self.raw_store = self.aws.store()
            self.raw_inbox = DynamoInbox(
                INBOX_TABLE,
                client=self.aws.dynamodb,
                clock=self.clock,
                s3_client=self.aws.s3,
                bucket=self.aws.bucket,
            )
        seen = protocol_only(self.raw_store) if self.protocol_only else self.raw_store
        self.store = FaultyStore(seen, self.faults)
        self.inbox = FaultyInbox(self.raw_inbox, self.faults)
        self.agent = create_agent(
            self.workflow,
            self.store,
            FaultyModel(self.model, self.faults),
            clock=self.clock,
            lease_ttl_s=LEASE_TTL_S,
            tools=[lookup],
            outbound=None if self.kind == "aws" else self.outbound(),  # AWS: the stream sends
        )
        self.host = Host(self.agent, self.inbox, clock=self.clock, lease_ttl_s=LEASE_TTL_S)

    def outbound(self) -> Any:
        """The dispatcher of this process: events to the world's provider, through the faulty store."""
        from archmax.outbound.aliases import MemoryAliases
        from archmax.outbound.dispatch import Dispatcher
        from archmax.outbound.transports import MailOff

        return Dispatcher(self.store, mailer=MailOff(), publisher=self.sink, aliases=MemoryAliases(), clock=self.clock)

    def stream(self, positions: list[tuple[str, int]]) -> dict[str, Any]:
        """The outbound function handed one batch of stream records ``(session, version)``, as Lambda does."""
        from archmax.handlers import outbound
        from archmax.testing import FakeLambdaContext

        return outbound.build(self.store, self.outbound())(stream_batch(positions), FakeLambdaContext())

    def close(self) -> None:
        if self.hooks is not None:
            self.hooks.__exit__(None, None, None)
            self.hooks = None

    def now(self) -> str:
        return format_instant(self.clock.now())

    def advance(self, seconds: float) -> None:
        self.clock.advance(timedelta(seconds=seconds))

    def versions(self) -> dict[str, int]:
        """``session id -> head version`` of every stored session: what ``list()`` and ``head()`` of each say.

        On AWS one strongly consistent Scan of the session items (those with a ``version``: the items
        ``list()`` scans for and ``head()`` reads, keyed by ``pk`` alone) instead of a Scan and a GetItem
        per session.
        """
        if self.kind != "aws":
            store = self.raw_store
            return {sid: head.version for sid in store.list() if (head := store.head(sid)) is not None}
        env = self.aws
        params: dict[str, Any] = {
            "TableName": env.table_name,
            "ProjectionExpression": "#pk, #version",
            "FilterExpression": "attribute_exists(#version)",
            "ExpressionAttributeNames": {"#pk": "pk", "#version": "version"},
            "ConsistentRead": True,
        }
        out: dict[str, int] = {}
        while True:
            page = env.dynamodb.scan(**params)
            out.update({item["pk"]["S"]: int(item["version"]["N"]) for item in page.get("Items", [])})
            if "LastEvaluatedKey" not in page:
                return out
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # ------------------------------------------------------------------ stored bytes

    def snapshot(self) -> dict[str, str]:
        """Every stored byte of the session store, as ``name -> sha256`` (the refused-call check)."""
        if self.kind == "memory":
            store = self.raw_store
            with store._lock:
                out = {
                    f"{sid}/chunk/{i}": _sha(chunk)
                    for sid, session in store._sessions.items()
                    for i, chunk in enumerate(session.chunks)
                }
                out.update(
                    {f"{sid}/file/{p}": _sha(b) for sid, s in store._sessions.items() for p, b in s.files.items()}
                )
                out.update({f"_specs/{h}": _sha(b) for h, b in store._specs.items()})
            return out
        if self.kind == "filesystem":
            root = self.raw_store.root
            return {
                str(p.relative_to(root)): _sha(p.read_bytes())
                for p in sorted(root.rglob("*"))
                if p.is_file() and p.relative_to(root).parts[0] not in (".locks", ".tmp")
            }
        env = self.aws
        items = env.dynamodb.scan(TableName=env.table_name, ConsistentRead=True)["Items"]
        out = {
            f"ddb/{i['pk']['S']}/{i.get('sk', {}).get('S', '')}": _sha(
                json.dumps(i, sort_keys=True, default=lambda b: bytes(b).hex()).encode()  # packed chunks are binary
            )
            for i in items
        }
        listing = env.s3.list_objects_v2(Bucket=env.bucket).get("Contents", [])
        out.update({f"s3/{o['Key']}": o["ETag"] for o in listing if "/.inbox/" not in o["Key"]})
        return out


def stream_batch(positions: list[tuple[str, int]]) -> dict[str, Any]:
    """DynamoDB Streams records of the sessions table (``NEW_IMAGE``) naming ``(session, version)``, Lambda's shape."""
    records = []
    for n, (session_id, version) in enumerate(positions, start=1):
        records.append(
            {
                "eventID": f"e{n}",
                "eventName": "MODIFY",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": {
                    "ApproximateCreationDateTime": 1735689600,
                    "Keys": {"pk": {"S": session_id}},
                    "NewImage": {"pk": {"S": session_id}, "version": {"N": str(version)}},
                    "SequenceNumber": f"{n:021d}",
                    "SizeBytes": 64,
                    "StreamViewType": "NEW_IMAGE",
                },
                "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/sessions/stream/2025-01-01T00:00:00.000",
            }
        )
    return {"Records": records}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- caller and child (issue 22)

SUB_SLUG = "sub"
PAIR_WORKFLOW = {
    **WORKFLOW,
    "states": {
        **WORKFLOW["states"],
        "work": {**WORKFLOW["states"]["work"], "tools": {"allow": ["lookup", f"archmax_workflow_{SUB_SLUG}"]}},
    },
}
"""The reliability workflow whose ``work`` state may call the child ``sub`` (§5.10)."""
SUB_WORKFLOW = {
    "instructions": "Do what the plan asks: act:<word> names the move.",
    "states": {
        "work": {
            "triggers": {"manual": {"requires": [{"name": "plan", "type": "string"}]}},
            "tools": {"allow": ["lookup"]},
            "transitions": [{"to": "review", "description": "A person checks the work."}],
        },
        "review": WORKFLOW["states"]["review"],
        "done": None,
    },
}
"""The child: the same shape (so a decision's edges fit both), its plan passed as the call's argument."""


@dataclass
class PairWorld(World):
    """A :class:`World` whose sessions call the child workflow ``sub``; children live in the same store.

    The model is :class:`~.model.PairReactiveModel` (on the world's clock). ``restart`` builds the agent
    with the child given at assembly (``create_agent(workflows=...)``).
    """

    def __post_init__(self) -> None:
        from .model import PairReactiveModel

        self.model = PairReactiveModel(self.clock)
        super().__post_init__()

    def restart(self) -> None:
        super().restart()
        self.workflow = workflow_from_dict(PAIR_WORKFLOW, "reliability")
        self.agent = create_agent(
            self.workflow,
            self.store,
            FaultyModel(self.model, self.faults),
            clock=self.clock,
            lease_ttl_s=LEASE_TTL_S,
            tools=[lookup],
            workflows={SUB_SLUG: workflow_from_dict(SUB_WORKFLOW, SUB_SLUG)},
            outbound=None if self.kind == "aws" else self.outbound(),  # as World's: AWS's stream sends
        )
        self.host = Host(self.agent, self.inbox, clock=self.clock, lease_ttl_s=LEASE_TTL_S)
