"""One ``--store aws:<table>/<bucket>`` value, one S3 location, for every command (user-test finding 1).

``archmax invoke`` runs the functions with the stack's ``SESSIONS_PREFIX``; every other command opens
the store itself. A bare ``aws:<table>/<bucket>`` must mean the same key root for both (the stack's
``sessions``, template.yaml Globals), so the CLI reads what the functions wrote; an explicit
``/<prefix>`` wins. Real parts: the repository's ``functions/send/app.py`` on boto3 against the moto
server of ``tests/stores/aws/moto_env.py``.
"""

from __future__ import annotations

import importlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax.cli import main
from archmax.cli.invoke import invoke_environment, read_template
from archmax.cli.workspace import DEFAULT_SESSIONS_PREFIX, open_store
from archmax.stores.aws import AwsStore

REPO = Path(__file__).resolve().parents[3]
SCRIPT = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
]


def moto_env() -> Any:
    return importlib.import_module("stores.aws.moto_env")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """A fresh moto (sessions table and bucket from template.yaml) that boto3 in this process reaches."""
    env = moto_env().fresh_env()
    monkeypatch.setenv("AWS_ENDPOINT_URL", env.server.endpoint_url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", moto_env().REGION)
    for key, value in moto_env().CREDENTIALS.items():
        monkeypatch.setenv(key.upper(), value)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"archmax-prefix-{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("NO_COLOR", "1")
    for key in ("ARCHMAX_MODEL", "SESSIONS_PREFIX", "INBOX_TABLE", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)  # the invoke's local inbox folder lands here, not in the repository
    return env


def test_the_bare_default_is_the_deployed_stacks_sessions_prefix() -> None:
    doc = read_template(REPO / "template.yaml")
    assert doc["Globals"]["Function"]["Environment"]["Variables"]["SESSIONS_PREFIX"] == DEFAULT_SESSIONS_PREFIX


def test_invoke_and_every_other_command_agree_on_the_prefix_of_one_store_value(monkeypatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    doc = read_template(REPO / "template.yaml")
    for flag in ("aws:t/b", "aws:t/b/", "aws:t/b/prod/archmax"):
        env = invoke_environment(doc, "SendFunction", REPO, workflow=None, store=flag, inbox_table=None,
                                 model=None, environ={"SESSIONS_PREFIX": "elsewhere"})  # fmt: skip
        store = open_store(flag, REPO)
        assert isinstance(store, AwsStore)
        assert AwsStore("t", "b", env["SESSIONS_PREFIX"]).keys.root == store.keys.root, flag


def test_what_invoke_wrote_under_a_bare_store_value_is_what_the_other_commands_read(
    aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "model.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    store_flag = f"aws:{aws.table_name}/{aws.bucket}"
    flags = ["--root", str(REPO), "--store", store_flag]

    code = main([*flags, "--model", f"scripted:{script}", "invoke", "send",
                 "-e", str(REPO / "events/apigw_send_message.json")])  # fmt: skip
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["statusCode"] == 202

    keys = [o["Key"] for o in aws.s3.list_objects_v2(Bucket=aws.bucket).get("Contents", [])]
    assert keys and all(key.startswith("sessions/") for key in keys), keys

    code = main([*flags, "--json", "sessions", "AAQk-1"])  # the session's files, read through S3
    shown = json.loads(capsys.readouterr().out)
    assert code == 0 and shown["status"] == "awaiting_input" and shown["state"] == "clarify"

    # and what the CLI writes itself (a file of the session, kept in S3) lands in the same tree
    note = tmp_path / "note.txt"
    note.write_text("order ORD-1001", encoding="utf-8")
    script.write_text(yaml.safe_dump(SCRIPT))
    code = main(["--root", str(REPO / "examples"), "--store", store_flag, "--model", f"scripted:{script}",
                 "run", "support-inbox", "Where is my parcel?", "--session", "cli-1", "--trigger", "email_received",
                 "--file", f"note={note}"])  # fmt: skip
    ran = capsys.readouterr()
    assert code == 0, ran.err
    keys = [o["Key"] for o in aws.s3.list_objects_v2(Bucket=aws.bucket).get("Contents", [])]
    assert any("cli-1" in key and key.endswith("note.txt") for key in keys), keys
    assert all(key.startswith("sessions/") for key in keys), keys


def test_the_cli_host_over_an_aws_store_reads_the_stacks_inbox_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 on the CLI with ``--store aws:...`` (found by attack29; fixed).

    ``Context.host`` gives a store without a folder a ``MemoryInbox``, so ``archmax run``, ``email``,
    ``reply`` and ``deliver --delivery-id`` never see a key that waits in the deployed stack's
    DynamoDB inbox (``INBOX_TABLE``), and apply it ahead of the firings that arrived before it there.
    ``archmax invoke`` already takes ``--inbox-table``; the firing commands take no such flag and read
    no ``INBOX_TABLE``. A fix: ``Context.host`` opens ``DynamoInbox(INBOX_TABLE)`` (as
    ``hosting/wiring.py``'s ``_inbox`` does for the functions) when the store is ``aws:`` and the
    table is named (``INBOX_TABLE``, or an ``--inbox-table`` flag on those commands).
    """
    from types import SimpleNamespace

    from archmax import FakeClock
    from archmax.cli.context import Context

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("INBOX_TABLE", "archmax-inbox")
    cli = Context(SimpleNamespace(root=str(REPO), store="aws:t/b", command="run"))
    agent = SimpleNamespace(runtime=SimpleNamespace(clock=FakeClock("2026-01-01T00:00:00.000Z")))
    inbox = cli.host(agent).inbox
    assert type(inbox).__name__ == "DynamoInbox" and inbox.table_name == "archmax-inbox"
