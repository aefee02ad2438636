"""Adversarial: raw HTTP requests that lie about their body, sent to ``archmax serve`` on 127.0.0.1.

A request whose ``Content-Length`` is not a byte count must get a 400 (not a dropped connection,
not a handler thread blocked reading to end-of-stream), and one over API Gateway's payload limit a
413 without the body being read; neither writes anything.

Rule sources: issue 4 item 5 (``archmax serve``: requests turned into API Gateway v2 events, as the
HttpApi would send them, so its 10 MB payload limit applies), DESIGN.md §4 (bad input gets a 4xx
with a JSON body naming the problem; nothing is half-written).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archmax.models.scripted import ScriptedModel
from archmax.serve import MAX_BODY_BYTES, serve

from ._aws_env import PARK, SUPPORT_INBOX


@pytest.fixture
def server(tmp_path: Path, clock: Any) -> Iterator[Any]:
    running = serve(
        SUPPORT_INBOX,
        root=tmp_path / "sessions",
        port=0,
        sweep_interval_s=None,
        model=ScriptedModel(PARK),
        clock=clock,
        env={},
    )
    running.root = tmp_path / "sessions"
    yield running
    running.stop()


def exchange(url: str, head: bytes, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """Send one raw request; return the status and JSON body (the server closes or sets the length)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + b"\r\n\r\n" + body)
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                pytest.fail(f"no answer; got so far: {data[:200]!r}")
            if not chunk:
                break
            data += chunk
            headers, _, rest = data.partition(b"\r\n\r\n")
            length = [
                int(line.split(b":")[1])
                for line in headers.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ]
            if length and len(rest) >= length[0]:
                break
    assert data, "the server dropped the connection without an answer"
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(data.partition(b"\r\n\r\n")[2])


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.mark.parametrize("declared", [b"abc", b"-1", b"1e3", b"12 34", b"0x10"])
def test_a_content_length_that_is_not_a_byte_count_is_a_400_and_writes_nothing(server: Any, declared: bytes) -> None:
    head = (
        b"POST /sessions/chat-1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + declared
    )
    status, payload = exchange(server.url, head, b'{"message": "hi", "trigger": "email_received"}')
    assert status == 400 and payload["error"] == "InvalidEventError" and "Content-Length" in payload["message"]
    assert all("chat-1" not in f for f in files(server.root))


def test_a_body_declared_over_api_gateways_limit_is_a_413_before_any_of_it_is_read(server: Any) -> None:
    head = (
        b"POST /sessions/chat-1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(MAX_BODY_BYTES + 1).encode()
    )
    status, payload = exchange(server.url, head, b"{")  # the rest never comes: the server must not wait for it
    assert status == 413 and payload["error"] == "InvalidEventError"
    assert all("chat-1" not in f for f in files(server.root))


def test_a_well_formed_request_after_a_refused_one_is_served(server: Any) -> None:
    exchange(server.url, b"POST /sessions/chat-1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1")
    raw = b'{"message": "About my order", "trigger": "email_received"}'
    head = (
        b"POST /sessions/chat-1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(raw)).encode()
    )
    status, payload = exchange(server.url, head, raw)
    assert status == 202 and payload["session_id"] == "chat-1"


# --- issue 13 item 3: only localhost can drive `archmax serve` (CSRF, DNS rebinding, odd methods) ---


