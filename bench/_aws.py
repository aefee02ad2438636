"""A moto server for the benchmarks, tables and bucket built from template.yaml, and a call counter.

The benchmarks' own helper (they import nothing from tests/): one ``ThreadedMotoServer`` on
127.0.0.1 with an OS-chosen port, one request at a time inside moto (as the tests' server: moto's
backends take no lock) after an optional per-request network round trip slept outside that lock
(:class:`RoundTripGate`), dummy credentials passed to every client (``os.environ`` is
neither read nor changed), the ``SessionsTable`` and ``InboxTable`` created from the template's
own properties (decoded with cfn-lint, so ``!Ref`` and friends parse), and :class:`CallCounter`,
which counts AWS operations with botocore's ``before-call`` event hooks.

Rule source: DESIGN.md §7 (benchmarks count round trips with botocore's event hooks), §6 (moto in
server mode on 127.0.0.1), CONVENTIONS.md ("nothing creates tables at run time": only tests and
benchmarks do, from the template).
"""

from __future__ import annotations

import functools
import json
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "template.yaml"
REGION = "us-east-1"
SESSIONS_TABLE = "bench-sessions"
INBOX_TABLE = "bench-inbox"
BUCKET = "bench-sessions"
PREFIX = "sessions"  # what template.yaml gives the functions (SESSIONS_PREFIX)
_CREDENTIALS = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench", "aws_session_token": "bench"}
_TABLE_KEYS = ("KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "BillingMode")


@functools.cache
def _template_json() -> str:
    from cfnlint.decode.decode import decode_str

    doc, errors = decode_str(TEMPLATE.read_text(encoding="utf-8"))
    if errors:
        raise RuntimeError(f"template.yaml does not decode: {errors}")
    # cfn-lint's nodes subclass str/dict; boto3 wants plain ones.
    return json.dumps(doc)


def template() -> dict[str, Any]:
    """template.yaml decoded (cfn-lint, so ``!Ref`` and friends parse), as plain dicts and strings (a fresh copy)."""
    return json.loads(_template_json())


def _template_properties(logical_id: str) -> dict[str, Any]:
    return template()["Resources"][logical_id]["Properties"]


def table_definition(logical_id: str) -> dict[str, Any]:
    """``create_table`` keyword arguments read from one ``AWS::DynamoDB::Table`` of template.yaml."""
    props = _template_properties(logical_id)
    return {k: props[k] for k in _TABLE_KEYS if k in props}


class RoundTripGate:
    """A WSGI app around moto's: a network round trip per request, then moto's work one request at a time.

    Each request first sleeps ``latency_ms`` (the round trip a deployed caller pays per AWS call:
    the caller waits, the service's CPU is not the caller's), *outside* the lock, so concurrent
    requests' round trips overlap as they do on a real network; then it enters ``app`` under one
    lock, so moto's own work stays serialized (its backends take no lock). ``latency_ms`` 0 (the
    default) sleeps not at all: the server as it was before the model (issue 24 goal 5).

    ``requests`` counts requests served; ``max_sleeping`` is the most requests seen sleeping their
    round trip at the same moment (the evidence that the sleep is outside the lock). ``sleep`` is
    injectable (seconds in, as :func:`time.sleep`). ``latency_ms`` may be changed between phases;
    a negative value raises ``ValueError`` and changes nothing.
    """

    def __init__(self, app: Any, latency_ms: float = 0.0, sleep: Callable[[float], None] = time.sleep) -> None:
        self._app = app
        self._sleep = sleep
        self._lock = threading.Lock()  # moto's work: one request at a time
        self._counts = threading.Lock()  # the counters only
        self._latency_ms = 0.0
        self.latency_ms = latency_ms
        self.requests = 0
        self.sleeping = 0
        self.max_sleeping = 0

    @property
    def latency_ms(self) -> float:
        """Milliseconds slept per request before moto sees it (0: none)."""
        return self._latency_ms

    @latency_ms.setter
    def latency_ms(self, value: float) -> None:
        if value < 0:
            raise ValueError(f"latency_ms must be >= 0, got {value!r}")
        self._latency_ms = float(value)

    def _round_trip(self) -> None:
        latency = self._latency_ms
        with self._counts:
            self.requests += 1
            if not latency:
                return
            self.sleeping += 1
            self.max_sleeping = max(self.max_sleeping, self.sleeping)
        try:
            self._sleep(latency / 1000)
        finally:
            with self._counts:
                self.sleeping -= 1

    def __call__(self, environ: Any, start_response: Any) -> Any:
        self._round_trip()  # outside the lock: round trips overlap
        with self._lock:
            return list(self._app(environ, start_response))


POOL_CONNECTIONS = 32
"""Connections each bench client keeps (the peer's saver is given the same, bench/peers.py): 16 threads share one."""


class MotoServer:
    """A moto server on 127.0.0.1 (port chosen by the OS), quiet, stopped with :meth:`stop`.

    ``latency_ms`` (default 0, >= 0): the network round trip each HTTP request pays before moto
    sees it (:class:`RoundTripGate`: outside the one-at-a-time lock); settable between phases.
    ``sleep`` is the gate's (tests inject one); ``gate`` exposes its request counts.
    """

    def __init__(self, latency_ms: float = 0.0, sleep: Callable[[float], None] = time.sleep) -> None:
        import logging

        from moto.server import DomainDispatcherApplication, MotoRequestHandler, ThreadedMotoServer, create_backend_app
        from werkzeug.serving import make_server

        gate = RoundTripGate(DomainDispatcherApplication(create_backend_app), latency_ms, sleep)

        class OneAtATime(ThreadedMotoServer):
            """Moto's threaded server letting one request at a time into moto (the threaded rows).

            Moto's backends take no lock: two threads' writes interleave inside it (a transaction's
            deepcopy of a table another request is changing fails with a 500), and two conditional
            writes can both succeed where DynamoDB applies each atomically. The clients stay real
            threads on real connections; only moto's own work is taken one request at a time
            (:class:`RoundTripGate`, whose round-trip sleep is outside that lock).
            """

            def _server_entry(self) -> None:  # ThreadedMotoServer's, with the app behind the gate
                self._server = make_server(self._ip_address, self._port, gate, True, request_handler=MotoRequestHandler)
                self._server_ready_event.set()
                self._server.serve_forever()

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request on stderr otherwise
        self.gate = gate
        self._server = OneAtATime(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        self._clients: dict[str, Any] = {}

    @property
    def latency_ms(self) -> float:
        """Milliseconds of round trip per request (:attr:`RoundTripGate.latency_ms`)."""
        return self.gate.latency_ms

    @latency_ms.setter
    def latency_ms(self, value: float) -> None:
        self.gate.latency_ms = value

    def client(self, service: str) -> Any:
        """The server's boto3 client for ``service`` (built once; a reset keeps connections)."""
        if service not in self._clients:
            self._clients[service] = self.new_client(service)
        return self._clients[service]

    def new_client(self, service: str) -> Any:
        """A new boto3 client for ``service`` on this server (its own event hooks)."""
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=REGION,
            config=Config(retries={"max_attempts": 2, "mode": "standard"}, max_pool_connections=POOL_CONNECTIONS),
            **_CREDENTIALS,
        )

    def fresh(self, *, stream: bool = False) -> AwsEnv:
        """Forget everything (``POST /moto-api/reset``), then create both tables and the bucket.

        With ``stream``, the sessions table has the template's change stream (``StreamSpecification``).
        """
        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=30) as answer:
            if answer.status != 200:
                raise RuntimeError(f"moto reset answered {answer.status}")
        ddb, s3 = self.client("dynamodb"), self.client("s3")
        extra = {}
        if stream:
            spec = _template_properties("SessionsTable")["StreamSpecification"]
            extra = {"StreamSpecification": {"StreamEnabled": True, **spec}}
        ddb.create_table(TableName=SESSIONS_TABLE, **table_definition("SessionsTable"), **extra)
        ddb.create_table(TableName=INBOX_TABLE, **table_definition("InboxTable"))
        s3.create_bucket(Bucket=BUCKET)
        return AwsEnv(dynamodb=ddb, s3=s3)

    def stop(self) -> None:
        self._server.stop()


