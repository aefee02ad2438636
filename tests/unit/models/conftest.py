"""Helpers shared by the model adapter tests."""

from __future__ import annotations

import pytest

from archmax.models.base import ModelRequest, ToolSpec
from archmax.session.records import Message


def make_request(state: str = "intake", *, messages: list[Message] | None = None, **kw) -> ModelRequest:
    """A small but realistic model call positioned in ``state``."""
    return ModelRequest(
        system=kw.pop("system", "You are the support agent."),
        state_block=kw.pop("state_block", f"You are in state '{state}'."),
        messages=messages if messages is not None else [Message(role="user", content="Where is my order?")],
        tools=kw.pop("tools", [ToolSpec(name="lookup_order", description="Find an order by id.")]),
        state=state,
        session_id=kw.pop("session_id", "chat-42"),
        **kw,
    )


@pytest.fixture
def request_in():
    """Build a request in a given state: ``request_in("clarify")``."""
    return make_request
