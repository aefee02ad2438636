"""``sam build`` as the README gives it, from a fresh copy of the repository, with the real SAM CLI.

Rule source: issue 11 item 1 and its "Done when": the build succeeds where the SAM CLI is
installed, and the built layer imports and serves one event per function on a clean ``sys.path``
(the standard library, the layer's ``python/``, the function's folder and what the Lambda runtime
itself provides: boto3 and its dependencies), with a team's own ``workflows/<slug>/tools.py``
packaged beside the examples.

The SAM CLI lives in a virtualenv of its own (``.ci/run`` installs ``aws-sam-cli`` into
``.sam-venv``); ``ARCHMAX_SAM`` names another binary. Without one the test skips, saying so. The
layer is built for this machine's platform and Python (``LAYER_PLATFORM``/``LAYER_PYTHON``, which
the layer Makefile takes) so it can be imported here; everything else is the template's build.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six.py", "urllib3")
FUNCTIONS = ("send", "deliver", "resolve", "timer", "wake")

# The park-and-resume conversation (tests/handlers/conftest.py PARK + ANSWER), read per session.
SUPPORT_SCRIPT = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
    {"call": {"archmax_advance": {"to": "answer", "reason": "the reply names ORD-1001"}}},
    {"say": "ORD-1001 ships tomorrow."},
]
TEAM_SCRIPT = [
    {"expect_state": "check-bank", "call": {"lookup_transaction": {"reference": "INV-7"}}},
    {"expect_state": "check-bank", "call": {"archmax_advance": {"to": "reconcile", "reason": "INV-7 posted"}}},
    {"expect_state": "reconcile", "say": "INV-7 posted."},
]

# Runs in a fresh interpreter started with -I -S: no site-packages, no PYTHON* variables.
DRIVER = r"""
import importlib.util, json, os, sys
layer, functions, provided, events, work = sys.argv[1:6]
sys.path[:0] = [provided, os.path.join(layer, "python")]
from archmax.testing import FakeLambdaContext

def load(name, tag):
    app = os.path.join(functions, name.capitalize() + "Function", "app.py")  # sam build's output
    spec = importlib.util.spec_from_file_location(f"fn_{tag}_{name}", app)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def event(name):
    with open(os.path.join(events, name)) as f:
        return json.load(f)

answers = {}
os.environ.update(WORKFLOW_DIR=os.path.join(layer, "workflows", "support-inbox"),
                  ARCHMAX_MODEL="scripted:" + os.path.join(work, "support.yaml"))
for name, file in [("send", "apigw_send_message.json"), ("deliver", "apigw_deliver.json"),
                   ("resolve", "apigw_get_session.json"), ("timer", "scheduled_sweep.json"),
                   ("wake", "sqs_due_timers.json")]:
    answers[name] = load(name, "a").lambda_handler(event(file), FakeLambdaContext())

os.environ.update(WORKFLOW_DIR=os.path.join(layer, "workflows", "bank-team"),
                  ARCHMAX_MODEL="scripted:" + os.path.join(work, "team.yaml"))
direct = {"session_id": "team-1", "trigger": "payment_expected", "variables": {"reference": "INV-7"}}
webhook = event("apigw_trigger_webhook.json")
webhook.update(rawPath="/triggers/payment_expected", isBase64Encoded=False,
               pathParameters={"trigger": "payment_expected"},
               body=json.dumps({"reference": "INV-7", "message": "INV-7 is expected."}))
answers["team"] = load("send", "b").lambda_handler(webhook, FakeLambdaContext())
team_id = json.loads(answers["team"]["body"])["session_id"]
answers["team_session"] = load("resolve", "b").lambda_handler({"action": "get", "session_id": team_id}, FakeLambdaContext())

