"""BedrockModel over Converse, pinned with botocore's Stubber (DESIGN.md §5, BEHAVIOUR.md §7).

Stubber validates both the request we send (``expected_params``) and the canned responses
against the bedrock-runtime service model, so the shapes here are the documented ones.
Stubber answers before botocore's retry handler runs, which is why the throttling test
exercises the adapter's own retry (with an injected sleep).
"""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from archmax.errors import (
    ModelAccessError,
    ModelError,
    ModelNotFoundError,
    ModelRequestError,
    ModelThrottledError,
    ModelTruncatedError,
)
from archmax.models.base import ToolSpec
from archmax.models.bedrock import ERROR_TABLE, BedrockModel, supports_cache_point
from archmax.session.records import Message, ToolCall

SONNET = "us.anthropic.claude-sonnet-4-20250514-v1:0"
LLAMA = "meta.llama3-70b-instruct-v1:0"
LOOKUP = ToolSpec(
    name="lookup_order",
    description="Find an order by id.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)
LOOKUP_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": "lookup_order",
                "description": "Find an order by id.",
                "inputSchema": {"json": LOOKUP.parameters},
            }
        }
    ]
}


@pytest.fixture
def client():
    """A real bedrock-runtime client that never reaches the network (every call is stubbed)."""
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def stub(client):
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def converse_response(content, stop="end_turn", usage=None):
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": usage or {"inputTokens": 120, "outputTokens": 12, "totalTokens": 132},
        "metrics": {"latencyMs": 250},
    }


def system_blocks(cached: bool, state="You are in state 'intake'."):
    blocks = [{"text": "You are the support agent."}]
    if cached:
        blocks.append({"cachePoint": {"type": "default"}})
    return blocks + [{"text": state}]


def test_text_answer_maps_text_stop_reason_and_usage_with_cache_counts(client, stub, request_in):
    stub.add_response(
        "converse",
        converse_response(
            [{"text": "Your order ships tomorrow."}],
            usage={
                "inputTokens": 100,
                "outputTokens": 8,
                "totalTokens": 1108,
                "cacheReadInputTokens": 900,
                "cacheWriteInputTokens": 100,
            },
        ),
        expected_params={
            "modelId": SONNET,
            "messages": [{"role": "user", "content": [{"text": "Where is my order?"}]}],
            "system": system_blocks(cached=True),
            "inferenceConfig": {"maxTokens": 4096},
            "toolConfig": LOOKUP_CONFIG,
        },
    )
    model = BedrockModel(SONNET, client=client)

    response = model.complete(request_in(tools=[LOOKUP]))

    assert response.text == "Your order ships tomorrow."
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"
    assert response.model_id == SONNET
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_creation_tokens) == (
        100,
        8,
        900,
        100,
    )
    assert u.cost_usd == pytest.approx((100 * 3 + 8 * 15 + 900 * 0.30 + 100 * 3.75) / 1e6)


def test_model_without_prompt_caching_gets_no_cache_point(client, stub, request_in):
    stub.add_response(
        "converse",
        converse_response([{"text": "ok"}]),
        expected_params={
            "modelId": LLAMA,
            "messages": [{"role": "user", "content": [{"text": "Where is my order?"}]}],
            "system": system_blocks(cached=False),
            "inferenceConfig": {"maxTokens": 512},
        },
    )

    response = BedrockModel(LLAMA, client=client, max_tokens=512).complete(request_in(tools=[]))

    assert response.text == "ok"
    assert response.usage.cost_usd is None


def test_several_tool_uses_in_one_message_become_tool_calls_in_order(client, stub, request_in):
    stub.add_response(
        "converse",
        converse_response(
            [
                {"text": "Let me look both up."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_a1",
                        "name": "lookup_order",
                        "input": {"order_id": "ORD-1"},
                    }
                },
                {
                    "toolUse": {
                        "toolUseId": "tooluse_b2",
                        "name": "lookup_order",
                        "input": {"order_id": "ORD-2"},
                    }
                },
            ],
            stop="tool_use",
        ),
    )

    response = BedrockModel(SONNET, client=client).complete(request_in(tools=[LOOKUP]))

    assert response.text == "Let me look both up."
    assert response.tool_calls == [
        ToolCall(id="tooluse_a1", name="lookup_order", args={"order_id": "ORD-1"}),
        ToolCall(id="tooluse_b2", name="lookup_order", args={"order_id": "ORD-2"}),
    ]
    assert response.stop_reason == "tool_use"


