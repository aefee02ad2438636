"""A workflow's ``tools.py`` reaches every host, and a grant no tool provides is refused before a session runs.

Rule source: issue 11 item 3 ("the same convention loads a workflow's tools in the CLI, ``archmax
serve`` and Lambda"; a ``tools.allow`` naming a tool no module provides is a validation error in
``archmax validate`` and at cold start) and item 4 (scripted models replay per session in every
host). ``archmax serve`` runs as a user starts it (a real HTTP server on 127.0.0.1, settings from
the environment, no model object injected); the Lambda path is ``from_environment`` at two cold
starts, as two invocations of a deployed function.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax.cli import main
from archmax.errors import WorkflowSpecError
from archmax.handlers import send, timer
from archmax.hosting.wiring import from_environment
from archmax.serve import serve
from archmax.spec import load_workflow
from archmax.testing import FakeLambdaContext
from archmax.workflow_tools import load_checked_tools, load_tools

from .conftest import EVENTS, REPO
from .test_serve import request

BANK_CHECK = REPO / "examples" / "workflows" / "bank-check"
POSTED = {"transactions": [{"reference": "INV-1042", "amount": 1250.0, "currency": "EUR", "posted": "2025-01-01"}]}
FOUND = [
    {"expect_state": "check-bank", "call": {"lookup_transaction": {"reference": "INV-1042"}}},
    {"expect_state": "check-bank", "call": {"archmax_advance": {"to": "reconcile", "reason": "INV-1042 posted"}}},
    {"expect_state": "reconcile", "say": "INV-1042 posted: 1250 EUR."},
]


@pytest.fixture
def statement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bank statement on which INV-1042 has posted (the tool reads ``BANK_STATEMENT``)."""
    path = tmp_path / "statement.json"
    path.write_text(json.dumps(POSTED), encoding="utf-8")
    monkeypatch.setenv("BANK_STATEMENT", str(path))
    return path


def script(tmp_path: Path, entries: list[dict[str, Any]]) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(entries), encoding="utf-8")
    return f"scripted:{path}"


def tool_results(messages: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == "tool" and m.get("name") == name]


def test_archmax_serve_finds_the_payment_with_the_workflows_tools(tmp_path: Path, statement: Path) -> None:
    env = {"ARCHMAX_MODEL": script(tmp_path, FOUND)}
    server = serve(BANK_CHECK, root=tmp_path / "sessions", port=0, sweep_interval_s=None, env=env)
    try:
        status, accepted = request(
            f"{server.url}/triggers/payment_expected",
            "POST",
            {"reference": "INV-1042", "message": "Payment INV-1042 is expected."},
            {"Content-Type": "application/json"},
        )
        assert status == 202, accepted
        status, summary = request(f"{server.url}/sessions/{accepted['session_id']}")
        assert status == 200 and summary["status"] == "completed" and summary["workflow_state"] == "reconcile"
        messages = [m.model_dump() for m in server.collaborators.agent.sessions.messages(accepted["session_id"])]
    finally:
        server.stop()
    (looked_up,) = tool_results(messages, "lookup_transaction")
    assert looked_up["status"] == "success" and json.loads(looked_up["content"])["found"] is True


def lambda_env(tmp_path: Path, workflow: Path, model: str) -> dict[str, str]:
    return {
        "WORKFLOW_DIR": str(workflow),
        "ARCHMAX_ROOT": str(tmp_path / "sessions"),
        "ARCHMAX_MODEL": model,
        "ARCHMAX_DRAIN": "inline",
    }


