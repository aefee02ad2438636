"""BEHAVIOUR.md §5.10 (sub-workflows), §5.7 (a failed call stays pending), §4.1 (child ids), §7 notes.

Every workflow here is a real folder under ``tmp_path/workflows/``; children are found beside their
caller (or given with ``create_agent(workflows=...)``); one scripted model answers the caller's and the
children's calls in call order (§10.4).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax import FilesystemStore, MemoryStore, SessionStatus, create_agent
from archmax.models.scripted import ScriptedModel
from archmax.session.ids import parent_session_id

from ._support import harness, notes_of, results_of

LOOKUP = {
    "title": "Order lookup",
    "states": {
        "find": {
            "triggers": {
                "manual": {
                    "requires": [{"name": "order_id", "type": "string", "description": "The order."}],
                    "returns": [{"name": "status", "type": "string"}],
                }
            }
        }
    },
}


def caller(*, allow: str = "lookup", on_error: str | None = None, extra: dict | None = None) -> dict:
    ask: dict[str, Any] = {
        "triggers": {"manual": None},
        "tools": {"allow": [f"archmax_workflow_{allow}"]},
        "transitions": [{"to": "done", "description": "Answered."}],
    }
    if on_error:
        ask["on_error"] = on_error
    states = {"ask": ask, "done": None, "sorry": {"instructions": "Apologise."}}
    return {"states": states, **(extra or {})}


def workspace(tmp_path: Path, **docs: dict) -> Path:
    for slug, doc in docs.items():
        folder = tmp_path / "workflows" / slug
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workflow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return tmp_path / "workflows"


def call_lookup(**args: Any) -> dict:
    return {"call": {"archmax_workflow_lookup": args or {"order_id": "ORD-1"}}}


def setv(**values: Any) -> dict:
    return {"call": {"archmax_set_variables": {"variables": values}}}


def agent_for(tmp_path: Path, entries: list, docs: dict[str, dict], *, store=None, **kw):
    root = workspace(tmp_path, **docs)
    return harness(root / "parent", entries, store=store, **kw)


# ---------------------------------------------------------------- the tool


def test_a_granted_sub_workflow_is_offered_with_the_childs_manual_requires_as_parameters(tmp_path):
    h = agent_for(tmp_path, [{"say": "hi"}], {"parent": caller(), "lookup": LOOKUP})
    h.agent.workflow.send("s", "hello")
    [tool] = [t for t in h.model.requests[0].tools if t.name == "archmax_workflow_lookup"]
    assert tool.parameters == {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order."}},
        "required": ["order_id"],
    }
    assert "Order lookup" in tool.description


def test_a_root_allow_always_grant_offers_it_in_every_state_and_a_forbid_removes_it(tmp_path):
    doc = caller(allow="other", extra={"tools": {"allow_always": ["archmax_workflow_lookup"]}})
    doc["states"]["ask"]["tools"]["forbid"] = ["archmax_workflow_lookup"]
    h = agent_for(tmp_path, [{"say": "hi"}], {"parent": doc, "lookup": LOOKUP, "other": LOOKUP})
    assert "archmax_workflow_lookup" not in h.agent.spec.offered_tools("ask", [])
    assert "archmax_workflow_lookup" in h.agent.spec.offered_tools("sorry", [])


def test_a_child_that_finishes_within_the_call_answers_it_with_message_and_returns(tmp_path):
    entries = [call_lookup(), setv(status="shipped"), {"say": "ORD-1 has shipped."}, {"say": "Your order shipped."}]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": LOOKUP})
    out = h.agent.workflow.send("s", "Where is ORD-1?")
    assert (out.kind, out.reply) == ("completed", "Your order shipped.")
    [result] = results_of(out.messages, "archmax_workflow_lookup")
    assert result.status == "success"
    assert json.loads(result.content) == {"message": "ORD-1 has shipped.", "returns": {"status": "shipped"}}
    # the child's transcript, trail and other variables never reach the caller
    assert "status" not in out.variables and all(s.to in ("ask",) for s in out.trail)
    assert [(s.kind, s.to, s.workflow, s.status) for s in out.trail if s.kind == "sub-workflow"] == [
        ("sub-workflow", "ask", "lookup", "ok")
    ]


def test_without_declared_returns_the_result_is_just_the_message(tmp_path):
    child = {"states": {"find": {"triggers": {"manual": None}}}}
    entries = [{"call": {"archmax_workflow_lookup": {}}}, {"say": "Nothing to report."}, {"say": "ok"}]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": child})
    out = h.agent.workflow.send("s", "go")
    assert results_of(out.messages, "archmax_workflow_lookup")[0].content == "Nothing to report."


def test_the_child_is_an_ordinary_session_with_a_derived_id_and_locked_arguments(tmp_path):
    child = json.loads(json.dumps(LOOKUP))
    child["states"]["find"]["triggers"]["manual"]["requires"].append("title")
    entries = [
        call_lookup(order_id="ORD-1", title="Lookup of ORD-1"),
        setv(status="shipped"),
        {"say": "done"},
        call_lookup(order_id="ORD-2", title="x"),
        setv(status="lost"),
        {"say": "done"},
        {"say": "ok"},
    ]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": child})
    h.agent.workflow.send("s", "go")
    first, second = "s~ask:lookup:1", "s~ask:lookup:2"  # the ordinal counts the state's calls
    assert parent_session_id(first) == "s"
    rec = h.load(first)
    assert rec.workflow == "lookup" and rec.status == SessionStatus.COMPLETED
    assert (rec.variables["order_id"].value, rec.variables["order_id"].locked) == ("ORD-1", True)
    assert (rec.variables["title"].value, rec.variables["title"].locked) == ("Lookup of ORD-1", False)
    assert h.load(second).variables["order_id"].value == "ORD-2"
    assert h.agent.sessions.get(first).parent_session_id == "s"


def test_a_child_beside_nothing_can_be_given_at_assembly(tmp_path):
    parent = workspace(tmp_path / "a", parent=caller()) / "parent"
    child = workspace(tmp_path / "b", elsewhere=LOOKUP) / "elsewhere"
    model = ScriptedModel([call_lookup(), setv(status="ok"), {"say": "found"}, {"say": "done"}])
    agent = create_agent(parent, MemoryStore(), model, workflows={"lookup": child})
    assert agent.workflow.send("s", "go").kind == "completed"


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({}, "missing parameter(s): 'order_id'"),
        ({"order_id": 7}, "parameter 'order_id' must be of type 'string'"),
        ({"order_id": "${{nowhere}}"}, "nowhere"),
    ],
    ids=["missing", "mistyped", "unresolvable"],
)
def test_a_bad_parameter_is_refused_before_any_child_is_composed(tmp_path, args, why):
    entries = [{"call": {"archmax_workflow_lookup": args}}, {"say": "ok"}]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": LOOKUP})
    out = h.agent.workflow.send("s", "go")
    [result] = results_of(out.messages, "archmax_workflow_lookup")
    assert result.status == "blocked" and why in result.content
    assert h.store.list() == ["s"]


def test_a_disabled_child_is_refused(tmp_path):
    entries = [call_lookup(), {"say": "ok"}]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": {**LOOKUP, "disabled": True}})
    result = results_of(h.agent.workflow.send("s", "go").messages, "archmax_workflow_lookup")[0]
    assert result.status == "blocked" and "workflow 'lookup' is disabled" in result.content


def test_a_cycle_is_refused(tmp_path):
    parent = caller()
    loop_back = {"states": {"find": {"triggers": {"manual": None}, "tools": {"allow": ["archmax_workflow_parent"]}}}}
    entries = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"call": {"archmax_workflow_parent": {}}},
        {"say": "x"},
        {"say": "y"},
    ]
    h = agent_for(tmp_path, entries, {"parent": parent, "lookup": loop_back})
    h.agent.workflow.send("s", "go")
    child = h.load("s~ask:lookup:1")
    [result] = results_of(child.messages, "archmax_workflow_parent")
    assert result.status == "blocked" and "already on the call path (parent → lookup)" in result.content


def test_a_call_deeper_than_five_levels_is_refused(tmp_path):
    docs = {}
    chain = ["parent", "w1", "w2", "w3", "w4", "w5", "w6"]
    for slug, nxt in zip(chain, chain[1:] + [None], strict=True):
        state = {"triggers": {"manual": None}}
        if nxt:
            state["tools"] = {"allow": [f"archmax_workflow_{nxt}"]}
        docs[slug] = {"states": {"ask": state}}
    entries = [{"call": {f"archmax_workflow_{n}": {}}} for n in chain[1:]] + [{"say": "end"}] * 6
    h = agent_for(tmp_path, entries, docs)
    h.agent.workflow.send("s", "go")
    deepest = "s" + "".join(f"~ask:{n}:1" for n in chain[1:6])  # w5 is level 5
    rec = h.load(deepest)
    assert rec is not None and rec.workflow == "w5"
    [result] = results_of(rec.messages, "archmax_workflow_w6")
    assert result.status == "blocked" and "deeper than 5 levels" in result.content


# ---------------------------------------------------------------- failures


def test_a_child_that_raises_fails_the_call_and_the_failure_routes_when_the_model_finishes(tmp_path):
    entries = [
        call_lookup(),
        {"call": {"archmax_raise": {"code": "no-such-order", "reason": "unknown"}}},
        {"say": "I could not find it."},
        {"say": "Sorry about that."},
    ]
    h = agent_for(tmp_path, entries, {"parent": caller(on_error="sorry"), "lookup": LOOKUP})
    out = h.agent.workflow.send("s", "go")
    [result] = results_of(out.messages, "archmax_workflow_lookup")
    assert result.status == "error" and "raised 'no-such-order' in state 'find'" in result.content
    # the model got to answer in 'ask' first (the failure was pending), then it routed to on_error
    assert out.state == "sorry" and out.reply == "Sorry about that."
    assert [s.status for s in out.trail if s.kind == "sub-workflow"] == ["failed"]


def test_a_child_missing_its_returns_fails_the_call_naming_the_return_and_rejects_without_on_error(tmp_path):
    entries = [call_lookup(), {"say": "forgot to set it"}, {"say": "done"}]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": LOOKUP})
    out = h.agent.workflow.send("s", "go")
    [result] = results_of(out.messages, "archmax_workflow_lookup")
    assert "Not all return variables were set by the sub-workflow: 'status' was not set." in result.content
    assert out.kind == "rejected" and "sub-workflow 'lookup' failed" in out.rejected


def test_a_pending_failure_is_recovered_by_a_later_successful_call_of_the_same_workflow(tmp_path):
    entries = [call_lookup(), {"say": "oops"}, call_lookup(), setv(status="shipped"), {"say": "found"}, {"say": "done"}]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": LOOKUP})
    out = h.agent.workflow.send("s", "go")
    assert out.kind == "completed"
    assert [s.status for s in out.trail if s.kind == "sub-workflow"] == ["rejected", "ok"]


def test_a_pending_failure_is_cleared_by_a_successful_advance(tmp_path):
    advance = {"call": {"archmax_advance": {"to": "done", "reason": "answered anyway"}}}
    entries = [call_lookup(), {"say": "oops"}, advance, {"say": "done"}]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": LOOKUP})
    out = h.agent.workflow.send("s", "go")
    assert (out.kind, out.state) == ("completed", "done")


# ---------------------------------------------------------------- parks that delegate


WAITING = {
    "states": {
        "find": {
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "A person must approve."}],
        },
        "review": {"type": "human", "transitions": [{"to": "approved", "description": "Approved."}, {"to": "find", "description": "Again."}]},
        "approved": None,
    }
}  # fmt: skip


def test_a_child_that_waits_parks_the_caller_on_input_and_a_delivery_to_the_caller_resumes_the_child(tmp_path):
    entries = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number", "until": "1d"}}},
        {"say": "Found ORD-1."},  # the child, after the delivery
        {"say": "Your order is ORD-1."},  # the caller, in its calling state
    ]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": WAITING})
    out = h.agent.workflow.send("s", "go")
    assert (out.kind, out.parked_channel, out.state) == ("parked", "input", "ask")
    assert out.pending.reason == "the order number" and out.pending.resume_at == "2025-01-02T00:00:00.000Z"
    assert out.reply == "Which order?"  # the child's park message is what the caller's person reads
    assert h.load("s").park_counts == {}  # a child's park shown on the caller does not count (§5.4)
    assert h.agent.sessions.get("s~ask:lookup:1").status == SessionStatus.AWAITING_INPUT
    out = h.agent.workflow.deliver("s", trigger="email_reply", variables={"reply_body": "ORD-1"})
    assert (out.kind, out.reply, out.state) == ("completed", "Your order is ORD-1.", "ask")
    child = h.load("s~ask:lookup:1")
    assert child.status == SessionStatus.COMPLETED and child.variables["reply_body"].value == "ORD-1"
    assert [n.content for n in notes_of(out.messages, "sub-workflow")] == ["[sub-workflow: lookup] Found ORD-1."]


def test_a_child_at_a_human_state_makes_the_caller_present_its_decision_and_decisions_are_forwarded(tmp_path):
    advance = {"call": {"archmax_advance": {"to": "review", "reason": "needs approval"}}}
    entries = [
        {"call": {"archmax_workflow_lookup": {}}},
        advance,
        {"say": "Please approve the refund."},  # the child's handoff
        {"say": "It is pending your approval."},  # the child's reply-only call
        {"say": "Approved."},  # the child in 'approved'
        {"say": "The refund is approved."},  # the caller resumes
    ]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": WAITING})
    out = h.agent.workflow.send("s", "go")
    assert (out.kind, out.parked_channel, out.reply) == ("parked", "decision", "Please approve the refund.")
    assert out.delegation == {
        "session_id": "s~ask:lookup:1",
        "state": "review",
        "transitions": [{"to": "approved", "description": "Approved."}, {"to": "find", "description": "Again."}],
    }
    replied = h.agent.workflow.reply("s", "What is pending?")
    assert replied.reply == "It is pending your approval." and replied.parked_channel == "decision"
    assert replied.delegation["state"] == "review"
    out = h.agent.workflow.decide("s", to="approved", comment="ok")
    assert (out.kind, out.reply, out.delegation) == ("completed", "The refund is approved.", None)
    assert h.load("s~ask:lookup:1").position == "approved"
    assert notes_of(out.messages, "sub-workflow")[0].content == "[sub-workflow: lookup] Approved."


def test_a_child_failing_after_the_decision_gives_an_error_note(tmp_path):
    advance = {"call": {"archmax_advance": {"to": "review", "reason": "needs approval"}}}
    entries = [
        {"call": {"archmax_workflow_lookup": {}}},
        advance,
        {"say": "Please decide."},
        {"call": {"archmax_raise": {"code": "declined", "reason": "nothing to do"}}},  # the child, back in 'find'
        {"say": "The lookup failed."},
    ]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": WAITING})
    h.agent.workflow.send("s", "go")
    out = h.agent.workflow.decide("s", to="find")
    [note] = notes_of(out.messages, "error")
    assert note.content.startswith("[error] sub-workflow 'lookup' failed after the decision: raised 'declined'")
    assert out.kind == "rejected"  # the pending failure routes when the caller's model finishes (no on_error)


def test_a_forwarded_delivery_is_refused_when_the_child_is_not_parked_and_the_caller_stays_parked(tmp_path):
    entries = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"say": "Which?", "call": {"archmax_wait": {"reason": "order"}}},
    ]
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": WAITING})
    h.agent.workflow.send("s", "go")
    h.agent.sessions.delete("s~ask:lookup:1")
    before = h.load("s").model_dump_json()
    from archmax import SessionNotAwaitingInputError

    with pytest.raises(SessionNotAwaitingInputError):
        h.agent.workflow.deliver("s", trigger="email_reply")
    assert h.load("s").model_dump_json() == before


# ---------------------------------------------------------------- files


CHILD_WITH_FILES = {
    "states": {
        "find": {
            "triggers": {
                "manual": {
                    "requires": [{"name": "invoice", "type": "file"}],
                    "returns": [{"name": "report", "type": "file"}],
                }
            }
        }
    }
}


def test_file_arguments_land_in_the_childs_attachments_and_file_returns_in_the_callers(tmp_path):
    entries = [
        {"call": {"archmax_workflow_lookup": {"invoice": "scratchpad/inv.txt"}}},
        setv(report="scratchpad/attachments/inv.txt"),  # the child returns the file it was given
        {"say": "Checked."},
        {"say": "done"},
    ]
    store = FilesystemStore(tmp_path / "sessions")
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": CHILD_WITH_FILES}, store=store)
    h.agent.sessions.seed("s", {"scratchpad/inv.txt": "total 42\n"})
    h.agent.sessions.seed("s", {"scratchpad/attachments/inv.txt": "an older file\n"})
    out = h.agent.workflow.send("s", "go")
    child = h.load("s~ask:lookup:1")
    assert (child.variables["invoice"].value, child.variables["invoice"].locked) == (
        "scratchpad/attachments/inv.txt",
        True,
    )
    assert store.get("s~ask:lookup:1", "scratchpad/attachments/inv.txt") == b"total 42\n"
    result = json.loads(results_of(out.messages, "archmax_workflow_lookup")[0].content)
    assert result["returns"] == {"report": "scratchpad/attachments/inv-1.txt"}  # §9.5 naming in the caller
    assert store.get("s", "scratchpad/attachments/inv-1.txt") == b"total 42\n"


def test_two_children_returning_report_pdf_at_once_each_take_their_own_name(tmp_path):
    child = {
        "states": {
            "find": {
                "triggers": {"manual": {"requires": ["n"], "returns": [{"name": "report", "type": "file"}]}},
                "tools": {"allow": ["write_report"]},
            }
        }
    }
    pdf = b"%PDF-1.7\x00\xff binary"
    store = MemoryStore()

    def write_report(n: int) -> str:
        store.upload_files(f"s~ask:lookup:{n}", {"scratchpad/report.pdf": pdf + bytes([n])})
        return "written"

    entries = [
        {"call": [{"archmax_workflow_lookup": {"n": 1}}, {"archmax_workflow_lookup": {"n": 2}}]},
        {"call": {"write_report": {"n": 1}}},
        setv(report="scratchpad/report.pdf"),
        {"say": "one"},
        {"call": {"write_report": {"n": 2}}},
        setv(report="scratchpad/report.pdf"),
        {"say": "two"},
        {"say": "done"},
    ]
    h = agent_for(
        tmp_path, entries, {"parent": caller(), "lookup": child}, store=store, tools={"write_report": write_report}
    )
    out = h.agent.workflow.send("s", "go")
    placed = [json.loads(r.content)["returns"]["report"] for r in results_of(out.messages, "archmax_workflow_lookup")]
    assert placed == ["scratchpad/attachments/report.pdf", "scratchpad/attachments/report-1.pdf"]
    assert store.get("s", placed[0]) == pdf + b"\x01" and store.get("s", placed[1]) == pdf + b"\x02"


# ---------------------------------------------------------------- recovery across the pair


class FlakyModel:
    """Forwards to a script, but the ``n``-th call dies like a crashed process would."""

    def __init__(self, entries: list, die_at: int) -> None:
        self.inner = ScriptedModel(entries)
        self.calls = 0
        self.die_at = die_at

    def complete(self, request):
        self.calls += 1
        if self.calls == self.die_at:
            raise KeyboardInterrupt("the process stopped")
        return self.inner.complete(request)


def test_a_crash_inside_the_child_is_recovered_through_the_caller(tmp_path):
    entries = [call_lookup(), setv(status="shipped"), {"say": "ORD-1 shipped."}, {"say": "It shipped."}]
    model = FlakyModel(entries, die_at=3)  # the child's second call: after it set its return
    h = agent_for(tmp_path, [], {"parent": caller(), "lookup": LOOKUP}, model=model, lease_ttl_s=60)
    with pytest.raises(KeyboardInterrupt):
        h.agent.workflow.send("s", "go")
    assert h.load("s").delegation.session_id == "s~ask:lookup:1"
    assert h.load("s~ask:lookup:1").status == SessionStatus.RUNNING
    out = h.agent.workflow.recover("s")
    assert out.kind == "completed" and out.reply == "It shipped." and out.recovered
    assert h.load("s~ask:lookup:1").status == SessionStatus.COMPLETED
    # the interrupted call was answered at the takeover; the result arrived as a note
    assert notes_of(out.messages, "sub-workflow")[0].content.startswith("[sub-workflow: lookup] {")


def test_a_raise_replaces_a_pending_rejection(tmp_path):
    entries = [
        call_lookup(),
        {"say": "no status"},
        {"call": {"archmax_raise": {"code": "lookup-down", "reason": "no data"}}},
    ]
    h = agent_for(tmp_path, entries, {"parent": caller(on_error="sorry"), "lookup": LOOKUP})
    out = h.agent.workflow.send("s", "go")
    assert (out.kind, out.state, out.exit.code) == ("failed", "ask", "lookup-down")  # not routed to on_error
    assert h.load("s").pending_rejection is None


class DiesAfterTheChildFinished(MemoryStore):
    """A store under a process that dies once the child completed: no caller commit after that lands.

    ``dead`` is cleared to play the next process (the one whose sweep recovers the caller).
    """

    dead = None

    def commit(self, session_id, record, expected_version, *, lease_owner=None):
        if session_id == "s" and self.dead is None:
            child = self.load("s~ask:lookup:1")
            if child is not None and child.status == SessionStatus.COMPLETED:
                self.dead = True
        if session_id == "s" and self.dead:
            raise KeyboardInterrupt("the process stopped before the caller took the result")
        return super().commit(session_id, record, expected_version, lease_owner=lease_owner)


def test_a_crash_after_the_child_finished_but_before_the_caller_took_the_result_is_recovered(tmp_path):
    entries = [call_lookup(), setv(status="shipped"), {"say": "ORD-1 shipped."}, {"say": "It shipped."}]
    store = DiesAfterTheChildFinished()
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": LOOKUP}, store=store)
    with pytest.raises(KeyboardInterrupt):
        h.agent.workflow.send("s", "go")
    assert h.load("s").delegation is not None and h.load("s~ask:lookup:1").status == SessionStatus.COMPLETED
    store.dead = False  # the next process
    h.clock.advance(seconds=901)  # the caller's lease expires: its turn is stale
    out = h.agent.workflow.recover("s")
    assert (out.kind, out.reply) == ("completed", "It shipped.")
    assert h.model.calls == 4  # the finished child was not run again
    assert [s.status for s in out.trail if s.kind == "sub-workflow"] == ["ok"]


class DiesAfterTheCallerClaimedAForward(MemoryStore):
    """A store under a process that dies right after the caller's claim of a delivery for its child landed."""

    dead = died = False

    def commit(self, session_id, record, expected_version, *, lease_owner=None):
        if self.dead:
            raise KeyboardInterrupt("the process is gone")
        super().commit(session_id, record, expected_version, lease_owner=lease_owner)
        forwarding = session_id == "s" and record.delegation is not None and record.delegation.forward is not None
        if forwarding and not self.died:
            self.dead = self.died = True
            raise KeyboardInterrupt("the process stopped before the child took the delivery")


