"""On AWS, artifacts are views materialized on read: an operation writes none (BEHAVIOUR.md §9.5; issue 10).

Also: the store's own boto3 clients are built on first use, not when the store is built (cold import).
"""

from __future__ import annotations

import json
from typing import Any

from archmax import FakeClock, create_agent
from archmax.models.scripted import ScriptedModel
from archmax.spec import workflow_from_dict
from archmax.stores.aws.clients import LazyClient

from .moto_env import CallLog

TWO = {
    "states": {
        "start": {"triggers": {"manual": None}, "transitions": [{"to": "done", "description": "Done."}]},
        "done": {"instructions": "Answer."},
    }
}


def test_operations_write_no_artifact_objects_and_sessions_artifact_renders_them(aws_env: Any) -> None:
    store = aws_env.store()
    script = [{"say": "Which order?", "call": {"archmax_wait": {"reason": "the order"}}}, {"say": "ok"}]
    agent = create_agent(workflow_from_dict(TWO, "demo"), store, ScriptedModel(script), clock=FakeClock())
    with CallLog(aws_env.s3) as s3_calls:
        agent.workflow.send("s1", "Hi")
        agent.workflow.deliver("s1", trigger="t", message="order 7")
    puts = [c for c in s3_calls.calls if c == "s3.PutObject"]
    assert store.list_files("s1", "artifacts/") == []
    messages = store.load("s1").messages
    # Every commit rode in the item (the small first version's full chunk too), and no artifact was
    # written: nothing lands in the session's S3 folder; the one put is the spec snapshot (§9.4).
    listed = aws_env.s3.list_objects_v2(Bucket=aws_env.bucket, Prefix="s1/").get("Contents", [])
    assert store.head("s1").version >= 3 and listed == [] and len(puts) == 1
    trajectory = agent.sessions.artifact("s1", "trajectory").splitlines()
    assert [json.loads(line).get("content", "") for line in trajectory] == [m.content for m in messages]
    assert json.loads(agent.sessions.artifact("s1", "trail"))["steps"][-1]["reason"] == "t"


def test_a_lazy_client_is_built_at_first_use_only(monkeypatch: Any) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    client = LazyClient("s3")
    assert "not built" in repr(client)
    assert client.meta.service_model.service_name == "s3"
    assert "built" in repr(client) and "not built" not in repr(client)