def test_each_cold_start_replays_the_script_per_session_and_loads_the_tools(
    tmp_path: Path, statement: Path, clock: Any
) -> None:
    statement.write_text(json.dumps({"transactions": []}), encoding="utf-8")  # not posted on day 0
    entries = [
        {"expect_state": "check-bank", "call": {"lookup_transaction": {"reference": "INV-1042"}}},
        {
            "expect_state": "check-bank",
            "say": "Not posted yet.",
            "call": {"archmax_wait": {"reason": "not yet", "until": "1d"}},
        },
        *FOUND,
    ]
    env = lambda_env(tmp_path, BANK_CHECK, script(tmp_path, entries))
    trigger = json.loads((EVENTS / "apigw_trigger_webhook.json").read_text())
    trigger["rawPath"] = "/triggers/payment_expected"
    trigger["routeKey"] = trigger["requestContext"]["routeKey"] = "POST /triggers/{trigger}"
    trigger["pathParameters"] = {"trigger": "payment_expected"}
    trigger["body"] = json.dumps({"reference": "INV-1042", "message": "Payment expected."})
    trigger["isBase64Encoded"] = False

    first = send.build(from_environment(env, clock=clock))  # cold start 1: send parks the session
    answer = first(trigger, FakeLambdaContext())
    assert answer["statusCode"] == 202, answer
    sid = json.loads(answer["body"])["session_id"]

    statement.write_text(json.dumps(POSTED), encoding="utf-8")  # posted overnight
    clock.advance(days=2)
    later = from_environment(env, clock=clock)  # cold start 2: a fresh process with a fresh model
    report = timer.build(later)(json.loads((EVENTS / "scheduled_sweep.json").read_text()), FakeLambdaContext())
    assert report["ok"] is True
    summary = later.agent.sessions.get(sid)
    # entry 3 (not entry 1 again): the script is read by the session's own answers
    assert summary is not None and summary.status == "completed" and summary.workflow_state == "reconcile"
    found = tool_results([m.model_dump() for m in later.agent.sessions.messages(sid)], "lookup_transaction")
    assert [json.loads(r["content"])["found"] for r in found] == [False, True]


@pytest.fixture
def typo_workflow(tmp_path: Path) -> Path:
    """bank-check whose state grants ``lookup_transactoin``, which its tools.py does not provide."""
    folder = tmp_path / "workflows" / "bank-typo"
    shutil.copytree(BANK_CHECK, folder)
    spec = folder / "workflow.yaml"
    spec.write_text(spec.read_text().replace("allow: [lookup_transaction]", "allow: [lookup_transactoin]"))
    return folder


def test_a_grant_no_tool_provides_fails_the_cold_start_naming_it(tmp_path: Path, typo_workflow: Path) -> None:
    with pytest.raises(WorkflowSpecError) as caught:
        from_environment(lambda_env(tmp_path, typo_workflow, "bedrock:some-model"))
    assert str(caught.value) == (
        "states.check-bank.tools.allow.0: no host tool 'lookup_transactoin' (provided: lookup_transaction)"
    )


def test_archmax_validate_reports_the_same_grant(tmp_path: Path, typo_workflow: Path, capsys: Any) -> None:
    assert main(["--root", str(tmp_path), "validate", "bank-typo"]) == 1
    assert "states.check-bank.tools.allow.0: no host tool 'lookup_transactoin'" in capsys.readouterr().out
    assert main(["--root", str(REPO / "examples"), "validate", "bank-check"]) == 0


def test_a_workflow_without_tools_py_granting_a_tool_is_refused(tmp_path: Path, typo_workflow: Path) -> None:
    (typo_workflow / "tools.py").unlink()
    with pytest.raises(WorkflowSpecError, match="provided: none"):
        load_checked_tools(load_workflow(typo_workflow))


def test_a_tools_py_that_fails_to_import_is_a_workflow_error_naming_the_file(typo_workflow: Path) -> None:
    (typo_workflow / "tools.py").write_text("import no_such_module_here\nTOOLS = []\n")
    with pytest.raises(WorkflowSpecError, match=r"tools\.py: importing .* failed: ModuleNotFoundError"):
        load_tools(typo_workflow)
    (typo_workflow / "tools.py").write_text("TOOLS = 'lookup'\n")
    with pytest.raises(WorkflowSpecError, match="must define TOOLS"):
        load_tools(typo_workflow)
