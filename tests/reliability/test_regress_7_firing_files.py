"""Issue 9, scenario 7: a firing's files are part of the firing.

An inbound mail with four attachments; placing the third fails (S3 answers ``SlowDown`` until botocore
gives up; on the local stores a write error). The inbox item stays pending and the sweep re-drives it:
the turn must then run with all four ``attachment_*`` variables, each file placed once (the two placed
before the failure taken back, or found again, never copied), the item done.

The files are placed before the commit that claims the session, and that commit carries their
variables, so also:

* a direct delivery whose process dies right after its claim is recovered by the sweep with its file
  (with or without a delivery id; a retry of the id is then a duplicate and places nothing);
* an inboxed firing whose file could not be placed, or whose process died right after its claim, keeps
  its file when another firing takes the session over before the sweep re-drives it;
* a claim that loses (a race, a commit that fails) takes back the files it placed, and one that landed
  although its answer was lost keeps them;
* the trigger's ``requires`` sees the placed files, and its verdict rides the claim, so a recovered turn
  never runs past an unmet requirement.

Rule source: seed "Files handed to a session", BEHAVIOUR.md §8 steps 4 and 6, §9.5, DESIGN.md §3 "Inbox";
issue 9 item 7. Every store kind.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax import SessionStatus, create_agent
from archmax.errors import DuplicateDeliveryError, SessionNotAwaitingInputError, StoreError
from archmax.hosting.host import Host
from archmax.models.scripted import ScriptedModel
from archmax.session.firing import FileIn, Firing
from archmax.spec import workflow_from_dict
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import AwsFault, DieAfterCommitWhere, Env, LoadsThen, ProcessDied

FILES = {
    f"attachment_{i}": FileIn(name=f"{n}.pdf", content=b"%PDF-1.7\x00\xff" + n.encode() * 64)
    for i, n in enumerate("abcd", 1)
}
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


# ---------------------------------------------------------------------- the claim carries the files

LEASE_S = 900
DOCS = workflow_from_dict(
    {
        "states": {
            "work": {
                "triggers": {
                    "manual": None,
                    "docs": {"requires": [{"name": "doc", "type": "file"}]},
                    "audit": {"requires": [{"name": "doc", "type": "file"}, "auditor"]},
                },
            }
        }
    },
    "files-demo",
)
WAIT = {"say": "Send me the file.", "call": {"archmax_wait": {"reason": "the file"}}}
DONE = {"say": "Thanks, filed."}
PDF = b"%PDF-1.7\x00\xff" + b"ev" * 64
ATTACHMENTS = "scratchpad/attachments/"


def _park(env: Env, sid: str) -> None:
    outcome = env.agent([WAIT], DOCS).workflow.send(sid, "Start.", trigger="manual")
    assert outcome.kind == "parked"


def _dying(env: Env, where: Any = None) -> Any:
    """An agent whose process dies right after the first commit that leaves a session running (its claim)."""
    claimed = where or (lambda rec: rec.status == SessionStatus.RUNNING)
    return create_agent(DOCS, DieAfterCommitWhere(env.store, claimed), ScriptedModel([]), clock=env.clock)


def _user_texts(env: Env, sid: str) -> list[str]:
    return [m.content for m in env.other_store().load(sid).messages if m.role == "user"]


def _assert_file(env: Env, sid: str, variable: str, name: str, data: bytes = PDF) -> None:
    store = env.other_store()
    rec = store.load(sid)
    assert rec.variables[variable].value == ATTACHMENTS + name
    assert store.get(sid, ATTACHMENTS + name) == data


@pytest.mark.parametrize("delivery_id", [None, "d-9"])
def test_a_direct_delivery_killed_right_after_its_claim_is_recovered_with_its_file(
    env: Env, delivery_id: str | None
) -> None:
    _park(env, "s1")
    with pytest.raises(ProcessDied):
        Host(_dying(env), env.inbox).deliver_now(
            "s1",
            trigger="ping",
            message="ev9",
            files={"f9": FileIn(name="ev9.pdf", content=PDF)},
            delivery_id=delivery_id,
        )
    stored = env.other_store().load("s1")
    assert stored.status == SessionStatus.RUNNING
    _assert_file(env, "s1", "f9", "ev9.pdf")  # the claim carried it

    env.clock.advance(seconds=LEASE_S + 1)
    report = env.host([DONE], DOCS).sweep()

    assert report.stale == [("s1", "completed")]
    _assert_file(env, "s1", "f9", "ev9.pdf")
    assert env.other_store().list_files("s1", ATTACHMENTS) == [ATTACHMENTS + "ev9.pdf"]
    assert _user_texts(env, "s1") == ["Start.", "ev9"]
    if delivery_id is not None:  # the caller retries after the sweep finished the turn: a duplicate
        with pytest.raises(DuplicateDeliveryError):
            env.host([], DOCS).deliver_now(
                "s1",
                trigger="ping",
                message="ev9",
                files={"f9": FileIn(name="ev9.pdf", content=PDF)},
                delivery_id=delivery_id,
            )
        assert env.other_store().list_files("s1", ATTACHMENTS) == [ATTACHMENTS + "ev9.pdf"]


def test_an_inboxed_firing_killed_after_its_claim_keeps_its_file_when_another_firing_takes_the_session_over(
    env: Env,
) -> None:
    _park(env, "s0")
    with pytest.raises(ProcessDied):  # the drain inside accept applies it: claimed, then the process dies
        Host(_dying(env), env.inbox).accept(
            Firing(trigger="manual", message="ev7", files={"f7": FileIn(name="ev7.pdf", content=PDF)}),
            session_id="s0",
        )
    [item] = env.inbox.pending("s0")
    env.clock.advance(seconds=LEASE_S + 1)
    taken_over = env.agent([DONE], DOCS).workflow.send("s0", "ev8", delivery_id="d-8")  # the dead turn is taken over
    assert taken_over.recovered and taken_over.kind == "completed"

    report = env.host([], DOCS).sweep()  # ev7's id is no longer the last applied one: a duplicate, marked done

    assert [r.results for r in report.redriven] == [["duplicate"]]
    assert env.inbox.get("s0", item.delivery_id).status == "done"
    assert _user_texts(env, "s0") == ["Start.", "ev7", "ev8"]
    _assert_file(env, "s0", "f7", "ev7.pdf")


def test_an_inboxed_firing_whose_file_failed_keeps_it_when_another_firing_comes_first(env: Env) -> None:
    _park(env, "s0")
    before = env.other_store().load("s0").version
    failing = FailsOnce(env.store, "/ev7.pdf")
    Host(create_agent(DOCS, failing, ScriptedModel([]), clock=env.clock), env.inbox).accept(
        Firing(trigger="manual", message="ev7", files={"f7": FileIn(name="ev7.pdf", content=PDF)}),
        session_id="s0",
    )
    assert failing.fired == 1
    [item] = env.inbox.pending("s0")  # not now: nothing of the firing stored, the session still parked
    assert env.other_store().load("s0").version == before
    assert env.other_store().list_files("s0", ATTACHMENTS) == []
    env.agent([WAIT], DOCS).workflow.send("s0", "ev8", delivery_id="d-8")

    report = env.host([DONE], DOCS).sweep()

    assert [r.results for r in report.redriven] == [["completed"]]
    assert env.inbox.get("s0", item.delivery_id).status == "done"
    assert _user_texts(env, "s0") == ["Start.", "ev8", "ev7"]
    _assert_file(env, "s0", "f7", "ev7.pdf")
    assert env.other_store().list_files("s0", ATTACHMENTS) == [ATTACHMENTS + "ev7.pdf"]


def test_a_delivery_that_loses_the_park_race_takes_back_the_files_it_placed(env: Env) -> None:
    _park(env, "s1")
    # another container's instance: it reads the table, and the race lands between that read and the
    # claim (one acting on a view it remembers decides again on a fresh read: tests/hosting/test_claim_is_read.py)
    racing = LoadsThen(env.other_store())
    loser = create_agent(DOCS, racing, ScriptedModel([]), clock=env.clock)
    winner = env.agent([WAIT], DOCS)
    racing.arm(lambda: winner.workflow.deliver("s1", trigger="ping", message="ev2", delivery_id="d-2"))

    with pytest.raises(SessionNotAwaitingInputError) as lost:
        loser.workflow.deliver(
            "s1", trigger="ping", message="ev3", files={"f3": FileIn(name="ev3.pdf", content=PDF)}, delivery_id="d-3"
        )

    assert racing.fired == 1 and lost.value.lost_race
    assert env.other_store().list_files("s1", ATTACHMENTS) == []
    assert "f3" not in env.other_store().load("s1").variables
    assert _user_texts(env, "s1") == ["Start.", "ev2"]


class CommitFails:
    """A store whose next commit raises ``StoreError``: before it applied, or after (its answer lost)."""

    def __init__(self, inner: Any, *, applied: bool) -> None:
        self._inner, self._applied, self.fired = inner, applied, 0
        self.capabilities = inner.capabilities

    def commit(self, *args: Any, **kwargs: Any) -> None:
        if self.fired:
            return self._inner.commit(*args, **kwargs)
        self.fired += 1
        if self._applied:
            self._inner.commit(*args, **kwargs)
        raise StoreError("the commit's answer was lost" if self._applied else "the commit failed")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize("applied", [False, True], ids=["failed", "answer-lost"])
def test_a_claim_that_fails_takes_back_its_files_and_one_that_landed_keeps_them(env: Env, applied: bool) -> None:
    _park(env, "s1")
    store = CommitFails(env.store, applied=applied)
    agent = create_agent(DOCS, store, ScriptedModel([]), clock=env.clock)

    with pytest.raises(StoreError):
        agent.workflow.deliver(
            "s1", trigger="ping", message="ev4", files={"f4": FileIn(name="ev4.pdf", content=PDF)}, delivery_id="d-4"
        )

    rec = env.other_store().load("s1")
    if not applied:  # the session is exactly as it was
        assert rec.status == SessionStatus.AWAITING_INPUT and "f4" not in rec.variables
        assert env.other_store().list_files("s1", ATTACHMENTS) == []
        return
    assert rec.status == SessionStatus.RUNNING  # the claim landed: its file stays, named by its variable
    _assert_file(env, "s1", "f4", "ev4.pdf")
    env.clock.advance(seconds=LEASE_S + 1)
    assert env.host([DONE], DOCS).sweep().stale == [("s1", "completed")]
    _assert_file(env, "s1", "f4", "ev4.pdf")


def test_requires_see_the_placed_file_and_a_turn_killed_after_its_claim_is_recovered_with_it(env: Env) -> None:
    with pytest.raises(ProcessDied):
        _dying(env).workflow.send(
            "s2", "Here it is.", trigger="docs", files={"doc": FileIn(name="doc.pdf", content=PDF)}
        )
    assert env.other_store().load("s2").status == SessionStatus.RUNNING  # requires met by the placed file
    env.clock.advance(seconds=LEASE_S + 1)

    assert env.host([DONE], DOCS).sweep().stale == [("s2", "completed")]
    _assert_file(env, "s2", "doc", "doc.pdf")


def test_an_unmet_requirement_is_committed_by_the_claim_so_a_dead_process_leaves_no_turn_to_run(env: Env) -> None:
    claim = lambda rec: rec.version == 1  # noqa: E731 - a new session's first commit is its claim
    with pytest.raises(ProcessDied):
        _dying(env, claim).workflow.send(
            "s3", "Here it is.", trigger="audit", files={"doc": FileIn(name="doc.pdf", content=PDF)}
        )
    rec = env.other_store().load("s3")
    assert rec.status == SessionStatus.REJECTED  # §8 step 6 ran before the claim, with the placed file
    assert rec.rejected == "Refusing to start: trigger 'audit' requires 'auditor', which this firing does not supply."
    env.clock.advance(seconds=LEASE_S + 1)

    assert env.host([], DOCS).sweep().stale == []  # nothing to continue (and no model call: the script is empty)
    assert env.other_store().load("s3").status == SessionStatus.REJECTED
    _assert_file(env, "s3", "doc", "doc.pdf")  # a rejection applies the firing: its file is the session's


class CommitsThen:
    """A store whose next commit first lets ``meanwhile`` run to its end (another process's whole operation)."""

    def __init__(self, inner: Any) -> None:
        self._inner, self._meanwhile, self.fired = inner, None, 0
        self.capabilities = inner.capabilities

    def arm(self, meanwhile: Any) -> None:
        self._meanwhile = meanwhile

    def commit(self, *args: Any, **kwargs: Any) -> None:
        if self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            self.fired += 1
            meanwhile()
        return self._inner.commit(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_claim_lost_to_the_same_firing_applied_elsewhere_keeps_the_file_the_winner_reused(env: Env) -> None:
    """Two processes apply one delivery (a wake and a sweep): both place its file, the second reusing the
    first's (same id, name and bytes); the first then loses the claim and must not take back a file the
    winner's committed record names (found by the AWS soak: 'file ... holds None')."""
    _park(env, "s1")
    racing = CommitsThen(env.store)
    loser = create_agent(DOCS, racing, ScriptedModel([]), clock=env.clock)
    winner = env.agent([WAIT], DOCS)
    files = {"f3": FileIn(name="ev3.pdf", content=PDF)}
    racing.arm(lambda: winner.workflow.deliver("s1", trigger="ping", message="ev3", files=files, delivery_id="d-3"))

    with pytest.raises(DuplicateDeliveryError):  # the winner applied this very delivery: a duplicate, not a refusal
        loser.workflow.deliver("s1", trigger="ping", message="ev3", files=files, delivery_id="d-3")

    assert racing.fired == 1
    _assert_file(env, "s1", "f3", "ev3.pdf")  # named by the winner's record, and still there
    assert env.other_store().list_files("s1", ATTACHMENTS) == [ATTACHMENTS + "ev3.pdf"]
    assert _user_texts(env, "s1") == ["Start.", "ev3"]  # applied once