@pytest.mark.parametrize("how", ["sweep", "redelivery"])
def test_a_delivery_claimed_for_a_child_by_a_process_that_died_reaches_the_child_once(tmp_path, how):
    entries = [
        {"call": {"archmax_workflow_lookup": {}}},
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number"}}},
        {"say": "Found ORD-1."},  # the child, after the delivery
        {"say": "Your order is ORD-1."},  # the caller, in its calling state
    ]
    store = DiesAfterTheCallerClaimedAForward()
    h = agent_for(tmp_path, entries, {"parent": caller(), "lookup": WAITING}, store=store)
    assert h.agent.workflow.send("s", "go").kind == "parked"
    with pytest.raises(KeyboardInterrupt):
        h.agent.workflow.deliver("s", trigger="email_reply", variables={"reply_body": "ORD-1"}, delivery_id="m-1")
    assert h.load("s").delegation.forward is not None  # the claim carries the delivery ...
    assert h.load("s~ask:lookup:1").status == SessionStatus.AWAITING_INPUT  # ... the child never got it

    store.dead = False  # the next process
    h.clock.advance(seconds=901)  # the caller's lease expires
    if how == "sweep":
        out = h.agent.workflow.recover("s")
    else:  # the sender retries with the same id: the dead turn is finished, not refused as a duplicate
        out = h.agent.workflow.deliver("s", trigger="email_reply", variables={"reply_body": "ORD-1"}, delivery_id="m-1")

    assert (out.kind, out.reply) == ("completed", "Your order is ORD-1.")
    child = h.load("s~ask:lookup:1")
    assert child.status == SessionStatus.COMPLETED and child.variables["reply_body"].value == "ORD-1"
    assert child.delivery_ids[-1] == "m-1"
    assert sum(m.content.startswith("[event] 'email_reply'") for m in child.messages) == 1  # applied once
    assert h.load("s").delegation is None
    assert h.model.calls == 4