@pytest.mark.parametrize("stop", ["max_tokens", "model_context_window_exceeded"])
def test_a_truncated_answer_is_a_model_failure_not_a_final_answer(client, stub, request_in, stop):
    stub.add_response("converse", converse_response([{"text": "The order was shipped on"}], stop=stop))

    with pytest.raises(ModelTruncatedError, match=stop) as caught:
        BedrockModel(SONNET, client=client).complete(request_in())

    assert isinstance(caught.value, ModelError)  # routed like every other model failure


def test_history_with_tool_results_and_a_runtime_note_pair_is_sent_as_alternating_turns(client, stub, request_in):
    note = {"note": "event"}
    history = [
        Message(role="user", content="Where is my order?"),
        Message(
            role="assistant",
            content="Checking.",
            tool_calls=[
                ToolCall(id="t1", name="lookup_order", args={"order_id": "ORD-1"}),
                ToolCall(id="t2", name="delete_order", args={"order_id": "ORD-1"}),
            ],
        ),
        Message(
            role="tool",
            tool_call_id="t1",
            name="lookup_order",
            content='{"status": "shipped"}',
            status="success",
        ),
        Message(role="tool", tool_call_id="t2", name="delete_order", content="not allowed here", status="blocked"),
        Message(
            role="assistant",
            content="Which order did you mean?",
            tool_calls=[
                ToolCall(id="t3", name="archmax_wait", args={"reason": "the order id"}),
            ],
        ),
        Message(role="tool", tool_call_id="t3", name="archmax_wait", content="", status="success"),
        # An [event] runtime note: an empty assistant message with one archmax_note call, then its result.
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="note_0f", name="archmax_note", args={"note": "event"})],
            archmax=note,
        ),
        Message(
            role="tool",
            tool_call_id="note_0f",
            name="archmax_note",
            content="[event] 'email_reply' arrived while the session waited in 'clarify'.",
            archmax=note,
        ),
        Message(role="user", content="It's ORD-1001."),
    ]
    stub.add_response(
        "converse",
        converse_response([{"text": "Thanks."}]),
        expected_params={
            "modelId": SONNET,
            "messages": [
                {"role": "user", "content": [{"text": "Where is my order?"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"text": "Checking."},
                        {
                            "toolUse": {
                                "toolUseId": "t1",
                                "name": "lookup_order",
                                "input": {"order_id": "ORD-1"},
                            }
                        },
                        {
                            "toolUse": {
                                "toolUseId": "t2",
                                "name": "delete_order",
                                "input": {"order_id": "ORD-1"},
                            }
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": "t1",
                                "content": [{"text": '{"status": "shipped"}'}],
                                "status": "success",
                            }
                        },
                        {
                            "toolResult": {
                                "toolUseId": "t2",
                                "content": [{"text": "not allowed here"}],
                                "status": "error",
                            }
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"text": "Which order did you mean?"},
                        {
                            "toolUse": {
                                "toolUseId": "t3",
                                "name": "archmax_wait",
                                "input": {"reason": "the order id"},
                            }
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": "t3",
                                "content": [{"text": "(no output)"}],
                                "status": "success",
                            }
                        }
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {
                            "toolUse": {
                                "toolUseId": "note_0f",
                                "name": "archmax_note",
                                "input": {"note": "event"},
                            }
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": "note_0f",
                                "content": [
                                    {"text": "[event] 'email_reply' arrived while the session waited in 'clarify'."}
                                ],
                                "status": "success",
                            }
                        },
                        {"text": "It's ORD-1001."},
                    ],
                },
            ],
            "system": system_blocks(cached=True, state="You are in state 'clarify'."),
            "inferenceConfig": {"maxTokens": 4096},
            "toolConfig": LOOKUP_CONFIG,
        },
    )

    response = BedrockModel(SONNET, client=client).complete(
        request_in("clarify", messages=history, tools=[LOOKUP], state_block="You are in state 'clarify'.")
    )

    assert response.text == "Thanks."


def test_handoff_call_still_sends_the_tool_list(client, stub, request_in):
    stub.add_response(
        "converse",
        converse_response([{"text": "A person will review this."}]),
        expected_params={
            "modelId": SONNET,
            "messages": [{"role": "user", "content": [{"text": "Where is my order?"}]}],
            "system": system_blocks(cached=True),
            "inferenceConfig": {"maxTokens": 4096},
            "toolConfig": LOOKUP_CONFIG,
        },
    )

    response = BedrockModel(SONNET, client=client).complete(request_in(tools=[LOOKUP], handoff=True))

    assert response.text == "A person will review this."