def raw(url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes; return status, headers and body as the server answered them (read to close)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1."), f"not an HTTP/1.x status line: {lines[0]!r}"
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def authority(server: Any) -> str:
    return server.url.removeprefix("http://")


def post(server: Any, headers: str, body: bytes = b'{"message": "from a web page"}') -> tuple[int, dict[str, Any]]:
    head = (
        f"POST /sessions/victim/messages HTTP/1.1\r\n{headers}Content-Length: {len(body)}\r\nConnection: close"
    ).encode()
    return exchange(server.url, head, body)


def test_a_no_cors_post_from_a_web_page_is_refused_and_writes_nothing(server: Any) -> None:
    # what fetch(url, {method: "POST", mode: "no-cors", body}) sends: text/plain, a foreign Origin
    status, body = post(
        server,
        f"Host: {authority(server)}\r\nOrigin: https://evil.example\r\nContent-Type: text/plain;charset=UTF-8\r\n",
    )
    assert status == 403 and "Origin" in body["message"]
    status, body = post(server, f"Host: {authority(server)}\r\n")  # no Content-Type at all
    assert status == 415 and "application/json" in body["message"]
    status, body = post(server, f"Host: {authority(server)}\r\nContent-Type: text/plain\r\n")
    assert status == 415
    assert files(server.root) == []


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",
        "http://127.0.0.1:1",
        "https://127.0.0.1:{port}",
        "http://localhost.evil.example:{port}",
    ],
)
def test_a_cross_origin_request_is_a_403_even_with_a_json_body(server: Any, origin: str) -> None:
    origin = origin.format(port=server.port)
    status, _ = post(server, f"Host: {authority(server)}\r\nOrigin: {origin}\r\nContent-Type: application/json\r\n")
    assert status == 403
    assert files(server.root) == []


@pytest.mark.parametrize(
    "host", ["rebind.evil.example", "rebind.evil.example:{port}", "127.0.0.1.evil.example", "", "127.0.0.1:1"]
)
def test_a_host_that_does_not_name_the_loopback_is_refused_so_dns_rebinding_reads_nothing(
    server: Any, host: str
) -> None:
    host = host.format(port=server.port)
    header = f"Host: {host}\r\n" if host else ""
    status, _, body = raw(server.url, f"GET /sessions/victim HTTP/1.1\r\n{header}Connection: close\r\n\r\n".encode())
    assert status == 421 and json.loads(body)["error"] == "InvalidEventError"


def test_same_origin_requests_naming_the_loopback_are_served(server: Any) -> None:
    for host in (authority(server), f"localhost:{server.port}", f"[::1]:{server.port}"):
        origin = f"http://{host}"
        status, answer = post(
            server, f"Host: {host}\r\nOrigin: {origin}\r\nContent-Type: application/json; charset=utf-8\r\n"
        )
        assert status == 202, answer
        status, _, _ = raw(
            server.url, f"GET /sessions/victim HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
        )
        assert status == 200


@pytest.mark.parametrize(
    "method", ["HEAD", "OPTIONS", "TRACE", "CONNECT", "BREW", "PROPFIND", "PUT", "PATCH", "DELETE"]
)
def test_every_other_method_is_a_json_405(server: Any, method: str) -> None:
    status, headers, body = raw(
        server.url,
        f"{method} /sessions/victim HTTP/1.1\r\nHost: {authority(server)}\r\nConnection: close\r\n\r\n".encode(),
    )  # PUT, PATCH and DELETE carry no JSON Content-Type here: still a 405, not a 415 (new-user finding)
    assert status == 405 and headers["content-type"] == "application/json" and "GET" in headers["allow"]
    if method != "HEAD":
        assert json.loads(body)["error"] == "MethodNotAllowed"
    assert files(server.root) == []


@pytest.mark.parametrize(
    "request_line",
    [
        b"GET /sessions/victim",
        b"GARBAGE",
        b"GET /x HTTP/9.9",
        b"GET /x HTTP/1.1 extra",
        b"GET /x FTP/1.0",
        b"\x00\xff\xfe",
    ],
)
def test_a_malformed_or_http_0_9_request_line_gets_a_json_4xx_not_html(server: Any, request_line: bytes) -> None:
    status, headers, body = raw(server.url, request_line + b"\r\n\r\n")
    assert 400 <= status < 500 and headers["content-type"] == "application/json"
    assert json.loads(body)["error"] in ("BadRequest", "MethodNotAllowed")