import archmax, botocore, openai, pydantic
answers["from"] = {m.__name__: m.__file__ for m in (archmax, botocore, openai, pydantic)}
print(json.dumps(answers, default=str))
"""


def sam_binary() -> str | None:
    """The SAM CLI: ``ARCHMAX_SAM``, the repository's ``.sam-venv`` (``.ci/run``), else ``sam`` on PATH."""
    for candidate in (os.environ.get("ARCHMAX_SAM"), str(REPO / ".sam-venv" / "bin" / "sam"), shutil.which("sam")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def fresh_copy(dest: Path) -> Path:
    """The repository's tracked and new (not ignored) files, as a fresh clone plus this change would hold."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sam = sam_binary()
    if sam is None:
        pytest.skip("the SAM CLI is not installed (.ci/run puts aws-sam-cli in .sam-venv; or set ARCHMAX_SAM)")
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout to make a fresh copy of the repository")
    clone = fresh_copy(tmp_path_factory.mktemp("clone"))
    # A team's own workflow beside the template: bank-check under another slug, with its tools.py.
    shutil.copytree(REPO / "examples" / "workflows" / "bank-check", clone / "workflows" / "bank-team")
    machine = {"x86_64": "x86_64", "AMD64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine()]
    env = {
        **os.environ,
        "SAM_CLI_TELEMETRY": "0",
        "LAYER_PLATFORM": f"manylinux2014_{machine}",
        "LAYER_PYTHON": f"{sys.version_info.major}.{sys.version_info.minor}",
        "PIP": f"{sys.executable} -m pip",
        "PYTHON": sys.executable,
    }
    done = subprocess.run([sam, "build"], cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "Build Succeeded" in done.stdout + done.stderr
    return clone / ".aws-sam" / "build"


def test_the_layer_ships_the_runtime_the_adapters_and_every_workflow_but_not_botocore(built: Path) -> None:
    python = built / "ArchmaxLayer" / "python"
    assert (python / "archmax" / "hosting" / "wiring.py").is_file()
    assert (python / "openai").is_dir()  # the template's ModelId offers openai:
    # Built by the layer's own Python: compiled once (Lambda's /opt is read-only, issue 24 goal 4).
    tag = sys.implementation.cache_tag
    assert (python / "archmax" / "hosting" / "__pycache__" / f"wiring.{tag}.pyc").is_file()
    assert (python / "pydantic" / "__pycache__" / f"main.{tag}.pyc").is_file()
    for name in RUNTIME_PROVIDED:
        assert not (python / name).exists(), f"{name} shadows the Lambda runtime's copy"
    workflows = built / "ArchmaxLayer" / "workflows"
    assert {"support-inbox", "bank-check", "bank-team"} <= {p.name for p in workflows.iterdir()}
    assert (workflows / "bank-team" / "tools.py").is_file()
    for name in FUNCTIONS:
        assert sorted(p.name for p in (built / f"{name.capitalize()}Function").iterdir()) == ["app.py"]


def test_every_function_imports_from_the_built_layer_and_serves_an_event(built: Path, tmp_path: Path) -> None:
    import botocore

    provided = tmp_path / "runtime"  # what /var/runtime holds on Lambda: boto3 and its dependencies
    provided.mkdir()
    site = Path(botocore.__file__).parents[1]
    for name in RUNTIME_PROVIDED:
        if (site / name).exists():
            (provided / name).symlink_to(site / name)
    (tmp_path / "support.yaml").write_text(yaml.safe_dump(SUPPORT_SCRIPT))
    (tmp_path / "team.yaml").write_text(yaml.safe_dump(TEAM_SCRIPT))
    statement = tmp_path / "statement.json"
    statement.write_text(json.dumps({"transactions": [{"reference": "INV-7", "amount": 7}]}))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ARCHMAX_ROOT": str(tmp_path / "sessions"),
        "ARCHMAX_DRAIN": "inline",
        "BANK_STATEMENT": str(statement),
        "POWERTOOLS_SERVICE_NAME": "archmax",
        "POWERTOOLS_METRICS_NAMESPACE": "archmax",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", DRIVER, str(built / "ArchmaxLayer"), str(built),
         str(provided), str(REPO / "events"), str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    answers: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert answers["send"]["statusCode"] == 202
    assert answers["deliver"]["statusCode"] == 200 and json.loads(answers["deliver"]["body"])["kind"] == "completed"
    assert answers["resolve"]["statusCode"] == 200 and json.loads(answers["resolve"]["body"])["status"] == "completed"
    assert answers["timer"]["ok"] is True
    assert answers["wake"] == {"batchItemFailures": []}  # the sample's park is not current: a no-op
    # the team's workflow, chosen like the Workflow parameter does, ran its own tool
    assert answers["team"]["statusCode"] == 202
    assert answers["team_session"]["session"]["workflow_state"] == "reconcile"
    layer = str(built / "ArchmaxLayer" / "python")
    origins = answers["from"]
    assert all(origins[m].startswith(layer) for m in ("archmax", "openai", "pydantic")), origins
    assert origins["botocore"].startswith(str(provided)), origins
