"""template.yaml's outbound part after the SAM transform: the stream, the function, its permissions, the DLQ.

Rule source: DESIGN.md §3 "The change stream", issue 12 item 4 (a DynamoDB Streams event source with a
filter, batch failure reporting, a DLQ; SES send scoped to the identity, events put scoped to the bus).
The transform is the one test_template.py builds and lints.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from samtranslator.translator.transform import transform

from .test_template import _decoded, _OfflinePolicies, _packaged


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return transform(_packaged(_decoded()), {"AWS::Region": "us-east-1"}, _OfflinePolicies())["Resources"]


def _statements(role: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """``(condition, statement)`` of every inline policy statement; ``Fn::If`` policies carry their condition."""
    found = []
    for policy in role["Properties"]["Policies"]:
        condition = None
        if "Fn::If" in policy:
            condition, policy, _ = policy["Fn::If"]
        for statement in policy["PolicyDocument"]["Statement"]:
            found.append((condition, statement))
    return found


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_the_sessions_table_streams_new_images(resources):
    assert resources["SessionsTable"]["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}


def test_the_outbound_function_reads_the_stream_with_a_filter_batch_failures_and_a_dlq(resources):
    mapping = resources["OutboundFunctionSessionChanges"]["Properties"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["SessionsTable", "StreamArn"]}
    assert mapping["FunctionName"] == {"Ref": "OutboundFunction"}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True and mapping["MaximumRetryAttempts"] >= 1
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["OutboundDeadLetterQueue", "Arn"]
    }
    assert resources["OutboundDeadLetterQueue"]["Type"] == "AWS::SQS::Queue"
    (only,) = mapping["FilterCriteria"]["Filters"]
    pattern = json.loads(only["Pattern"])
    assert pattern["eventName"] == ["INSERT", "MODIFY"]
    assert sorted(pattern["dynamodb"]["NewImage"]["status"]["S"]) == sorted(
        ["awaiting_input", "awaiting_decision", "completed", "failed", "rejected"]
    )  # exactly the statuses a turn ends in: mid-turn commits never invoke the function
    # and only while the outbox mark is set: the sender's settle removes it, so it invokes nothing (issue 24)
    assert pattern["dynamodb"]["NewImage"]["outbox_shard"] == {"S": [{"exists": True}]}


def test_the_outbound_function_sends_mail_only_as_the_identity_and_puts_events_only_on_the_bus(resources):
    statements = _statements(resources["OutboundFunctionRole"])
    ses = [(c, s) for c, s in statements if any(a.startswith("ses:") for a in _actions(s))]
    assert len(ses) == 1
    condition, statement = ses[0]
    assert condition == "SendMail"
    assert statement["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/${MailIdentity}"
    }
    events = [s for _, s in statements if "events:PutEvents" in _actions(s)]
    assert len(events) == 1
    assert events[0]["Resource"]["Fn::Sub"][1] == {"eventBusName": {"Ref": "ArchmaxEventBus"}}
    assert resources["ArchmaxEventBus"]["Type"] == "AWS::Events::EventBus"
    for _, statement in statements:
        assert statement.get("Resource") != "*", statement  # nothing account-wide


def test_the_outbound_function_writes_only_outbox_files_and_aliases_and_reads_one_item(resources):
    statements = [s for _, s in _statements(resources["OutboundFunctionRole"])]
    puts = [s for s in statements if "s3:PutObject" in _actions(s)]
    assert [r["Fn::Sub"] for s in puts for r in s["Resource"]] == [
        "${SessionsBucket.Arn}/sessions/*/outbox/*",
        "${SessionsBucket.Arn}/sessions/.aliases/*",
    ]
    dynamodb = sorted(a for s in statements for a in _actions(s) if a.startswith("dynamodb:"))
    # UpdateItem: each entry's claim and outcome, and the outbox mark (issue 20); BatchGetItem: which are settled (issue 24)
    assert dynamodb == ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"]
    env = resources["OutboundFunction"]["Properties"]["Environment"]["Variables"]
    assert env["ARCHMAX_EVENT_BUS"] == {"Ref": "ArchmaxEventBus"}
    assert env["ARCHMAX_MAIL_TRANSPORT"] == {"Fn::If": ["SendMail", "ses", "off"]}
