"""template.yaml's sweep fan-out after the SAM transform: the timer queue, its DLQ, the wake function.

Rule source: issue 24 goal 3 (the sweep only finds due parks and hands each to a worker in parallel:
an SQS queue, ReportBatchItemFailures, bounded concurrency) and CONVENTIONS.md (least privilege).
"""

from __future__ import annotations

from typing import Any

from .test_outbound_template import _actions, _statements, resources  # noqa: F401  (the module fixture)


def test_the_sweep_queues_due_timers_and_may_send_only_to_the_timer_queue(resources):  # noqa: F811
    timer = resources["TimerFunction"]["Properties"]
    assert timer["Environment"]["Variables"]["TIMER_QUEUE_URL"] == {"Ref": "TimerQueue"}
    sqs = [s for _, s in _statements(resources["TimerFunctionRole"]) if any(a.startswith("sqs:") for a in _actions(s))]
    queue = {"Fn::GetAtt": ["TimerQueue", "Arn"]}
    # the OnFailure destination SAM adds (AsyncFailureQueue), and SendMessage(Batch) to the timer queue
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": queue} in sqs
    assert all(s["Resource"] in (queue, {"Fn::GetAtt": ["AsyncFailureQueue", "Arn"]}) for s in sqs)


def test_the_wake_function_reads_the_queue_with_batch_failures_and_bounded_concurrency(resources):  # noqa: F811
    mapping = resources["WakeFunctionDueTimers"]["Properties"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["TimerQueue", "Arn"]}
    assert mapping["FunctionName"] == {"Ref": "WakeFunction"}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "WakeConcurrency"}}
    assert 1 <= mapping["BatchSize"] <= 10
    queue = resources["TimerQueue"]["Properties"]
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["TimerDeadLetterQueue", "Arn"]}
    timeout = resources["WakeFunction"]["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] >= timeout  # a message is never handed out again mid-batch
    alarm = resources["TimerDeadLettersAlarm"]["Properties"]
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["TimerDeadLetterQueue", "QueueName"]}}
    ]


def test_the_wake_function_may_load_and_commit_sessions_and_nothing_account_wide(resources):  # noqa: F811
    statements = [s for _, s in _statements(resources["WakeFunctionRole"])]
    actions = {a for s in statements for a in _actions(s)}
    dynamodb = {a for a in actions if a.startswith("dynamodb:")}
    # no listing (the sweep lists); BatchGetItem is a commit asking which outbox entries are settled and a
    # load reading segment items, PutItem a commit's segment item, BatchWriteItem their deletion (issue 24)
    assert dynamodb == {
        "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:BatchWriteItem"
    }  # fmt: skip
    assert "lambda:InvokeFunction" not in actions
    for statement in statements:
        resource: Any = statement.get("Resource")
        assert resource != "*", statement
        if any(a.startswith("dynamodb:") for a in _actions(statement)):
            assert resource == {"Fn::GetAtt": ["SessionsTable", "Arn"]}
