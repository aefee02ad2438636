"""The moto server every AWS test talks to, and the table and bucket built from template.yaml.

Plain functions, no fixtures: ``tests/stores/aws/conftest.py`` and the conformance registry
(``tests/stores/conformance/conftest.py``) both import this one module (``stores.aws.moto_env``),
so a pytest process (one per xdist worker) starts exactly one server.

Rule source: DESIGN.md §6 (moto in server mode on 127.0.0.1, reset between tests) and
CONVENTIONS.md ("tests build their tables from the template's own properties so drift fails a
test"; "no table creation at run time" — only tests create tables, and only from the template).
"""

from __future__ import annotations

import functools
import io
import json
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / "template.yaml"
REGION = "us-east-1"
TABLE_NAME = "archmax-sessions-test"
BUCKET = "archmax-sessions-test"
# Dummy credentials passed explicitly to every client: nothing reads or mutates os.environ.
CREDENTIALS = {
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
    "aws_session_token": "testing",
}


def template_resource(logical_id: str, template: Path = TEMPLATE) -> dict[str, Any]:
    """The ``Properties`` of one resource of ``template.yaml``, intrinsics decoded (``!Ref`` -> ``{"Ref": ...}``).

    A fresh copy on every call (callers may change it).
    """
    return json.loads(_resources_json(template, template.stat().st_mtime_ns))[logical_id]["Properties"]


@functools.lru_cache(maxsize=4)
def _resources_json(template: Path, _mtime_ns: int) -> str:
    """The template's ``Resources`` as plain JSON, decoded once per file version (a cfn-lint decode
    of the whole template took about half of each AWS reliability schedule's set-up)."""
    from cfnlint.decode.decode import decode_str

    doc, errors = decode_str(template.read_text(encoding="utf-8"))
    if errors:
        raise AssertionError(f"template.yaml does not decode: {errors}")
    # Through JSON: cfn-lint's nodes subclass str/dict, boto3 wants plain ones.
    return json.dumps(doc["Resources"])


