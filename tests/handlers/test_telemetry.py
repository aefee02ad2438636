"""What the deployed functions say: JSON log lines and EMF metrics for a send, a delivery, a refusal
and a model failure, read from stdout as CloudWatch would.

Rule source: issue 11 item 5 and its "Done when" (log lines with session id and correlation id;
EMF metrics; a model that fails every call is never a silent ``running``). The functions are
``functions/<name>/app.py`` imported with the template's settings (filesystem store, inline drain);
the failing model is the OpenAI adapter against a chat-completions server on 127.0.0.1 that
answers 500 to every call. Each test uses its own ``POWERTOOLS_SERVICE_NAME`` (a service other than
``archmax``: the runtime's own loggers must still come out as JSON).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_lambda_powertools.metrics.provider import cold_start

from archmax.testing import FakeLambdaContext
from unit.models._chat_server import ChatServer

from .conftest import ANSWER, EVENTS, PARK, SUPPORT_INBOX
from .test_functions import load_function


def event(name: str, **changes: Any) -> dict[str, Any]:
    evt = json.loads((EVENTS / name).read_text())
    evt.update(changes)
    return evt


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """The template's settings for the four functions; ``ARCHMAX_MODEL`` is the conversation's script."""
    script = tmp_path / "model.yaml"
    script.write_text(yaml.safe_dump(PARK + ANSWER), encoding="utf-8")
    settings = {
        "WORKFLOW_DIR": str(SUPPORT_INBOX),
        "ARCHMAX_ROOT": str(tmp_path / "sessions"),
        "ARCHMAX_MODEL": f"scripted:{script}",
        "ARCHMAX_DRAIN": "inline",
        "POWERTOOLS_SERVICE_NAME": f"archmax-test-{uuid.uuid4().hex[:8]}",
        "POWERTOOLS_METRICS_NAMESPACE": "archmax",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    for key in ("SESSIONS_TABLE", "SESSIONS_BUCKET", "INBOX_TABLE", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(cold_start, "is_cold_start", True)  # as in a fresh Lambda process
    return settings


class Stdout:
    """stdout split into Powertools log lines and EMF metric blobs."""

    def __init__(self, text: str) -> None:
        docs = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        self.logs = [d for d in docs if "_aws" not in d]
        self.blobs = [d for d in docs if "_aws" in d]

    def lines(self, message: str) -> list[dict[str, Any]]:
        return [line for line in self.logs if line.get("message") == message]

    def metrics(self) -> list[tuple[str, Any, dict[str, str]]]:
        """``(name, values, dimensions)`` of every metric in every blob (EMF gives one value or a list)."""
        found = []
        for blob in self.blobs:
            (directive,) = blob["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "archmax"
            dims = {name: blob[name] for name in directive["Dimensions"][0]}
            for metric in directive["Metrics"]:
                value = blob[metric["Name"]]
                found.append(
                    (metric["Name"], [float(v) for v in (value if isinstance(value, list) else [value])], dims)
                )
        return found

    def metric(self, name: str) -> list[tuple[Any, dict[str, str]]]:
        return [(value, dims) for n, value, dims in self.metrics() if n == name]


def read(capsys: pytest.CaptureFixture[str]) -> Stdout:
    return Stdout(capsys.readouterr().out)


def test_a_send_then_a_delivery_log_one_outcome_each_with_correlation_and_count_turns(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    send, deliver = load_function("send"), load_function("deliver")
    capsys.readouterr()

    context = FakeLambdaContext()
    assert send.lambda_handler(event("apigw_send_message.json"), context)["statusCode"] == 202
    out = read(capsys)
    (outcome,) = out.lines("outcome")
    assert outcome["level"] == "INFO" and outcome["service"] == deployed["POWERTOOLS_SERVICE_NAME"]
    assert outcome["session_id"] == "AAQk-1" and outcome["workflow"] == "support-inbox"
    assert outcome["correlation_id"] == event("apigw_send_message.json")["requestContext"]["requestId"]
    assert (outcome["trigger"], outcome["disposition"], outcome["kind"]) == ("email_received", "turn", "parked")
    assert outcome["parked_channel"] == "input" and outcome["function"] == "send"
    assert outcome["function_request_id"] == context.aws_request_id  # the Lambda context
    (accepted,) = out.lines("accepted")
    assert accepted["delivery_id"] == "msg-AAQk-1-0001" and accepted["duplicate"] is False
    assert accepted["correlation_id"] == outcome["correlation_id"]
    assert out.metric("Turns") == [
        ([1.0], {"service": deployed["POWERTOOLS_SERVICE_NAME"], "Workflow": "support-inbox"})
    ]
    assert out.metric("Parks") == [
        ([1.0], {"service": deployed["POWERTOOLS_SERVICE_NAME"], "Workflow": "support-inbox", "Channel": "input"})
    ]
    assert [value for value, _ in out.metric("ColdStart")] == [[1.0]]
    assert out.metric("Deliveries") == []

    assert deliver.lambda_handler(event("apigw_deliver.json"), FakeLambdaContext())["statusCode"] == 200
    out = read(capsys)
    (outcome,) = out.lines("outcome")
    assert (outcome["session_id"], outcome["disposition"], outcome["kind"]) == ("AAQk-1", "deliver", "completed")
    assert outcome["trigger"] == "email_reply" and outcome["function"] == "deliver"
    assert outcome["correlation_id"] == event("apigw_deliver.json")["requestContext"]["requestId"]
    assert [value for value, _ in out.metric("Turns")] == [[1.0]]
    assert [value for value, _ in out.metric("Deliveries")] == [[1.0]]
    assert out.lines("refused") == [] and out.lines("failed") == []


def test_a_refusal_is_one_warning_line_and_a_refusal_counted_by_error_class(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    send, deliver = load_function("send"), load_function("deliver")
    send.lambda_handler(event("apigw_send_message.json"), FakeLambdaContext())
    deliver.lambda_handler(event("apigw_deliver.json"), FakeLambdaContext())
    capsys.readouterr()

    again = deliver.lambda_handler(event("apigw_deliver.json"), FakeLambdaContext())  # the same delivery id
    assert again["statusCode"] == 200  # applied the first time: a success that changes nothing
    out = read(capsys)
    (duplicate,) = out.lines("duplicate")
    assert duplicate["error_class"] == "DuplicateDeliveryError" and duplicate["session_id"] == "AAQk-1"
    assert [value for value, _ in out.metric("Duplicates")] == [[1.0]] and out.lines("refused") == []

    late = event("apigw_deliver.json")
    del late["headers"]["idempotency-key"]  # a new delivery, but the park is gone
    answer = deliver.lambda_handler(late, FakeLambdaContext())
    assert answer["statusCode"] == 409
    out = read(capsys)
    (refused,) = out.lines("refused")
    assert refused["level"] == "WARNING" and refused["error_class"] == json.loads(answer["body"])["error"]
    assert refused["session_id"] == "AAQk-1"
    assert refused["correlation_id"] == late["requestContext"]["requestId"]
    ((value, dims),) = out.metric("Refusals")
    assert value == [1.0] and dims["ErrorClass"] == "SessionNotAwaitingInputError"
    assert out.lines("outcome") == [] and out.metric("Turns") == []

    bad = event("apigw_send_message.json", rawPath="/sessions/..%2Fetc/messages", pathParameters={"id": "../etc"})
    assert send.lambda_handler(bad, FakeLambdaContext())["statusCode"] == 400
    out = read(capsys)
    (refused,) = out.lines("refused")
    assert refused["error_class"] == "InvalidSessionIdError" and refused["status"] == 400
    ((value, dims),) = out.metric("Refusals")
    assert value == [1.0] and dims["ErrorClass"] == "InvalidSessionIdError"


@pytest.fixture
def failing_model(deployed: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> ChatServer:
    """``openai:`` against a local endpoint that answers 500 to every call, no client retries."""
    server = ChatServer().start()
    monkeypatch.setenv("ARCHMAX_MODEL", "openai:broken")
    monkeypatch.setenv("ARCHMAX_API_BASE_URL", server.base_url)
    monkeypatch.setenv("ARCHMAX_MODEL_MAX_RETRIES", "0")
    yield server
    server.stop()


def test_a_model_that_fails_every_call_is_logged_counted_retried_and_never_silent(
    failing_model: ChatServer, deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    send, timer = load_function("send"), load_function("timer")
    capsys.readouterr()

    answer = send.lambda_handler(event("apigw_send_message.json"), FakeLambdaContext())
    assert answer["statusCode"] == 202  # durably inboxed; the inline drain's turn failed
    out = read(capsys)
    (failed,) = out.lines("failed")
    assert failed["level"] == "ERROR" and failed["error_class"] == "ModelError"
    assert failed["session_id"] == "AAQk-1" and failed["operation"] == "send"
    assert failed["correlation_id"] == event("apigw_send_message.json")["requestContext"]["requestId"]
    assert "HTTP 500" in failed["error"] and "Traceback" in failed["exception"]
    ((value, dims),) = out.metric("ModelErrors")
    assert value == [1.0] and dims["ErrorClass"] == "ModelError" and dims["Workflow"] == "support-inbox"
    assert out.lines("outcome") == [] and len(failing_model.requests) == 1

    # The waker's asynchronous drain raises, so Lambda retries it and then hands it to the DLQ.
    with pytest.raises(Exception) as raised:
        send.lambda_handler({"drain": "AAQk-1"}, FakeLambdaContext())
    assert type(raised.value).__name__ == "ModelError"
    out = read(capsys)
    assert [line["error_class"] for line in out.lines("failed")] == ["ModelError"]  # said once, not twice
    assert len(out.metric("ModelErrors")) == 1

    # The item stays pending: every sweep re-drives it, and says so again.
    report = timer.lambda_handler(event("scheduled_sweep.json"), FakeLambdaContext())
    assert report["ok"] is True
    assert [r["results"] for r in report["report"]["redriven"]] == [["ModelError"]]
    out = read(capsys)
    assert [line["error_class"] for line in out.lines("failed")] == ["ModelError"]
    (swept,) = out.lines("swept")
    assert swept["redriven"] == 1 and swept["correlation_id"] == event("scheduled_sweep.json")["id"]
    assert [value for value, _ in out.metric("StaleSessions")] == [[1.0]]  # what the stale-session alarm watches
    assert len(failing_model.requests) == 3
    summary = load_function("resolve").lambda_handler(event("apigw_get_session.json"), FakeLambdaContext())
    assert json.loads(summary["body"])["status"] == "running"  # mid-turn: the pending item continues it


def test_runtime_warnings_come_out_as_json_with_the_invocations_keys(
    deployed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    import logging

    send = load_function("send")
    capsys.readouterr()
    handle = send.telemetry.handler(lambda evt, ctx: logging.getLogger("archmax.hosting").warning("from the runtime"))
    handle({"drain": "AAQk-9"}, FakeLambdaContext())
    (line,) = read(capsys).lines("from the runtime")
    assert line["level"] == "WARNING" and line["session_id"] == "AAQk-9" and line["workflow"] == "support-inbox"
    assert line["service"] == deployed["POWERTOOLS_SERVICE_NAME"]


def test_a_timer_delivery_reports_how_late_it_came_after_resume_at(
    deployed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from archmax.clock import FakeClock
    from archmax.handlers import send, timer
    from archmax.hosting.telemetry import Telemetry
    from archmax.hosting.wiring import from_environment

    script = tmp_path / "wait.yaml"
    script.write_text(yaml.safe_dump([
        {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number", "until": "1h"}}},
        {"say": "No reply came."},
    ]))  # fmt: skip
    monkeypatch.setenv("ARCHMAX_MODEL", f"scripted:{script}")
    clock = FakeClock("2025-01-01T00:00:00.000Z")
    telemetry = Telemetry("timer")  # what functions/<name>/app.py composes, with a clock the test moves
    collaborators = from_environment(clock=clock, telemetry=telemetry)
    send_handler = telemetry.handler(send.build(collaborators))
    timer_handler = telemetry.handler(timer.build(collaborators))
    assert send_handler(event("apigw_send_message.json"), FakeLambdaContext())["statusCode"] == 202
    resume_at = collaborators.agent.sessions.get("AAQk-1").resume_at
    capsys.readouterr()

    clock.advance(hours=1, minutes=2)  # the schedule fires a little after resume_at
    report = timer_handler(event("scheduled_sweep.json"), FakeLambdaContext())
    assert [list(due) for due in report["report"]["due"]] == [["AAQk-1", "completed"]]
    out = read(capsys)
    (line,) = out.lines("timer delivered")
    assert line["resume_at"] == resume_at and line["session_id"] == "AAQk-1" and line["trigger"] == "timer"
    ((late, dims),) = out.metric("TimerLateness")
    assert late == [120.0] and dims["Workflow"] == "support-inbox"  # the fake clock's two minutes, exactly
    (outcome,) = out.lines("outcome")
    assert outcome["operation"] == "deliver" and outcome["disposition"] == "deliver"


def test_a_timer_the_sweep_queued_reports_its_lateness_from_the_wake_function(
    deployed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 goal 3: TimerLateness is resume_at -> the delivery returning in the worker, queue wait included."""
    from archmax.clock import FakeClock
    from archmax.handlers import send, timer, wake
    from archmax.hosting.telemetry import Telemetry
    from archmax.hosting.timers import QUEUED
    from archmax.hosting.wiring import from_environment

    script = tmp_path / "wait.yaml"
    script.write_text(yaml.safe_dump([
        {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number", "until": "1h"}}},
        {"say": "No reply came."},
    ]))  # fmt: skip
    monkeypatch.setenv("ARCHMAX_MODEL", f"scripted:{script}")
    clock = FakeClock("2025-01-01T00:00:00.000Z")
    queued: list[Any] = []

    class Queue:  # the timer queue as the sweep sees it (SqsTimers on AWS; tests/handlers/test_timer_fanout.py)
        def hand(self, agent: Any, timers: Any, **_: Any) -> list[tuple[str, str]]:
            queued.extend(timers)
            return [(t.session_id, QUEUED) for t in timers]

    sweeper = Telemetry("timer")
    collaborators = from_environment(clock=clock, telemetry=sweeper)
    collaborators.host.timers = Queue()
    assert sweeper.handler(send.build(collaborators))(event("apigw_send_message.json"), FakeLambdaContext())
    clock.advance(hours=1, minutes=2)
    sweeper.handler(timer.build(collaborators))(event("scheduled_sweep.json"), FakeLambdaContext())
    capsys.readouterr()

    worker = Telemetry("wake")
    wake_handler = worker.handler(wake.build(from_environment(clock=clock, telemetry=worker)))
    clock.advance(seconds=30)  # the message waited in the queue
    records = [{"messageId": "m-1", "body": t.model_dump_json(), "eventSource": "aws:sqs"} for t in queued]
    assert wake_handler({"Records": records}, FakeLambdaContext()) == {"batchItemFailures": []}
    out = read(capsys)
    ((late, dims),) = out.metric("TimerLateness")
    assert late == [150.0] and dims["Workflow"] == "support-inbox"  # two minutes to the sweep, 30 s in the queue
