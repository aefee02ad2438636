"""Issue 22 item 4: every tool call is answered right after its message, when a child parks too.

When the child parks, its park message (what the person reads) is the caller's too (§5.10); it must be
stored after the ``archmax_workflow_check`` call's result, never between the call and its result:
OpenAI-compatible endpoints refuse ``assistant(tool_calls) → assistant(text) → tool(result)``. The
check runs on the stored transcript and on every adapter's request for the caller's next model call:
the engine's messages (what the scripted model reads), the OpenAI chat request, the Bedrock Converse
request. The checks themselves are shown to catch the broken order.

Rule source: BEHAVIOUR.md §5 (tool calls of one message are answered in order), §5.10, §7 (a note is
a call directly followed by its result); issue 22 item 4. Every store kind.
"""

from __future__ import annotations

from pathlib import Path

from archmax import create_agent
from archmax.models.base import ModelRequest
from archmax.models.bedrock import to_converse
from archmax.models.openai import to_chat
from archmax.session.records import Message, ToolCall
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import Env

from ._pair import (
    CALLER,
    LEASE_TTL_S,
    PARK_TEXT,
    PairModel,
    converse_order_problems,
    openai_order_problems,
    order_problems,
    request_order_problems,
    workspace,
)

BROKEN = [
    Message(role="user", content="go"),
    Message(role="assistant", content="", tool_calls=[ToolCall(id="w1", name="archmax_workflow_check", args={})]),
    Message(role="assistant", content=PARK_TEXT, handoff=True),
    Message(role="tool", content="parked", tool_call_id="w1", name="archmax_workflow_check", status="success"),
    Message(role="user", content="<<A>>"),
]
GOOD = [BROKEN[0], BROKEN[1], BROKEN[3], BROKEN[2], BROKEN[4]]


def _request(messages: list[Message]) -> ModelRequest:
    return ModelRequest(system="s", state_block="b", messages=messages, tools=[], state="work", session_id=CALLER)


def test_the_order_checks_refuse_a_text_between_a_call_and_its_result_and_accept_it_after() -> None:
    assert order_problems(BROKEN) and openai_order_problems(to_chat(_request(BROKEN), "m"))
    assert order_problems(GOOD) == [] and request_order_problems(_request(GOOD)) == []


def test_the_converse_check_refuses_results_that_answer_no_call_of_the_turn_before() -> None:
    orphan = [
        Message(role="user", content="go"),
        Message(role="tool", content="x", tool_call_id="zz", status="success"),
    ]
    assert converse_order_problems(to_converse(_request(orphan), "amazon.nova-lite-v1:0", max_tokens=8))


def test_a_child_that_parks_leaves_the_callers_transcript_and_next_requests_in_tool_call_order(
    env: Env, tmp_path: Path
) -> None:
    desk, _ = workspace(tmp_path)
    model = PairModel()
    agent = create_agent(desk, env.store, model, clock=env.clock, lease_ttl_s=LEASE_TTL_S)
    agent.workflow.send(CALLER, "go")
    stored = env.other_store().load(CALLER).messages
    assert any(m.content == PARK_TEXT for m in stored)  # the child's park message is the caller's too
    assert order_problems(stored) == []

    agent.workflow.deliver(CALLER, trigger="ping", message="<<A>> act:wait")  # the child parks again
    agent.workflow.deliver(CALLER, trigger="ping", message="<<B>>")  # the child finishes, the caller answers
    assert order_problems(env.other_store().load(CALLER).messages) == []
    caller_requests = [r for r in model.requests if r.session_id == CALLER]
    assert len(caller_requests) >= 2
    for request in caller_requests:
        assert request_order_problems(request) == []
