"""Issue 22 item 2 over ``archmax serve``: a delivery and a decision posted to a child's id reach the pair.

The server's routes hand the child's id to the same handlers as every host; the firing is applied
through the caller, so the caller finishes with its child. Filesystem store (serve's own).
Rule source: BEHAVIOUR.md §5.10; issue 22 item 2.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from archmax.serve import serve

from ._pair import CALLER, CHILD, PairModel, workspace

JSON = {"Content-Type": "application/json"}


def post(url: str, body: Any) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=JSON)
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def child_url(server: Any, route: str) -> str:
    return f"{server.url}/sessions/{urllib.parse.quote(CHILD, safe='')}/{route}"


@pytest.mark.parametrize("mode", ["wait", "human"])
def test_a_firing_posted_to_the_childs_id_over_http_finishes_the_pair(tmp_path: Path, clock: Any, mode: str) -> None:
    desk, _ = workspace(tmp_path)
    server = serve(desk, root=tmp_path / "sessions", port=0, sweep_interval_s=None,
                   model=PairModel(mode), clock=clock, env={})  # fmt: skip
    try:
        agent = server.collaborators.agent
        agent.workflow.send(CALLER, "go")
        if mode == "wait":
            status, out = post(child_url(server, "deliveries"), {"trigger": "ping", "message": "<<A>>"})
        else:
            status, out = post(child_url(server, "decisions"), {"to": "approved"})
        assert status == 200, out
        assert out["kind"] == "completed"
        assert agent.sessions.get(CHILD).status == "completed"
        assert agent.sessions.get(CALLER).status == "completed"
    finally:
        server.stop()
