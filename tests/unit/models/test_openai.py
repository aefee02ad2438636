"""OpenAIModel against a small chat-completions server on 127.0.0.1 (DESIGN.md §5).

The server (``_chat_server.ChatServer``) is a real ``http.server`` the test starts on port 0: it
records every request body and answers with the next canned (status, JSON body), in the
chat-completions wire format.
"""

from __future__ import annotations

import re

import pytest

from archmax.errors import (
    ModelAccessError,
    ModelConfigurationError,
    ModelError,
    ModelNotFoundError,
    ModelRequestError,
    ModelThrottledError,
    ModelTruncatedError,
)
from archmax.models.base import ToolSpec
from archmax.models.openai import OpenAIModel, wire_id
from archmax.session.records import Message, ToolCall

from ._chat_server import ChatServer, completion

LOOKUP = ToolSpec(
    name="lookup_order",
    description="Find an order by id.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
)


@pytest.fixture
def server():
    s = ChatServer().start()
    yield s
    s.stop()


@pytest.fixture
def model(server):
    return OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0, env={})


def test_text_reply_maps_text_stop_reason_and_cached_token_usage(server, model, request_in):
    server.answer(
        200,
        completion(
            {"content": "It ships tomorrow."},
            usage={
                "prompt_tokens": 1200,
                "completion_tokens": 9,
                "total_tokens": 1209,
                "prompt_tokens_details": {"cached_tokens": 1024},
            },
        ),
    )

    response = model.complete(request_in(tools=[LOOKUP]))

    assert response.text == "It ships tomorrow."
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (176, 9, 1024)
    assert u.cost_usd == pytest.approx((176 * 0.15 + 9 * 0.60 + 1024 * 0.075) / 1e6)


def test_request_body_carries_system_prefix_then_state_block_and_function_tools(server, model, request_in):
    server.answer(200, completion({"content": "ok"}))

    model.complete(request_in(tools=[LOOKUP]))

    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["authorization"] == "Bearer sk-test"
    assert sent["body"]["model"] == "gpt-4o-mini"
    assert sent["body"]["messages"] == [
        {"role": "system", "content": "You are the support agent.\n\nYou are in state 'intake'."},
        {"role": "user", "content": "Where is my order?"},
    ]
    assert sent["body"]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Find an order by id.",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ]


def test_tool_calls_come_back_with_provider_ids_and_parsed_arguments(server, model, request_in):
    server.answer(
        200,
        completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order_id": "ORD-1"}'},
                    },
                    {
                        "id": "call_def",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": "{not json"},
                    },
                ],
            },
            finish="tool_calls",
        ),
    )

    response = model.complete(request_in(tools=[LOOKUP]))

    assert response.text == ""
    assert response.stop_reason == "tool_use"
    assert response.tool_calls == [
        ToolCall(id="call_abc", name="lookup_order", args={"order_id": "ORD-1"}),
        ToolCall(id="call_def", name="lookup_order", args={"_unparsed_arguments": "{not json"}),
    ]


def test_length_finish_is_a_truncated_answer_not_a_final_one(server, model, request_in):
    server.answer(200, completion({"content": "The order was"}, finish="length"))

    with pytest.raises(ModelTruncatedError, match="cut off"):
        model.complete(request_in())


def test_max_tokens_is_sent_and_configurable(server, request_in):
    for limit in (4096, 77, None):
        server.answer(200, completion({"content": "ok"}))
        kwargs = {} if limit == 4096 else {"max_tokens": limit}
        OpenAIModel("m", base_url=server.base_url, api_key="k", max_retries=0, env={}, **kwargs).complete(request_in())
    sent = [r["body"].get("max_tokens") for r in server.requests]
    assert sent == [4096, 77, None]


def test_wire_ids_are_nine_alphanumerics_and_a_call_and_its_result_map_alike():
    ids = ["note_" + "0f" * 16, "call_1", "call_abcdefghijklmnopqrstuvwx", "toolu_01A-b_c", ""]
    wired = [wire_id(i) for i in ids]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", w) for w in wired)
    assert len(set(wired)) == len(ids)
    assert wire_id("Ab3dE6gH9") == "Ab3dE6gH9"  # already fits: kept
    assert [wire_id(i) for i in ids] == wired  # deterministic across calls (and processes: no salt)