def test_transcript_opening_with_an_assistant_note_gets_a_user_opening_turn(client, stub, request_in):
    history = [
        Message(role="assistant", tool_calls=[ToolCall(id="note_1", name="archmax_note", args={"note": "event"})]),
        Message(role="tool", tool_call_id="note_1", name="archmax_note", content="[event] 'timer' arrived."),
    ]
    stub.add_response(
        "converse",
        converse_response([{"text": "Checking the bank again."}]),
        expected_params={
            "modelId": SONNET,
            "messages": [
                {"role": "user", "content": [{"text": "(The session continues.)"}]},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "toolUse": {
                                "toolUseId": "note_1",
                                "name": "archmax_note",
                                "input": {"note": "event"},
                            }
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": "note_1",
                                "content": [{"text": "[event] 'timer' arrived."}],
                                "status": "success",
                            }
                        }
                    ],
                },
            ],
            "system": system_blocks(cached=True),
            "inferenceConfig": {"maxTokens": 4096},
            "toolConfig": LOOKUP_CONFIG,
        },
    )

    assert BedrockModel(SONNET, client=client).complete(request_in(messages=history, tools=[LOOKUP])).text


def test_per_state_model_override_is_called_instead_of_the_default(client, stub, request_in):
    other = "amazon.nova-lite-v1:0"
    stub.add_response(
        "converse",
        converse_response([{"text": "ok"}]),
        expected_params={
            "modelId": other,
            "messages": [{"role": "user", "content": [{"text": "Where is my order?"}]}],
            "system": system_blocks(cached=True),
            "inferenceConfig": {"maxTokens": 4096},
        },
    )

    response = BedrockModel(SONNET, client=client).complete(request_in(tools=[], model=f"bedrock:{other}"))

    assert response.model_id == other


def test_throttling_is_retried_with_the_injected_sleep_then_succeeds(client, stub, request_in):
    stub.add_client_error("converse", "ThrottlingException", "Too many tokens", http_status_code=429)
    stub.add_client_error("converse", "ServiceUnavailableException", "Try again", http_status_code=503)
    stub.add_response("converse", converse_response([{"text": "finally"}]))
    waits: list[float] = []

    model = BedrockModel(SONNET, client=client, throttle_retries=2, throttle_backoff_s=4.0, sleep=waits.append)
    response = model.complete(request_in())

    assert response.text == "finally"
    assert len(waits) == 2
    assert 2.0 <= waits[0] <= 4.0 and 4.0 <= waits[1] <= 8.0


def test_throttling_beyond_the_retries_is_a_throttled_error_chained_to_the_cause(client, stub, request_in):
    for _ in range(2):
        stub.add_client_error("converse", "ThrottlingException", "Too many tokens", http_status_code=429)

    model = BedrockModel(SONNET, client=client, throttle_retries=1, sleep=lambda s: None)
    with pytest.raises(ModelThrottledError) as info:
        model.complete(request_in())

    assert "ThrottlingException" in str(info.value)
    assert info.value.__cause__ is not None


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("AccessDeniedException", 403, ModelAccessError),
        ("ResourceNotFoundException", 404, ModelNotFoundError),
        ("ValidationException", 400, ModelRequestError),
        ("ModelErrorException", 424, ModelError),
        ("InternalServerException", 500, ModelError),
    ],
)
def test_provider_errors_map_through_the_one_table(client, stub, request_in, code, status, expected):
    stub.add_client_error("converse", code, "provider says no", http_status_code=status)

    with pytest.raises(expected) as info:
        BedrockModel(SONNET, client=client, sleep=lambda s: None).complete(request_in())

    assert type(info.value) is expected
    assert "provider says no" in str(info.value)
    assert info.value.__cause__ is not None


def test_every_error_code_in_the_table_maps_to_a_model_error():
    assert ERROR_TABLE["AccessDeniedException"] is ModelAccessError
    assert ERROR_TABLE["ResourceNotFoundException"] is ModelNotFoundError
    assert ERROR_TABLE["ValidationException"] is ModelRequestError
    assert ERROR_TABLE["ThrottlingException"] is ModelThrottledError
    assert all(issubclass(cls, ModelError) for cls in ERROR_TABLE.values())


@pytest.mark.parametrize(
    ("model_id", "cached"),
    [
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", True),
        ("eu.anthropic.claude-3-5-haiku-20241022-v1:0", True),
        ("global.anthropic.claude-opus-4-1-20250805-v1:0", True),
        ("apac.amazon.nova-pro-v1:0", True),
        ("anthropic.claude-3-haiku-20240307-v1:0", False),
        ("meta.llama3-70b-instruct-v1:0", False),
    ],
)
def test_prompt_caching_support_is_known_by_family_through_cross_region_prefixes(model_id, cached):
    assert supports_cache_point(model_id) is cached