@dataclass
class AwsEnv:
    """The clients of a freshly reset server; :meth:`store` and :meth:`inbox` build fresh instances."""

    dynamodb: Any
    s3: Any
    table_name: str = SESSIONS_TABLE
    inbox_table: str = INBOX_TABLE
    bucket: str = BUCKET

    def store(self, prefix: str = PREFIX) -> Any:
        """A new ``AwsStore`` (an empty cache, like a cold Lambda instance) on this table and bucket."""
        from archmax.stores.aws import AwsStore

        return AwsStore(self.table_name, self.bucket, prefix, dynamodb_client=self.dynamodb, s3_client=self.s3)

    def inbox(self, clock: Any = None) -> Any:
        """A new ``DynamoInbox`` on the inbox table."""
        from archmax.hosting.inbox_dynamo import DynamoInbox

        return DynamoInbox(self.inbox_table, client=self.dynamodb, clock=clock)


WRITE_OPERATIONS = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "PutObject", "DeleteObject"}
)
"""The operations whose request bodies count as bytes written."""


def _body_size(body: Any) -> int:
    if body is None:
        return 0
    if isinstance(body, bytes | bytearray | str):
        return len(body)
    if hasattr(body, "seek") and hasattr(body, "tell"):  # a file-like S3 body
        here = body.tell()
        body.seek(0, 2)
        size = body.tell()
        body.seek(here)
        return size
    return len(body)


