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