def test_history_sends_tool_calls_tool_messages_and_a_runtime_note_pair(server, model, request_in):
    note = {"note": "event"}
    history = [
        Message(role="user", content="Where is my order?"),
        Message(
            role="assistant",
            content="Which order?",
            tool_calls=[
                ToolCall(id="c1", name="archmax_wait", args={"reason": "the order id"}),
            ],
        ),
        Message(role="tool", tool_call_id="c1", name="archmax_wait", content="parked", status="success"),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="note_9", name="archmax_note", args={"note": "event"})],
            archmax=note,
        ),
        Message(
            role="tool",
            tool_call_id="note_9",
            name="archmax_note",
            content="[event] 'email_reply' arrived.",
            archmax=note,
        ),
        Message(role="user", content="It's ORD-1001."),
    ]
    server.answer(200, completion({"content": "Thanks."}))

    model.complete(request_in("clarify", messages=history, tools=[LOOKUP], handoff=True))

    body = server.requests[0]["body"]
    assert body["messages"][1:] == [
        {"role": "user", "content": "Where is my order?"},
        {
            "role": "assistant",
            "content": "Which order?",
            "tool_calls": [
                {
                    "id": wire_id("c1"),
                    "type": "function",
                    "function": {"name": "archmax_wait", "arguments": '{"reason": "the order id"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": wire_id("c1"), "content": "parked"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": wire_id("note_9"),
                    "type": "function",
                    "function": {"name": "archmax_note", "arguments": '{"note": "event"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": wire_id("note_9"), "content": "[event] 'email_reply' arrived."},
        {"role": "user", "content": "It's ORD-1001."},
    ]
    assert [t["function"]["name"] for t in body["tools"]] == ["lookup_order"]  # handoff still offers tools


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, ModelRequestError),
        (401, ModelAccessError),
        (404, ModelNotFoundError),
        (429, ModelThrottledError),
        (500, ModelError),
    ],
)
def test_error_statuses_map_to_model_errors_with_the_provider_message(server, model, request_in, status, expected):
    server.answer(status, {"error": {"message": "provider says no", "type": "invalid_request_error", "code": None}})

    with pytest.raises(expected) as info:
        model.complete(request_in())

    assert type(info.value) is expected
    assert f"HTTP {status}: provider says no" in str(info.value)
    assert info.value.__cause__ is not None


def test_unreachable_endpoint_is_a_model_error(request_in):
    server = ChatServer()  # bound but never serving: take its port, then close it
    url = server.base_url
    server.httpd.server_close()
    model = OpenAIModel("gpt-4o-mini", base_url=url, api_key="k", max_retries=0, timeout_s=5, env={})

    with pytest.raises(ModelError):
        model.complete(request_in())


def test_settings_come_from_archmax_environment_variables(server, request_in):
    env = {
        "ARCHMAX_MODEL": "openai:my-local-model",
        "ARCHMAX_API_BASE_URL": server.base_url,
        "ARCHMAX_API_KEY": "k-env",
    }
    server.answer(200, completion({"content": "hi"}))

    model = OpenAIModel(env=env, max_retries=0)
    model.complete(request_in())

    assert model.model == "my-local-model"
    assert server.requests[0]["body"]["model"] == "my-local-model"
    assert server.requests[0]["authorization"] == "Bearer k-env"


def test_no_model_name_is_a_configuration_error():
    with pytest.raises(ModelConfigurationError, match="ARCHMAX_MODEL=openai:<model>"):
        OpenAIModel(env={})


def test_openai_endpoint_without_a_key_is_a_configuration_error():
    with pytest.raises(ModelConfigurationError, match="ARCHMAX_API_KEY"):
        OpenAIModel("gpt-4o", env={})


def test_missing_openai_package_is_a_configuration_error(monkeypatch, request_in):
    import sys

    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` raise ImportError
    model = OpenAIModel("gpt-4o", api_key="k", env={})

    with pytest.raises(ModelConfigurationError, match="archmax\\[openai\\]"):
        model.complete(request_in())