class CallCounter:
    """AWS operations made through the given clients while the context is open, by ``service.Operation``.

    Counted with botocore's ``before-call.<service>.*`` hooks, so a retried request counts once
    (the operation, not the HTTP attempts). ``bytes_written`` sums the request bodies of the
    write operations (:data:`WRITE_OPERATIONS`), from ``request-created`` hooks (a retry counts
    again: it is written again). The hooks are removed on exit.
    """

    def __init__(self, *clients: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.bytes_written = 0
        self._clients = clients
        self._lock = threading.Lock()
        self._uid = f"bench-counter-{id(self)}"

    def _record(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls[f"{model.service_model.service_name}.{model.name}"] += 1

    def _record_bytes(self, request: Any, operation_name: str, **_: Any) -> None:
        if operation_name in WRITE_OPERATIONS:
            size = _body_size(request.body)
            with self._lock:
                self.bytes_written += size

    def __enter__(self) -> Self:
        for client in self._clients:
            service = client.meta.service_model.service_name
            client.meta.events.register(f"before-call.{service}.*", self._record, unique_id=self._uid)
            client.meta.events.register(
                f"request-created.{service}.*", self._record_bytes, unique_id=self._uid + "-bytes"
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self._clients:
            service = client.meta.service_model.service_name
            client.meta.events.unregister(f"before-call.{service}.*", unique_id=self._uid)
            client.meta.events.unregister(f"request-created.{service}.*", unique_id=self._uid + "-bytes")

    @property
    def total(self) -> int:
        """Every call counted."""
        return sum(self.calls.values())

    def service_total(self, service: str) -> int:
        """Calls to one service (``"dynamodb"``, ``"s3"``)."""
        return sum(n for op, n in self.calls.items() if op.startswith(service + "."))

    def detail(self) -> str:
        """``Operation×n`` for every operation seen, sorted, e.g. ``GetItem×2, PutObject×1``."""
        return ", ".join(f"{op.split('.', 1)[1]}×{n}" for op, n in sorted(self.calls.items()))
