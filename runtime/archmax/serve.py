"""``archmax serve``: the Lambda handlers on 127.0.0.1, without Docker.

Rule source: issue 4 item 5 (HTTP requests turned into API Gateway v2 events, the sweep on a
timer, the filesystem store by default or the AWS store against a given endpoint) and DESIGN.md §4
(the same send/deliver/resolve/timer handlers). Collaborators come from :mod:`archmax.hosting.wiring`
exactly as in Lambda; the inbox is drained inline (no self-invoke).

Example:
    >>> server = serve("examples/workflows/support-inbox", port=0)  # doctest: +SKIP
    >>> server.url  # doctest: +SKIP
    'http://127.0.0.1:54321'
    >>> server.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from archmax.clock import Clock
from archmax.handlers import deliver, resolve, send, timer
from archmax.handlers.common import Handler
from archmax.hosting.wiring import Collaborators, from_environment
from archmax.models.base import Model

MAX_BODY_BYTES = 10 * 1024 * 1024
"""The largest request body read (bytes): an HTTP API's payload limit, so local and deployed refuse alike."""

# (method, path pattern, route key, handler name): the HttpApi routes of template.yaml.
ROUTES = [
    ("POST", re.compile(r"^/sessions/(?P<id>[^/]+)/messages$"), "/sessions/{id}/messages", "send"),
    ("POST", re.compile(r"^/triggers/(?P<trigger>[^/]+)$"), "/triggers/{trigger}", "send"),
    ("POST", re.compile(r"^/sessions/(?P<id>[^/]+)/deliveries$"), "/sessions/{id}/deliveries", "deliver"),
    ("POST", re.compile(r"^/sessions/(?P<id>[^/]+)/decisions$"), "/sessions/{id}/decisions", "deliver"),
    ("GET", re.compile(r"^/sessions/(?P<id>[^/]+)$"), "/sessions/{id}", "resolve"),
    ("POST", re.compile(r"^/resolve$"), "/resolve", "resolve"),
]


