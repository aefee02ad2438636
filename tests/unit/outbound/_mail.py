"""Helpers for the outbound tests: the demo's support inbox, its first email, and replies to what we sent."""

from __future__ import annotations

import email.policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from archmax import create_agent
from archmax.clock import FakeClock
from archmax.inbound.email import parse_email
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import Firing

REPO = Path(__file__).resolve().parents[3]
SUPPORT_INBOX = REPO / "examples" / "workflows" / "support-inbox"
FIRST_EML = SUPPORT_INBOX / "emails" / "01-first.eml"
SCRIPT = SUPPORT_INBOX / "model.yaml"
CUSTOMER_ID = "3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"


def support_agent(store: Any, *, outbound: Any = False, clock: FakeClock | None = None, **kwargs: Any) -> Any:
    """The demo's support-inbox agent over ``store`` with its scripted model (a fresh script walk)."""
    return create_agent(
        SUPPORT_INBOX,
        store,
        ScriptedModel.from_file(SCRIPT),
        outbound=outbound,
        clock=clock or FakeClock("2025-01-14T10:00:00.000Z"),
        **kwargs,
    )


def send_mail(agent: Any, firing: Firing) -> Any:
    """Hand a parsed mail to its conversation's session, as ``archmax email`` does."""
    resolved = agent.workflow.resolve_session(trigger=firing.trigger, variables=firing.variables)
    return agent.workflow.send(
        resolved.session_id,
        firing.message,
        trigger=firing.trigger,
        variables=firing.variables,
        files=dict(firing.files) or None,
        delivery_id=firing.delivery_id,
    )


def first_mail() -> Firing:
    return parse_email(FIRST_EML.read_bytes())


def parse_raw(raw: bytes) -> EmailMessage:
    return BytesParser(policy=email.policy.default).parsebytes(raw)  # type: ignore[return-value]


def reply_mail(*, text: str = "It's ORD-1001.", to: str = "support@example.com", **headers: str) -> bytes:
    """A customer's reply from Dana; ``headers`` (In_Reply_To=..., References=...) name the threading kept.

    Written as raw lines, as a mail client does: a long id stays one unfolded token.
    """
    lines = [
        "From: Dana Rivers <dana.rivers@example.org>",
        f"To: {to}",
        "Subject: Re: Question about the =?UTF-8?Q?caf=C3=A9?= grinder",
        "Message-ID: <dana-reply-1@example.org>",
        *(f"{name.replace('_', '-')}: {value}" for name, value in headers.items()),
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=UTF-8",
        "",
        text,
        "",
    ]
    return "\r\n".join(lines).encode("utf-8")
