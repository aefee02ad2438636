"""X-Ray subsegments for the turn, the model call and the store commit, annotated with the session id.

Rule source: issue 11 item 5 (Tracer subsegments). The send function runs in a fresh interpreter
with Lambda's tracing environment (``LAMBDA_TASK_ROOT``, a sampled ``_X_AMZN_TRACE_ID``) and
``AWS_XRAY_DAEMON_ADDRESS`` pointing at a UDP socket this test reads on 127.0.0.1: the X-Ray SDK
sends what it would send to the daemon, and the test reads the subsegments' JSON.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from .conftest import EVENTS, PARK, REPO, SUPPORT_INBOX

DRIVER = r"""
import importlib.util, json, sys
from archmax.testing import FakeLambdaContext
spec = importlib.util.spec_from_file_location("send_app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with open(sys.argv[2]) as f:
    print(json.dumps(module.lambda_handler(json.load(f), FakeLambdaContext())))
"""


def walk(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found = [doc]
    for sub in doc.get("subsegments", []) or []:
        found.extend(walk(sub))
    return found


def test_a_send_traces_its_turn_model_calls_and_commits_with_the_session_id(tmp_path: Path) -> None:
    daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    daemon.bind(("127.0.0.1", 0))
    daemon.settimeout(0.5)
    script = tmp_path / "model.yaml"
    script.write_text(yaml.safe_dump(PARK))
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
        "WORKFLOW_DIR": str(SUPPORT_INBOX),
        "ARCHMAX_ROOT": str(tmp_path / "sessions"),
        "ARCHMAX_MODEL": f"scripted:{script}",
        "ARCHMAX_DRAIN": "inline",
        "POWERTOOLS_SERVICE_NAME": "archmax",
        "LAMBDA_TASK_ROOT": str(tmp_path),
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{daemon.getsockname()[1]}",
        "AWS_REGION": "us-east-1",
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, str(REPO / "functions" / "send" / "app.py"),
             str(EVENTS / "apigw_send_message.json")],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1])["statusCode"] == 202
        segments: list[dict[str, Any]] = []
        while True:
            try:
                datagram = daemon.recv(65536).decode()
            except TimeoutError:
                break
            segments.extend(walk(json.loads(datagram.split("\n", 1)[1])))
    finally:
        daemon.close()
    by_name: dict[str, list[dict[str, Any]]] = {}
    for seg in segments:
        by_name.setdefault(seg["name"], []).append(seg)
    assert {"turn", "model call", "store commit"} <= set(by_name), sorted(by_name)
    (turn,) = by_name["turn"]
    assert turn["annotations"]["session_id"] == "AAQk-1" and turn["annotations"]["workflow"] == "support-inbox"
    assert turn["annotations"]["operation"] == "send" and turn["annotations"]["trigger"] == "email_received"
    assert len(by_name["model call"]) == len(PARK)  # one per model answer of the turn
    assert {s["annotations"]["session_id"] for s in by_name["model call"] + by_name["store commit"]} == {"AAQk-1"}
    assert {s["annotations"]["state"] for s in by_name["model call"]} == {"intake", "clarify"}
