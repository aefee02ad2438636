"""``archmax invoke``: one Lambda invocation in-process, with the template's environment (no Docker).

Rule source: issue 11 item 6. The functions are the repository's ``functions/<name>/app.py`` (the
template's CodeUri), the events are ``events/*.json``, the environment comes from ``template.yaml``.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax.cli import main
from archmax.cli.invoke import invoke_environment, read_template
from archmax.stores.filesystem import FilesystemStore

REPO = Path(__file__).resolve().parents[3]
SCRIPT = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
    {"call": {"archmax_advance": {"to": "answer", "reason": "the reply names ORD-1001"}}},
    {"say": "ORD-1001 ships tomorrow."},
]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    # a service of its own: Powertools keeps one handler per service name for the process
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"archmax-invoke-{uuid.uuid4().hex[:8]}")
    for key in ("ARCHMAX_MODEL", "SESSIONS_TABLE", "SESSIONS_BUCKET", "INBOX_TABLE", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(key, raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, list[dict[str, Any]]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    answer = json.loads(captured.out) if captured.out.strip() else None
    logs = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    return code, answer, logs


def test_each_function_serves_its_event_in_process_with_logs_on_stderr(
    env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "model.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    flags = ["--root", str(REPO), "--store", str(tmp_path / "sessions"), "--model", f"scripted:{script}"]

    code, answer, logs = run(capsys, *flags, "invoke", "send", "-e", str(REPO / "events/apigw_send_message.json"))
    assert code == 0 and answer["statusCode"] == 202
    (outcome,) = [line for line in logs if line.get("message") == "outcome"]
    assert outcome["session_id"] == "AAQk-1" and outcome["kind"] == "parked"
    assert outcome["function_name"] == "local-send" and outcome["workflow"] == "support-inbox"

    code, answer, _ = run(capsys, *flags, "invoke", "deliver", "-e", str(REPO / "events/apigw_deliver.json"))
    assert code == 0 and json.loads(answer["body"])["kind"] == "completed"
    code, answer, _ = run(capsys, *flags, "invoke", "resolve", "-e", str(REPO / "events/apigw_get_session.json"))
    assert code == 0 and json.loads(answer["body"])["status"] == "completed"
    code, answer, _ = run(capsys, *flags, "invoke", "timer", "-e", str(REPO / "events/scheduled_sweep.json"))
    assert code == 0 and answer["ok"] is True
    assert FilesystemStore(tmp_path / "sessions").head("AAQk-1") is not None  # the store --store named


def test_the_environment_is_the_templates_defaults_then_the_process_then_the_flags(tmp_path: Path) -> None:
    doc = read_template(REPO / "template.yaml")
    env = invoke_environment(doc, "SendFunction", REPO, workflow=None, store=None, inbox_table=None, model=None,
                             environ={})  # fmt: skip
    params = doc["Parameters"]
    assert env["ARCHMAX_MODEL"] == params["ModelId"]["Default"]
    assert env["ARCHMAX_MODEL_MAX_TOKENS"] == str(params["ModelMaxTokens"]["Default"])
    assert env["WORKFLOW_DIR"] == str(REPO / "examples" / "workflows" / params["Workflow"]["Default"])
    assert env["ARCHMAX_ROOT"] == str(REPO / "sessions") and env["ARCHMAX_DRAIN"] == "inline"
    assert "SESSIONS_TABLE" not in env and env["POWERTOOLS_SERVICE_NAME"] == "archmax"

    env = invoke_environment(doc, "SendFunction", REPO, workflow="bank-check", store="aws:t/b/p", inbox_table="i",
                             model=None, environ={"ARCHMAX_MODEL": "openai:x", "UNRELATED": "1"})  # fmt: skip
    assert env["ARCHMAX_MODEL"] == "openai:x" and "UNRELATED" not in env
    assert env["WORKFLOW_DIR"].endswith("examples/workflows/bank-check")
    assert (env["SESSIONS_TABLE"], env["SESSIONS_BUCKET"], env["SESSIONS_PREFIX"], env["INBOX_TABLE"]) == (
        "t", "b", "p", "i"
    )  # fmt: skip
    assert "ARCHMAX_ROOT" not in env

    team = tmp_path / "workflows" / "support-inbox"  # your own workflows/ win over the examples
    team.mkdir(parents=True)
    (team / "workflow.yaml").write_text("x: 1\n")
    env = invoke_environment(doc, "TimerFunction", tmp_path, workflow=None, store=None, inbox_table=None,
                             model="scripted:m.yaml", environ={})  # fmt: skip
    assert env["WORKFLOW_DIR"] == str(team) and env["ARCHMAX_MODEL"] == "scripted:m.yaml"


def test_usage_errors_exit_2_and_a_raising_handler_exits_1(
    env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--root", str(REPO), "--store", str(tmp_path / "s")]
    assert main([*base, "invoke", "send", "-e", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the event" in capsys.readouterr().err
    assert main([*base, "invoke", "send", "--workflow", "nope", "-e", str(REPO / "events/send_drain.json")]) == 2
    assert "no workflow 'nope'" in capsys.readouterr().err
    # a model configuration that cannot be built fails the cold start, as the Lambda init would
    (tmp_path / "e.json").write_text(json.dumps({"drain": "x" * 3}))
    code = main([*base, "--model", "bedrock:", "invoke", "send", "-e", str(tmp_path / "e.json")])
    captured = capsys.readouterr()
    assert code == 1 and json.loads(captured.out)["errorType"] == "ModelConfigurationError"


def test_ses_mail_on_the_filesystem_store_is_a_usage_error_naming_the_way_and_writes_nothing(
    env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # user-test finding 8: the raw mail lives in the sessions bucket, which a filesystem store lacks
    store = tmp_path / "s"
    base = ["--root", str(REPO), "--store", str(store)]
    code = main([*base, "invoke", "send", "-e", str(REPO / "events/ses_inbound.json")])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("error: SES mail 'k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01' is read from the sessions bucket")
    assert "--store aws:<table>/<bucket>" in line and "archmax email <file.eml>" in line
    assert not store.exists()

    # a mail refused on its spam verdict is never read: that event still runs locally
    code, answer, _ = run(capsys, *base, "invoke", "send", "-e", str(REPO / "events/ses_inbound_spam.json"))
    assert code == 0 and answer["ok"] is True and "refused" in answer["records"][0]
