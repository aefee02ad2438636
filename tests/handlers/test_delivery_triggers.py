"""A delivery's trigger over HTTP and direct invokes: an event name of the host's own is delivered as
given (BEHAVIOUR.md §3.5), a near miss of a known trigger is refused with a 400 and writes nothing
(issue 25 item 4). On the filesystem and the AWS (moto) backends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import ANSWER, PARK, event

SID = "AAQk-1"  # the session of events/apigw_deliver.json


@pytest.fixture(params=["filesystem", "aws"])
def deploy(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def delivery(trigger: str) -> dict[str, Any]:
    evt = event("apigw_deliver.json")
    evt["body"] = json.dumps({"trigger": trigger, "variables": {"reply_body": "It's ORD-1001."}})
    return evt


def test_a_near_miss_of_a_declared_trigger_is_a_400_naming_the_closest_and_writes_nothing(deploy: Any) -> None:
    d = deploy([*PARK, *ANSWER[1:]])
    d.collaborators.agent.workflow.send(SID, "Where is my order?", trigger="email_received")
    before = d.snapshot()
    answer = d.call("deliver", delivery("email_replly"))
    assert answer["statusCode"] == 400, answer["body"]
    problem = json.loads(answer["body"])
    assert problem["error"] == "MisspeltTriggerError" and "did you mean 'email_reply'?" in problem["message"]
    assert d.snapshot() == before
    direct = d.call("deliver", {"session_id": SID, "trigger": "tiemr"})
    assert direct["ok"] is False and direct["error"] == "MisspeltTriggerError"
    assert d.snapshot() == before


def test_an_event_name_of_the_hosts_own_is_delivered_as_given(deploy: Any) -> None:
    d = deploy([*PARK, *ANSWER[1:]])
    d.collaborators.agent.workflow.send(SID, "Where is my order?", trigger="email_received")
    answer = d.call("deliver", delivery("crm_ticket_updated"))
    assert answer["statusCode"] == 200, answer["body"]
    record = d.collaborators.agent.store.load(SID)
    assert record.variables["trigger"].value == "crm_ticket_updated"
