"""``functions/<name>/app.py`` import and answer with collaborators built from the environment.

Rule source: CONVENTIONS.md "Thin handlers" (module-level collaborators from the environment,
Powertools logger/metrics/tracer) and DESIGN.md §4. Settings go through ``monkeypatch``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cfnlint.decode.decode import decode_str

from archmax.serve import ROUTES
from archmax.testing import FakeLambdaContext

from .conftest import EVENTS, REPO, SUPPORT_INBOX

FUNCTIONS = REPO / "functions"


def load_function(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"archmax_function_{name}", FUNCTIONS / name / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    script = tmp_path / "model.yaml"
    script.write_text(json.dumps([{"say": "Hello."}]), encoding="utf-8")
    for key, value in {
        "WORKFLOW_DIR": str(SUPPORT_INBOX),
        "ARCHMAX_ROOT": str(tmp_path / "sessions"),
        "ARCHMAX_MODEL": f"scripted:{script}",
        "ARCHMAX_DRAIN": "inline",
        "POWERTOOLS_SERVICE_NAME": "archmax",
        "POWERTOOLS_METRICS_NAMESPACE": "archmax",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }.items():
        monkeypatch.setenv(key, value)
    for key in ("SESSIONS_TABLE", "SESSIONS_BUCKET", "INBOX_TABLE", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(key, raising=False)
    return tmp_path


@pytest.mark.parametrize("name", ["send", "deliver", "resolve", "timer", "wake"])
def test_each_function_is_thin(name: str) -> None:
    code = [line for line in (FUNCTIONS / name / "app.py").read_text().splitlines() if line.strip()]
    assert len(code) < 40


def test_the_send_function_runs_a_turn_and_the_resolve_function_reads_it(settings: Path) -> None:
    send, resolve = load_function("send"), load_function("resolve")
    evt = json.loads((EVENTS / "apigw_send_message.json").read_text())
    answer = send.lambda_handler(evt, FakeLambdaContext())
    assert answer["statusCode"] == 202
    got = resolve.lambda_handler(json.loads((EVENTS / "apigw_get_session.json").read_text()), FakeLambdaContext())
    assert got["statusCode"] == 200 and json.loads(got["body"])["status"] == "completed"


def test_the_timer_function_sweeps_on_a_schedule(settings: Path) -> None:
    timer = load_function("timer")
    answer: dict[str, Any] = timer.lambda_handler(
        json.loads((EVENTS / "scheduled_sweep.json").read_text()), FakeLambdaContext()
    )
    assert answer["ok"] is True and answer["report"]["due"] == []


def test_the_wake_function_fires_a_queued_timer_batch_and_reports_no_failure_for_a_stale_park(settings: Path) -> None:
    wake = load_function("wake")
    answer = wake.lambda_handler(json.loads((EVENTS / "sqs_due_timers.json").read_text()), FakeLambdaContext())
    assert answer == {"batchItemFailures": []}  # its session has no such park on a fresh store: nothing changed


def _template_functions() -> dict[str, dict[str, Any]]:
    doc, errors = decode_str((REPO / "template.yaml").read_text(encoding="utf-8"))
    assert not errors, errors
    resources = json.loads(json.dumps(doc))["Resources"]
    return {k: v["Properties"] for k, v in resources.items() if v["Type"] == "AWS::Serverless::Function"}


def test_archmax_serve_routes_exactly_the_http_api_routes_of_the_template_to_the_same_function() -> None:
    in_template = {
        (e["Properties"]["Method"], e["Properties"]["Path"], props["CodeUri"].strip("/").split("/")[-1])
        for props in _template_functions().values()
        for e in (props.get("Events") or {}).values()
        if e["Type"] == "HttpApi"
    }
    assert in_template == {(method, key, name) for method, _pattern, key, name in ROUTES}
    assert ("POST", "/sessions/{id}/decisions", "deliver") in in_template


@pytest.mark.parametrize("function", ["SendFunction", "DeliverFunction", "TimerFunction"])
def test_a_function_whose_host_wakes_sessions_may_read_the_inbox_and_invoke_itself(function: str) -> None:
    """The waker self-invokes the running function (AWS_LAMBDA_FUNCTION_NAME) with {"drain": id}."""
    props = _template_functions()[function]
    statements = [st for policy in props["Policies"] for st in policy.get("Statement", [])]
    inbox = [
        st
        for st in statements
        if isinstance(st["Resource"], list) and {"Fn::GetAtt": ["InboxTable", "Arn"]} in st["Resource"]
    ]
    assert inbox and {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"} <= set(
        inbox[0]["Action"]
    )
    own_name = props["FunctionName"]["Fn::Sub"]  # "${AWS::StackName}-<name>": exactly this function (issue 13)
    invoke = [st for st in statements if st["Action"] == "lambda:InvokeFunction"]
    assert [st["Resource"]["Fn::Sub"].rsplit(":function:", 1)[1] for st in invoke] == [own_name]


@pytest.mark.parametrize("name", ["send", "deliver", "timer"])
def test_each_waking_function_answers_the_drain_self_invocation(settings: Path, name: str) -> None:
    answer = load_function(name).lambda_handler({"drain": "AAQk-1"}, FakeLambdaContext())
    assert answer == {"ok": True, "drained": []}