def table_definition(template: Path = TEMPLATE) -> dict[str, Any]:
    """``create_table`` keyword arguments read from ``SessionsTable`` in template.yaml.

    Only KeySchema, AttributeDefinitions, GlobalSecondaryIndexes and BillingMode are copied: the
    parts that decide whether the store's reads and writes work. Drift between template and
    store then fails the AWS tests.
    """
    props = template_resource("SessionsTable", template)
    out: dict[str, Any] = {
        "KeySchema": props["KeySchema"],
        "AttributeDefinitions": props["AttributeDefinitions"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if props.get("GlobalSecondaryIndexes"):
        out["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    return out


class _SerializedApp:
    """A WSGI wrapper that lets one request at a time into moto, its request body read whole first.

    DynamoDB applies each conditional write atomically; moto's backends do not lock, so two
    concurrent ``attribute_not_exists(pk)`` puts can both succeed there. Serializing requests on
    the server restores the guarantee the store relies on, while the clients stay real threads
    making real HTTP calls concurrently.

    The body (``Content-Length`` bytes, or every chunk of a chunked one) is read before moto runs and
    handed to it from memory, so the connection stands at the next request line whatever moto read:
    what lets :func:`_threaded_moto_server` keep connections alive.
    """

    def __init__(self, app: Any) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: Any, start_response: Any) -> Any:
        from werkzeug.wsgi import get_input_stream

        environ["wsgi.input"] = io.BytesIO(get_input_stream(environ).read())
        with self._lock:
            return list(self._app(environ, start_response))


def _threaded_moto_server() -> Any:
    from moto.server import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        ThreadedMotoServer,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    class QuietHandler(MotoRequestHandler):
        """Moto's handler, quiet, answering on a kept-alive HTTP/1.1 connection.

        Werkzeug's ``run_wsgi`` closes every connection (it cannot know the app read the whole body,
        and drains the socket after each answer), so each AWS call paid a TCP connect and a new server
        thread. Here :class:`_SerializedApp` has read the body, the answer (moto's, whole) goes out with
        its length, and the connection serves the client's next call; a client's ``Connection: close``
        still closes it. ``TCP_NODELAY``: headers and body are two writes, Nagle would hold the second.
        """

        disable_nagle_algorithm = True

        def log_request(self, *args: Any, **kwargs: Any) -> None:
            pass  # one line per request on stderr drowns test output

        def run_wsgi(self) -> None:
            if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            started: list[Any] = []

            def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                started[:] = [status, headers]
                return None  # moto answers by its iterable, never by write()

            try:
                body = b"".join(self.server.app(self.make_environ(), start_response))
            except Exception:  # noqa: BLE001 - what werkzeug does: a 500, and this connection ends
                self.close_connection = True
                self.send_error(500)
                return
            status, headers = started
            code_text, _, reason = status.partition(" ")
            code = int(code_text)
            self.send_response(code, reason)
            for name, value in headers:
                self.send_header(name, value)
            bodiless = self.command == "HEAD" or code < 200 or code in (204, 304)
            if not bodiless and not any(name.lower() == "content-length" for name, _ in headers):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not bodiless:
                self.wfile.write(body)
            self.wfile.flush()

    class SerializedMotoServer(ThreadedMotoServer):
        # Same as ThreadedMotoServer._server_entry, with the app wrapped in _SerializedApp.
        def _server_entry(self) -> None:
            app = _SerializedApp(DomainDispatcherApplication(create_backend_app))
            self._server = make_server(self._ip_address, self._port, app, True, request_handler=QuietHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return SerializedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)


class MotoServer:
    """One ``ThreadedMotoServer`` on 127.0.0.1 with an OS-chosen port (requests serialized, see above)."""

    def __init__(self) -> None:
        self._server = _threaded_moto_server()
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"

    def reset(self) -> None:
        """Forget every table, item, bucket and object (moto's ``POST /moto-api/reset``)."""
        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200

    def client(self, service: str) -> Any:
        """A boto3 client for ``service`` pointed at this server with dummy credentials."""
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=REGION,
            config=Config(retries={"max_attempts": 2, "mode": "standard"}, max_pool_connections=32),
            **CREDENTIALS,
        )

    def stop(self) -> None:
        self._server.stop()


_SERVER: MotoServer | None = None


def server() -> MotoServer:
    """The process's moto server, started on first use."""
    global _SERVER
    if _SERVER is None:
        _SERVER = MotoServer()
    return _SERVER


def stop_server() -> None:
    """Stop the process's server if it runs (session teardown)."""
    global _SERVER
    if _SERVER is not None:
        _SERVER.stop()
        _SERVER = None


@dataclass
class AwsEnv:
    """A freshly reset moto with the sessions table and bucket built from template.yaml."""

    server: MotoServer
    dynamodb: Any
    s3: Any
    table_name: str = TABLE_NAME
    bucket: str = BUCKET

    def store(self, prefix: str = "", **kwargs: Any) -> Any:
        """An ``AwsStore`` on this table and bucket with the injected clients."""
        from archmax.stores.aws import AwsStore

        return AwsStore(
            self.table_name, self.bucket, prefix, dynamodb_client=self.dynamodb, s3_client=self.s3, **kwargs
        )


_CLIENTS: dict[str, Any] = {}


def fresh_env() -> AwsEnv:
    """Reset the server, then create the table (from the template) and the bucket.

    Clients are built once per process and reused: a reset forgets data, not connections.
    """
    srv = server()
    srv.reset()
    if not _CLIENTS:
        _CLIENTS["dynamodb"] = srv.client("dynamodb")
        _CLIENTS["s3"] = srv.client("s3")
    ddb, s3 = _CLIENTS["dynamodb"], _CLIENTS["s3"]
    ddb.create_table(TableName=TABLE_NAME, **table_definition())
    s3.create_bucket(Bucket=BUCKET)
    return AwsEnv(server=srv, dynamodb=ddb, s3=s3)


class CallLog:
    """AWS operations seen through botocore's ``before-call`` event hooks, in order.

    Use as a context manager around the code to count; the hooks are removed on exit, since
    clients are shared between tests.
    """

    def __init__(self, *clients: Any) -> None:
        self.calls: list[str] = []
        self._clients = clients
        self._lock = threading.Lock()

    def _record(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append(f"{model.service_model.service_name}.{model.name}")

    def __enter__(self) -> Self:
        for client in self._clients:
            service = client.meta.service_model.service_name
            client.meta.events.register(f"before-call.{service}.*", self._record, unique_id=f"calllog-{id(self)}")
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self._clients:
            service = client.meta.service_model.service_name
            client.meta.events.unregister(f"before-call.{service}.*", unique_id=f"calllog-{id(self)}")

    def count(self, name: str | None = None) -> int:
        """How many calls were made (of one operation, e.g. ``"dynamodb.Query"``, when named)."""
        return len(self.calls) if name is None else self.calls.count(name)
