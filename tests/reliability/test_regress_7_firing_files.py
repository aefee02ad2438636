"""Issue 9, scenario 7: a firing's files are part of the firing.

An inbound mail with four attachments; placing the third fails (S3 answers ``SlowDown`` until botocore
gives up; on the local stores a write error). The inbox item stays pending and the sweep re-drives it:
the turn must then run with all four ``attachment_*`` variables, each file placed once (the two placed
before the failure found again, not copied), the item done. Rule source: seed "Files handed to a
session", BEHAVIOUR.md §9.5, DESIGN.md §3 "Inbox"; issue 9 item 7. Every store kind.
"""

from __future__ import annotations

from typing import Any

from archmax.errors import StoreError
from archmax.session.firing import FileIn, Firing
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import AwsFault, Env

FILES = {f"attachment_{i}": FileIn(name=f"{n}.pdf", content=b"%PDF-1.7\x00\xff" + n.encode() * 64) for i, n in enumerate("abcd", 1)}
ANSWER = {"say": "I have your four files."}


class FailsOnce:
    """A store whose first write of a path ending in ``suffix`` fails (a disk or network error), once."""

    def __init__(self, inner: Any, suffix: str) -> None:
        self._inner, self._suffix, self.fired = inner, suffix, 0
        self.capabilities = inner.capabilities

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        if not self.fired and any(p.endswith(self._suffix) for p in files):
            self.fired += 1
            raise StoreError("writing the file failed", session_id=session_id)
        self._inner.upload_files(session_id, files, create_only)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _mail() -> Firing:
    return Firing(
        trigger="email_received",
        message="The invoices are attached.",
        variables={"conversation_id": "m7"},
        files=FILES,
        delivery_id="invoices@example.org",
    )


def test_a_redriven_firing_places_every_file_once_before_its_turn_runs(env: Env) -> None:
    if env.kind == "aws":
        host = env.host([ANSWER])
        fault = AwsFault(env.aws.s3, "PutObject", "slow_down", times=10, when=lambda request: "/c.pdf" in request.url)
        with fault:  # S3 keeps answering SlowDown to the third file's put, through botocore's retries
            host.accept(_mail())
        assert fault.fired >= 2
    else:
        from archmax import create_agent
        from archmax.hosting.host import Host
        from archmax.models.scripted import ScriptedModel
        from reliability.regress_env import SUPPORT_INBOX

        failing = FailsOnce(env.store, "/c.pdf")
        host = Host(create_agent(SUPPORT_INBOX, failing, ScriptedModel([]), clock=env.clock), env.inbox)
        host.accept(_mail())
        assert failing.fired == 1
        host = env.host([ANSWER])

    assert [i.delivery_id for i in env.inbox.pending("m7")] == ["invoices@example.org"]  # not lost, not failed

    report = host.sweep()

    assert [r.results for r in report.redriven] == [["completed"]]
    assert env.inbox.get("m7", "invoices@example.org").status == "done"
    store = env.other_store()
    variables = store.load("m7").variables
    paths = {name: variables[name].value for name in FILES}
    assert paths == {name: f"scratchpad/attachments/{f.name}" for name, f in FILES.items()}
    for name, file in FILES.items():
        assert store.get("m7", paths[name]) == file.content
    assert store.list_files("m7", "scratchpad/attachments/") == sorted(paths.values())  # no orphan, no copy
    users = [m.content for m in store.load("m7").messages if m.role == "user"]
    assert users == ["The invoices are attached."]
