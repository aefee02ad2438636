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
import logging
import os
import re
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from archmax.clock import Clock
from archmax.handlers import deliver, resolve, send, timer
from archmax.handlers.common import Handler
from archmax.hosting.http import error_response
from archmax.hosting.wiring import Collaborators, from_environment
from archmax.models.base import Model

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Host names a request's ``Host`` and ``Origin`` may name (issue 13 item 3: DNS rebinding names another)."""
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ALLOWED_METHODS = ("GET", "POST")

MAX_BODY_BYTES = 10 * 1024 * 1024
"""The largest request body read (bytes): an HTTP API's payload limit, so local and deployed refuse alike."""

# (method, path pattern, route key, handler name): the HttpApi routes of template.yaml.
ROUTES = [
    ("POST", re.compile(r"^/sessions/(?P<id>[^/]+)/messages$"), "/sessions/{id}/messages", "send"),
    ("POST", re.compile(r"^/triggers/(?P<trigger>[^/]+)$"), "/triggers/{trigger}", "send"),
    ("POST", re.compile(r"^/sessions/(?P<id>[^/]+)/deliveries$"), "/sessions/{id}/deliveries", "deliver"),
    ("POST", re.compile(r"^/sessions/(?P<id>[^/]+)/decisions$"), "/sessions/{id}/decisions", "deliver"),
    ("GET", re.compile(r"^/sessions/(?P<id>[^/]+)/quarantine$"), "/sessions/{id}/quarantine", "deliver"),
    (
        "POST",
        re.compile(r"^/sessions/(?P<id>[^/]+)/quarantine/(?P<delivery>[^/]+)/release$"),
        "/sessions/{id}/quarantine/{delivery}/release",
        "deliver",
    ),
    ("POST", re.compile(r"^/webhooks/(?P<trigger>[^/]+)$"), "/webhooks/{trigger}", "send"),
    ("GET", re.compile(r"^/sessions/(?P<id>[^/]+)$"), "/sessions/{id}", "resolve"),
    # read-only views (issue 15): the session page, transcript, trail, the list (and `/` as HTML)
    ("GET", re.compile(r"^/sessions/(?P<id>[^/]+)/view$"), "/sessions/{id}/view", "resolve"),
    ("GET", re.compile(r"^/sessions/(?P<id>[^/]+)/transcript$"), "/sessions/{id}/transcript", "resolve"),
    ("GET", re.compile(r"^/sessions/(?P<id>[^/]+)/trail$"), "/sessions/{id}/trail", "resolve"),
    ("GET", re.compile(r"^/sessions$"), "/sessions", "resolve"),
    ("GET", re.compile(r"^/$"), "/", "resolve"),
    ("POST", re.compile(r"^/resolve$"), "/resolve", "resolve"),
]

log = logging.getLogger("archmax.serve")


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
    if parts.query:  # as API Gateway sends them: decoded, a repeated name's values joined by commas
        query = parse_qs(parts.query, keep_blank_values=True)
        event["queryStringParameters"] = {k: ",".join(v) for k, v in query.items()}
    if body:
        event["body"] = text
    return event


def _loopback_authority(value: str, port: int) -> bool:
    """Whether ``host[:port]`` names the loopback and, when a port is given, this server's port."""
    parts = urlsplit(f"//{value}")
    try:
        given = parts.port
    except ValueError:
        return False
    return (parts.hostname or "") in LOOPBACK_HOSTS and given in (None, port) and not parts.username