def http_event(method: str, target: str, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """An API Gateway HTTP API (v2) event for one request, as the HttpApi would send it.

    Args:
        method: ``GET``/``POST``/...
        target: The request target (``/sessions/a%2Fb?x=1``).
        headers: Request headers (names are lower-cased, as API Gateway does).
        body: Raw body bytes; UTF-8 text is passed as is, anything else base64-encoded.

    Returns:
        The event; ``routeKey``/``pathParameters`` are filled when a route of :data:`ROUTES` matches
        (path parameters URL-decoded, as API Gateway does), else ``routeKey`` is ``$default``.
    """
    parts = urlsplit(target)
    route_key, params = "$default", None
    for verb, pattern, key, _name in ROUTES:
        match = pattern.match(parts.path)
        if match and verb == method:
            route_key, params = f"{method} {key}", {k: unquote(v) for k, v in match.groupdict().items()}
            break
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "archmax-serve",
            "domainName": "127.0.0.1",
            "http": {"method": method, "path": parts.path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": encoded,
    }
    if params:
        event["pathParameters"] = params
    if body:
        event["body"] = text
    return event


def handler_for(method: str, path: str) -> str:
    """The handler (``send``/``deliver``/``resolve``) serving a request; ``resolve`` when none matches (404)."""
    for verb, pattern, _key, name in ROUTES:
        if verb == method and pattern.match(path):
            return name
    return "resolve"


class LocalServer:
    """A running ``archmax serve``: the HTTP server thread and the sweep thread.

    Attributes:
        url: ``http://127.0.0.1:<port>``.
        collaborators: What the handlers call (agent, host, inbox).
    """

    def __init__(
        self, collaborators: Collaborators, host: str, port: int, sweep_interval_s: float | None
    ) -> None:
        self.collaborators = collaborators
        self.handlers: dict[str, Handler] = {
            "send": send.build(collaborators),
            "deliver": deliver.build(collaborators),
            "resolve": resolve.build(collaborators),
            "timer": timer.build(collaborators),
        }
        self._httpd = ThreadingHTTPServer((host, port), self._request_handler())
        self.url = f"http://{host}:{self._httpd.server_address[1]}"
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._httpd.serve_forever, name="archmax-serve", daemon=True)
        ]
        if sweep_interval_s:
            self._threads.append(
                threading.Thread(
                    target=self._sweep_loop, args=(sweep_interval_s,), name="archmax-sweep", daemon=True
                )
            )
        for thread in self._threads:
            thread.start()

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _refuse(self, status: int, message: str) -> None:
                data = json.dumps({"error": "InvalidEventError", "message": f"invalid event: {message}"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            def _serve(self) -> None:
                declared = (self.headers.get("Content-Length") or "0").strip()
                if not declared.isdigit():  # "abc", "-1", "1e3": int() would crash, read(-1) would hang
                    return self._refuse(400, f"Content-Length {declared!r} is not a byte count")
                length = int(declared)
                if length > MAX_BODY_BYTES:  # read nothing of it: API Gateway refuses it too
                    return self._refuse(413, f"the body is {length} bytes, over the {MAX_BODY_BYTES} API Gateway takes")
                body = self.rfile.read(length) if length else b""
                event = http_event(self.command, self.path, dict(self.headers.items()), body)
                name = handler_for(self.command, urlsplit(self.path).path)
                answer = server.handlers[name](event, None)
                payload = answer.get("body") or ""
                data = base64.b64decode(payload) if answer.get("isBase64Encoded") else payload.encode("utf-8")
                self.send_response(int(answer.get("statusCode", 500)))
                for key, value in (answer.get("headers") or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a line per request on stderr buries the server's own output

        return Handler

    def sweep_once(self) -> dict[str, Any]:
        """Run the timer handler once with a classic scheduled event (what the sweep thread does)."""
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "detail": {},
        }
        return self.handlers["timer"](event, None)

    def _sweep_loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            try:
                self.sweep_once()
            except Exception as exc:  # noqa: BLE001 - keep the loop alive; the next sweep retries
                print(f"archmax serve: sweep failed: {exc}")

    def stop(self) -> None:
        """Stop both threads and close the socket."""
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=5)


def serve(
    workflow: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] = "sessions",
    host: str = "127.0.0.1",
    port: int = 8080,
    sweep_interval_s: float | None = 60.0,
    model: Model | None = None,
    clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
) -> LocalServer:
    """Start the handlers on ``host:port`` and return the running server.

    Args:
        workflow: The workflow folder (``WORKFLOW_DIR``).
        root: The filesystem store's folder (``ARCHMAX_ROOT``), used unless ``env`` names
            ``SESSIONS_TABLE`` and ``SESSIONS_BUCKET`` (the AWS store; point boto3 at a local
            endpoint with ``AWS_ENDPOINT_URL``).
        host: The address to bind; 127.0.0.1 by default, so nothing outside the machine can call it.
        port: The port; 0 picks a free one (see :attr:`LocalServer.url`).
        sweep_interval_s: Seconds between sweeps (due parks, stranded inboxes); ``None`` for none.
        model: A model instead of ``ARCHMAX_MODEL``.
        clock: An injected clock.
        env: Settings (default ``os.environ``); see :mod:`archmax.hosting.wiring`.

    Returns:
        A :class:`LocalServer`; call ``stop()`` to end it.

    Raises:
        WorkflowSpecError: the workflow does not load. OSError: the port is taken.
    """
    settings = dict(os.environ if env is None else env)
    settings.update({"WORKFLOW_DIR": str(workflow), "ARCHMAX_ROOT": str(root), "ARCHMAX_DRAIN": "inline"})
    collaborators = from_environment(settings, model=model, clock=clock)
    return LocalServer(collaborators, host, port, sweep_interval_s)


def main_loop(server: LocalServer) -> None:
    """Block until Ctrl-C, then stop the server (what the CLI's ``serve`` command runs)."""
    print(f"archmax serve: listening on {server.url} (Ctrl-C to stop)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
