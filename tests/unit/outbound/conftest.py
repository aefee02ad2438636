"""An SMTP server on 127.0.0.1 (aiosmtpd) that keeps every message it is given."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class SmtpSink:
    """What the SMTP server received: one ``(mail_from, rcpt_tos, raw bytes)`` per message."""

    host: str
    port: int
    messages: list[tuple[str, list[str], bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"smtp://{self.host}:{self.port}"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content)))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp_server():
    """A running aiosmtpd server on 127.0.0.1; ``.messages`` fills as mail arrives."""
    from aiosmtpd.controller import Controller

    sink = SmtpSink("127.0.0.1", _free_port())
    controller = Controller(sink, hostname=sink.host, port=sink.port)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()