def request_problem(method: str, headers: Mapping[str, str], port: int) -> tuple[int, str] | None:
    """Why ``archmax serve`` refuses a request before any handler runs, or ``None`` (issue 13 item 3).

    A web page the developer visits can make the browser send requests to 127.0.0.1: a no-cors POST
    (no JSON ``Content-Type``), a cross-origin ``Origin``, or, after DNS rebinding, a ``Host`` naming
    the attacker's domain. Each is refused:

    * ``Host`` missing or not a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``, with this
      port if any) -> 421 Misdirected Request;
    * ``Origin`` present and not ``http://<loopback>:<port>`` (``null`` included), or
      ``Sec-Fetch-Site`` ``cross-site``/``same-site`` -> 403;
    * a write (POST/PUT/PATCH/DELETE) whose ``Content-Type`` is not ``application/json`` -> 415
      (a browser cannot send that type cross-origin without a CORS preflight, which is refused).

    Args:
        method: The request method.
        headers: Request headers (any case).
        port: The port the server listens on.

    Returns:
        ``(status, problem)`` or ``None``.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    host = (lower.get("host") or "").strip()
    if not host or not _loopback_authority(host, port):
        return 421, f"Host {host!r} does not name this server on the loopback; use http://127.0.0.1:{port}"
    origin = lower.get("origin")
    if origin is not None:
        parts = urlsplit(origin.strip())
        try:
            same_port = (parts.port or 80) == port
        except ValueError:
            same_port = False
        if parts.scheme != "http" or not _loopback_authority(parts.netloc, port) or not same_port:
            return 403, f"cross-origin requests are refused (Origin {origin!r})"
    if (lower.get("sec-fetch-site") or "").strip().lower() in ("cross-site", "same-site"):
        return 403, "cross-site requests are refused (Sec-Fetch-Site)"
    if method in WRITE_METHODS:
        media = (lower.get("content-type") or "").split(";")[0].strip().lower()
        if media != "application/json":
            return 415, f"a {method} needs Content-Type: application/json (got {media or 'none'!r})"
    return None


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

    def __init__(self, collaborators: Collaborators, host: str, port: int, sweep_interval_s: float | None) -> None:
        self.collaborators = collaborators
        self.handlers: dict[str, Handler] = {
            "send": send.build(collaborators),
            "deliver": deliver.build(collaborators),
            "resolve": resolve.build(collaborators),
            "timer": timer.build(collaborators),
        }
        self._httpd = ThreadingHTTPServer((host, port), self._request_handler())
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://{host}:{self.port}"
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._httpd.serve_forever, name="archmax-serve", daemon=True)]
        if sweep_interval_s:
            self._threads.append(
                threading.Thread(target=self._sweep_loop, args=(sweep_interval_s,), name="archmax-sweep", daemon=True)
            )
        for thread in self._threads:
            thread.start()

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _refuse(self, status: int, message: str, error: str = "InvalidEventError") -> None:
                if self.request_version == "HTTP/0.9":
                    self.request_version = "HTTP/1.0"  # answer with a status line and headers, never 0.9
                data = json.dumps({"error": error, "message": f"invalid event: {message}"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status == 405:
                    self.send_header("Allow", ", ".join(ALLOWED_METHODS))
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                self.close_connection = True

            def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
                """Every refusal http.server makes itself (bad request line, unknown method) as JSON."""
                if code == 501:  # a method no route serves (HEAD, OPTIONS, TRACE, CONNECT, BREW...)
                    return self._refuse(405, f"method {self.command!r} is not served", "MethodNotAllowed")
                self._refuse(code if 400 <= code < 500 else 400, message or "malformed request", "BadRequest")

            def parse_request(self) -> bool:
                if not super().parse_request():
                    return False
                if self.request_version == "HTTP/0.9":
                    self.send_error(400, "HTTP/0.9 requests are not served")
                    return False
                return True

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
                self.send_error(501)

            def _serve(self) -> None:
                problem = request_problem(self.command, dict(self.headers.items()), server.port)
                if problem is not None and problem[0] != 415:  # a foreign Host or Origin: refused first
                    return self._refuse(*problem)
                if self.command not in ALLOWED_METHODS:  # no route takes PUT, PATCH or DELETE
                    return self._refuse(405, f"method {self.command!r} is not served", "MethodNotAllowed")
                if problem is not None:
                    return self._refuse(*problem)
                declared = (self.headers.get("Content-Length") or "0").strip()
                if not declared.isdigit():  # "abc", "-1", "1e3": int() would crash, read(-1) would hang
                    return self._refuse(400, f"Content-Length {declared!r} is not a byte count")
                length = int(declared)
                if length > MAX_BODY_BYTES:  # read nothing of it: API Gateway refuses it too
                    return self._refuse(413, f"the body is {length} bytes, over the {MAX_BODY_BYTES} API Gateway takes")
                body = self.rfile.read(length) if length else b""
                event = http_event(self.command, self.path, dict(self.headers.items()), body)
                name = handler_for(self.command, urlsplit(self.path).path)
                try:
                    answer = server.handlers[name](event, None)
                except Exception as exc:  # noqa: BLE001 - Lambda fails the invocation and API Gateway answers 500
                    log.exception("%s %s failed", self.command, urlsplit(self.path).path)
                    # an archmax error keeps its class; others say nothing more
                    status, problem_body = error_response(exc)
                    answer = {
                        "statusCode": status,
                        "headers": {"Content-Type": "application/json"},
                        "body": json.dumps(problem_body),
                    }
                else:
                    if int(answer.get("statusCode", 500)) >= 500:
                        # A server-side failure the handler answered itself (a typed ConfigurationError, a
                        # store outage): the operator running serve sees it, as CloudWatch shows it on Lambda.
                        log.warning("%s %s answered %s: %s", self.command, urlsplit(self.path).path,
                                    answer.get("statusCode"), str(answer.get("body") or "")[:500])  # fmt: skip
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
