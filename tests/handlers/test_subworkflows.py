"""Sub-workflows through the Lambda handlers: a caller parked through its child, resumed by the same handlers.

Rule source: BEHAVIOUR.md §5.10 (a child that parks makes the caller park; deliveries and decisions
sent to the caller are forwarded to the child; when the child finishes the caller resumes with a
``[sub-workflow: <slug>]`` note) and issue 14 ("a child session is an ordinary session of the same
store; a delivery to a parent reaches its parked child through the same handlers"). Both backends:
the filesystem deployment and AwsStore + DynamoDB inbox on moto.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import event
from .test_views_routes import get

BACKENDS = ["filesystem", "aws"]

CALLER = {
    "states": {
        "ask": {
            "triggers": {"manual": None},
            "tools": {"allow": ["archmax_workflow_lookup"]},
            "transitions": [{"to": "done", "description": "Answered."}],
        },
        "done": None,
    }
}
LOOKUP = {
    "states": {
        "find": {
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "A person approves the refund."}],
        },
        "review": {"type": "human", "transitions": [{"to": "approved", "description": "Approved.", "type": "approve"}]},
        "approved": None,
    }
}  # fmt: skip


@pytest.fixture
def caller(tmp_path: Path) -> Path:
    for slug, doc in (("caller", CALLER), ("lookup", LOOKUP)):
        folder = tmp_path / "workflows" / slug
        folder.mkdir(parents=True)
        (folder / "workflow.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path / "workflows" / "caller"


@pytest.fixture(params=BACKENDS)
def deploy(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def message_event(session_id: str, text: str) -> dict[str, Any]:
    evt = event("apigw_send_message.json")
    evt["rawPath"] = f"/sessions/{session_id}/messages"
    evt["pathParameters"] = {"id": session_id}
    evt["body"] = json.dumps({"message": text})
    return evt


def test_a_delivery_to_a_caller_parked_through_its_child_resumes_the_child_and_then_the_caller(deploy, caller):
    script = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number"}}},  # the child
        {"say": "ORD-1001 is on its way."},  # the child, resumed by the delivery
        {"say": "Your order ORD-1001 is on its way."},  # the caller, back in 'ask'
    ]
    d = deploy(script, caller)
    agent = d.collaborators.agent
    assert d.call("send", message_event("AAQk-1", "Where is my order?"))["statusCode"] == 202
    parked = agent.sessions.get("AAQk-1")
    child = agent.sessions.get("AAQk-1~ask:lookup:1")
    assert (parked.status, parked.state, parked.wait_reason) == ("awaiting_input", "ask", "the order number")
    assert (child.status, child.workflow, child.parent_session_id) == ("awaiting_input", "lookup", "AAQk-1")

    answer = d.call("deliver", event("apigw_deliver.json"))  # session AAQk-1, trigger email_reply
    assert answer["statusCode"] == 200
    out = json.loads(answer["body"])
    assert (out["kind"], out["state"], out["reply"]) == ("completed", "ask", "Your order ORD-1001 is on its way.")
    assert agent.sessions.get("AAQk-1~ask:lookup:1").status == "completed"
    child_vars = agent.store.load("AAQk-1~ask:lookup:1").variables
    assert child_vars["reply_body"].value == "It's ORD-1001."  # the delivery reached the child
    notes = [m.content for m in agent.sessions.messages("AAQk-1") if m.role == "tool"]
    assert "[sub-workflow: lookup] ORD-1001 is on its way." in notes


def test_a_decision_sent_to_the_caller_through_the_deliver_function_decides_the_child(deploy, caller):
    script = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"call": {"archmax_advance": {"to": "review", "reason": "a refund of 40 EUR"}}},  # the child
        {"say": "Please approve the 40 EUR refund."},  # the child's handoff
        {"say": "Refund approved."},  # the child in 'approved'
        {"say": "Your refund of 40 EUR is approved."},  # the caller
    ]
    d = deploy(script, caller)
    out = d.collaborators.agent.workflow.send("refund-7", "Refund ORD-7, please.")
    assert (out.kind, out.parked_channel, out.delegation["session_id"]) == (
        "parked",
        "decision",
        "refund-7~ask:lookup:1",
    )
    answer = d.call("deliver", event("apigw_decision.json"))  # {"to": "approved", ...}
    assert answer["statusCode"] == 200
    body = json.loads(answer["body"])
    assert (body["kind"], body["reply"]) == ("completed", "Your refund of 40 EUR is approved.")
    assert d.collaborators.agent.store.load("refund-7~ask:lookup:1").position == "approved"


def deliver_event(session_id: str) -> dict[str, Any]:
    evt = event("apigw_deliver.json")
    evt["rawPath"] = f"/sessions/{session_id}/deliveries"
    evt["pathParameters"] = {"id": session_id}
    return evt


def test_a_delivery_addressed_to_the_childs_id_through_the_deliver_function_finishes_the_pair(deploy, caller):
    """Issue 22 item 2: the child's id (its lifecycle events name it) reaches the pair through its caller."""
    script = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number"}}},  # the child
        {"say": "ORD-1001 is on its way."},  # the child, resumed by the delivery
        {"say": "Your order ORD-1001 is on its way."},  # the caller, back in 'ask'
    ]
    d = deploy(script, caller)
    agent = d.collaborators.agent
    agent.workflow.send("AAQk-1", "Where is my order?")

    answer = d.call("deliver", deliver_event("AAQk-1~ask:lookup:1"))

    assert answer["statusCode"] == 200, answer
    assert agent.sessions.get("AAQk-1~ask:lookup:1").status == "completed"
    assert agent.sessions.get("AAQk-1").status == "completed"
    notes = [m.content for m in agent.sessions.messages("AAQk-1") if m.role == "tool"]
    assert "[sub-workflow: lookup] ORD-1001 is on its way." in notes


def test_the_poll_of_a_message_the_callers_child_answered_says_it_was_applied(deploy, caller):
    """Issue 22: a message to a caller parked at its child's decision is a reply the child answers and
    remembers; the 202's poll at the caller says it was applied (the pair applies events as one session)."""
    script = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"call": {"archmax_advance": {"to": "review", "reason": "a refund of 40 EUR"}}},  # the child
        {"say": "Please approve the 40 EUR refund."},  # the child's handoff
        {"say": "A person is looking at it now."},  # the child's answer to the message
    ]
    d = deploy(script, caller)
    d.collaborators.agent.workflow.send("AAQk-1", "Refund ORD-7, please.")
    accepted = d.call("send", message_event("AAQk-1", "Is it approved yet?"))
    assert accepted["statusCode"] == 202
    child = d.collaborators.agent.store.load("AAQk-1~ask:lookup:1")
    assert child.messages[-1].content == "A person is looking at it now."  # the child answered it
    polled = d.call("resolve", get(accepted["headers"]["Location"]))
    delivery = json.loads(polled["body"])["delivery"]
    assert delivery["applied"] is True and delivery["answered"] is True
