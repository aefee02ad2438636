"""What loading a function module imports, in a fresh interpreter with the template's environment.

Rule source: issue 10 ("Cold import": clients created on first use, no X-Ray patch at import,
nothing a code path does not need). A drain, a direct invoke, an SES or an EventBridge event never
routes HTTP, so Powertools' event handler is loaded by the first API Gateway event, not at import.
The speed itself is measured in ``bench/cold_import.py``, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "examples" / "workflows" / "support-inbox"

_PROBE = """
import gc, importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
loaded = lambda name: name in sys.modules
before = {{n: loaded(n) for n in {watched!r}}}
before["gc enabled"] = gc.isenabled()
if {event!r} is not None:
    from archmax.testing import FakeLambdaContext
    answer = module.lambda_handler({event!r}, FakeLambdaContext())
else:
    answer = None
after = {{n: loaded(n) for n in {watched!r}}}
after["gc enabled"] = gc.isenabled()
after["gc frozen"] = gc.get_freeze_count()
print(json.dumps({{"before": before, "after": after, "answer": answer}}))
"""

WATCHED = [
    "aws_lambda_powertools.event_handler",
    "boto3",
    "aws_xray_sdk",
    "email",
    "aws_lambda_powertools.utilities.parser.models",
    "archmax.engine",
    "archmax.inbound.ses",
    "archmax.views",
]


def _load(function: str, tmp_path: Path, event: dict | None = None, **settings: str) -> dict:
    """Load ``functions/<function>/app.py`` (and hand it ``event``) in a fresh interpreter."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "WORKFLOW_DIR": str(WORKFLOW),
        "ARCHMAX_MODEL": f"scripted:{WORKFLOW / 'model.yaml'}",
        "ARCHMAX_ROOT": str(tmp_path / "sessions"),
        "ARCHMAX_DRAIN": "inline",
        "POWERTOOLS_SERVICE_NAME": "archmax",
        "POWERTOOLS_METRICS_NAMESPACE": "archmax",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        **settings,
    }
    code = _PROBE.format(path=str(REPO / "functions" / function / "app.py"), watched=WATCHED, event=event)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("function", ["send", "deliver", "resolve", "timer"])
def test_loading_a_function_imports_no_http_routing_no_boto3_and_no_xray(function: str, tmp_path: Path) -> None:
    report = _load(function, tmp_path)
    watched = ["aws_lambda_powertools.event_handler", "boto3", "aws_xray_sdk"]
    assert {name: report["before"][name] for name in watched} == dict.fromkeys(watched, False)


def test_the_deliver_function_loads_no_mail_modules(tmp_path: Path) -> None:
    """Sending is the outbound function's job on AWS: the dispatcher and its email modules load where one is built."""
    # As deployed: the stream's function sends, and the model is a provider's (a scripted one parses
    # its script with pydantic at load, and pydantic's plugin loader imports importlib.metadata, email).
    report = _load(
        "deliver", tmp_path, ARCHMAX_OUTBOUND="stream", ARCHMAX_MODEL="bedrock:anthropic.claude-3-5-haiku-20241022-v1:0"
    )
    assert report["before"]["email"] is False


def test_the_first_http_event_loads_routing_and_is_answered(tmp_path: Path) -> None:
    event = json.loads((REPO / "events" / "apigw_deliver.json").read_text())
    report = _load("deliver", tmp_path, event)
    assert report["before"]["aws_lambda_powertools.event_handler"] is False
    assert report["after"]["aws_lambda_powertools.event_handler"] is True
    answer = report["answer"]
    assert answer["statusCode"] == 404
    body = json.loads(answer["body"])
    assert body["error"] == "SessionNotAwaitingInputError", body  # routed to the delivery; no such session


@pytest.mark.parametrize("function", ["wake", "outbound"])
def test_the_batch_functions_load_no_powertools_parser_models(function: str, tmp_path: Path) -> None:
    """Powertools' batch utility builds its pydantic parser models only when pydantic came first (issue 24 goal 4).

    The models are type hints of the batch utility, never used by these handlers (they process
    plain records); app.py imports the utility before archmax, which loads pydantic.
    """
    report = _load(function, tmp_path)
    assert report["before"]["aws_lambda_powertools.utilities.parser.models"] is False


def test_the_outbound_function_loads_no_engine(tmp_path: Path) -> None:
    """The sender reads the store and dispatches: the package's names load lazily, so no engine module comes along.

    Rule source: issue 24 goal 4 (a function imports what its path uses); ``archmax/__init__.py``.
    """
    report = _load("outbound", tmp_path)
    assert report["before"]["archmax.engine"] is False


def test_a_webhook_loads_no_mail_modules(tmp_path: Path) -> None:
    """The send function's SES path (envelope, MIME parsing, admission) loads with the first mail, not with a webhook."""
    event = json.loads((REPO / "events" / "apigw_send_message.json").read_text())
    report = _load("send", tmp_path, event)
    assert report["before"]["archmax.inbound.ses"] is False
    assert report["answer"]["statusCode"] == 202, report["answer"]
    assert report["after"]["archmax.inbound.ses"] is False


def test_a_session_summary_loads_no_views(tmp_path: Path) -> None:
    """The resolve function's story and HTML page (archmax.views) load with the first view asked for, not a summary."""
    event = json.loads((REPO / "events" / "apigw_get_session.json").read_text())
    report = _load("resolve", tmp_path, event)
    assert report["before"]["archmax.views"] is False
    assert report["answer"]["statusCode"] == 404, report["answer"]  # routed to the summary; no such session
    assert report["after"]["archmax.views"] is False


@pytest.mark.parametrize("function", ["send", "deliver", "resolve", "timer", "wake", "outbound"])
def test_the_collector_is_paused_by_loading_and_resumed_by_the_first_invocation(function: str, tmp_path: Path) -> None:
    """app.py pauses the cyclic GC on its first line; the first invocation's end resumes it (archmax.hosting.coldstart)."""
    report = _load(function, tmp_path, {"not": "an event of this function"})
    assert report["before"]["gc enabled"] is False
    assert report["after"]["gc enabled"] is True
    assert report["after"]["gc frozen"] > 10_000  # the cold start's objects: never walked again
