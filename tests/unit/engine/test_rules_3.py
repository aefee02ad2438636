"""Rules of BEHAVIOUR.md §1 conventions, §3 (sessions, operations, results, errors, leases) and §4.1
(child ids) that the rule audit (tests/RULES.md) found without a test."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from archmax import (
    ArchmaxError,
    EmptyMessageError,
    FilesystemStore,
    HostTool,
    InvalidDecisionTargetError,
    InvalidFilePathError,
    InvalidSessionIdError,
    InvalidSessionPathError,
    InvalidVariableNameError,
    MemoryStore,
    MissingDeliveryTriggerError,
    ReservedToolNameError,
    SessionNotAwaitingInputError,
    SessionNotParkedError,
    SessionStoreCapabilityError,
    StoreCapabilities,
    UnknownSessionTriggerError,
    UnknownTriggerError,
    WorkflowDisabledError,
    create_agent,
)
from archmax.models.base import ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.session.records import SessionStatus, ToolCall

from ._support import CHAT, HUMAN, TWO, harness, snapshot, wait_then, wf

INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")

# ------------------------------------------------------------------------------ §3.11 error table

TWO_TRIGGERS = {
    "states": {
        "start": {
            "triggers": {"manual": None, "email_reply": None},
            "transitions": [{"to": "review", "description": "Ready."}],
        },
        "review": {"type": "human", "transitions": [{"to": "start", "description": "Again."}]},
    }
}


def _input_parked():
    h = harness(TWO_TRIGGERS, [wait_then()])
    h.agent.workflow.send("s1", "Hi")
    return h


def _decision_parked():
    h = harness(
        TWO_TRIGGERS, [{"call": {"archmax_advance": {"to": "review", "reason": "r"}}}, {"say": "Please decide."}]
    )
    h.agent.workflow.send("s1", "Hi")
    return h


ERROR_CASES = {
    # error class, how to provoke it, fragments the message must contain, session id it must expose
    "not-awaiting-input": (
        SessionNotAwaitingInputError,
        lambda: harness(CHAT, []).agent.workflow.deliver("nobody", trigger="t"),
        ["'nobody'", "not parked awaiting an event", "no such session"],
        "nobody",
    ),
    "not-awaiting-input-status": (
        SessionNotAwaitingInputError,
        lambda: _decision_parked().agent.workflow.deliver("s1", trigger="t"),
        ["'s1'", "not parked awaiting an event", "awaiting_decision"],
        "s1",
    ),
    "missing-delivery-trigger": (
        MissingDeliveryTriggerError,
        lambda: _input_parked().agent.workflow.deliver("s1", trigger="  "),
        ["'s1'"],
        "s1",
    ),
    "not-parked": (
        SessionNotParkedError,
        lambda: _input_parked().agent.workflow.decide("s1", to="review"),
        ["'s1'", "awaiting_input"],
        "s1",
    ),
    "invalid-decision-target": (
        InvalidDecisionTargetError,
        lambda: _decision_parked().agent.workflow.decide("s1", to="elsewhere"),
        ["'elsewhere'", "start"],
        "s1",
    ),
    "empty-message": (
        EmptyMessageError,
        lambda: harness(CHAT, []).agent.workflow.send("s9", "   "),
        ["'s9'"],
        "s9",
    ),
    "invalid-session-path": (
        InvalidSessionPathError,
        lambda: harness(CHAT, []).agent.workflow.resolve_session(session_path="mail..id"),
        ["'mail..id'", "session_path", "empty segment"],
        None,
    ),
    "unknown-trigger": (
        UnknownTriggerError,
        lambda: harness(TWO_TRIGGERS, []).agent.workflow.send("s9", "Hi", trigger="fax"),
        ["'fax'", "'manual'", "'email_reply'"],
        "s9",
    ),
    "unknown-session-trigger": (
        UnknownSessionTriggerError,
        lambda: harness(TWO_TRIGGERS, []).agent.workflow.resolve_session(trigger="fax", session_id="s9"),
        ["'fax'", "'manual'", "'email_reply'"],
        "s9",
    ),
    "invalid-variable-name": (
        InvalidVariableNameError,
        lambda: harness(CHAT, []).agent.workflow.send("s9", "Hi", variables={"Order-Id": 1}),
        ["'Order-Id'", "'s9'"],
        "s9",
    ),
    "workflow-disabled": (
        WorkflowDisabledError,
        lambda: harness({**CHAT, "disabled": True}, []).agent.workflow.send("s9", "Hi"),
        ["'demo'"],
        "s9",
    ),
    "invalid-session-id": (
        InvalidSessionIdError,
        lambda: harness(CHAT, []).agent.workflow.send("a/../b", "Hi"),
        [repr("a/../b"), "'..'"],
        None,
    ),
    "store-capability": (
        SessionStoreCapabilityError,
        lambda: harness(
            CHAT, [], store=MemoryStore(StoreCapabilities(list=True, delete=False, upload_files=True))
        ).agent.sessions.delete("s9"),
        ["'delete'"],
        None,
    ),
    "invalid-file-path": (
        InvalidFilePathError,
        lambda: harness(CHAT, []).agent.sessions.seed("s9", {"checkpoints/1.json": "x"}),
        ["checkpoints/1.json"],
        None,
    ),
    "reserved-tool-name": (
        ReservedToolNameError,
        lambda: create_agent(wf(CHAT), MemoryStore(), None, tools=[HostTool("archmax_lookup", lambda: 1)]),
        ["'archmax_lookup'"],
        None,
    ),
}


@pytest.mark.parametrize("case", list(ERROR_CASES.values()), ids=list(ERROR_CASES))
def test_each_contract_error_is_an_archmax_error_whose_message_carries_what_the_table_names(case):
    cls, provoke, fragments, session_id = case
    with pytest.raises(cls) as err:
        provoke()
    assert isinstance(err.value, ArchmaxError)
    text = str(err.value)
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    if session_id is not None:
        assert err.value.session_id == session_id


# ------------------------------------------------------------------------------ §3.3 validation order


def test_an_invalid_id_is_reported_before_the_sessions_state_or_any_other_argument():
    h = _input_parked()
    with pytest.raises(InvalidSessionIdError):
        h.agent.workflow.send("", "   ", trigger="fax", variables={"Bad": 1})
    with pytest.raises(InvalidSessionIdError):
        h.agent.workflow.deliver("..", trigger="")
    with pytest.raises(InvalidSessionIdError):
        h.agent.workflow.decide("_specs", to=None)


def test_reply_and_decide_report_the_sessions_state_before_their_other_arguments():
    h = _input_parked()
    before = snapshot(h.store, "s1")
    with pytest.raises(SessionNotParkedError):
        h.agent.workflow.reply("s1", "   ")
    with pytest.raises(SessionNotParkedError):
        h.agent.workflow.decide("s1")
    assert snapshot(h.store, "s1") == before


def test_send_needs_an_explicit_id_and_refuses_none_before_writing():
    h = harness(CHAT, [{"say": "never"}])
    with pytest.raises(InvalidSessionIdError):
        h.agent.workflow.send(None, "Hi")
    assert h.store.list() == [] and h.model.calls == 0


# ------------------------------------------------------------------------------ §3 assembly


def test_without_a_store_the_agent_keeps_sessions_in_a_sessions_folder_of_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    agent = create_agent(wf(CHAT), None, ScriptedModel([{"say": "Hello."}]))
    assert agent.workflow.send("s1", "Hi").kind == "completed"
    assert (tmp_path / "sessions" / "s1" / "checkpoints" / "0000000001.json").is_file()
    assert FilesystemStore(tmp_path / "sessions").load("s1").status == "completed"
    assert Path(os.getcwd()) == tmp_path


# ------------------------------------------------------------------------------ §3.8, §3.11 results


def test_a_resolution_names_start_state_only_for_a_turn_and_the_parked_state_for_resume_and_reply():
    h = harness(TWO_TRIGGERS, [wait_then()])
    turn = h.agent.workflow.resolve_session(session_id="new-one")
    assert (turn.disposition, turn.start_state, turn.state, turn.minted, turn.recovered) == (
        "turn",
        "start",
        None,
        False,
        False,
    )
    h.agent.workflow.send("s1", "Hi")
    resume = h.agent.workflow.resolve_session(session_id="s1", trigger="anything-goes")
    assert (resume.disposition, resume.start_state, resume.state) == ("resume", None, "start")
    reply = _decision_parked().agent.workflow.resolve_session(session_id="s1")
    assert (reply.disposition, reply.start_state, reply.state) == ("reply", None, "review")


def test_a_parked_outcome_names_the_records_state_and_a_summary_carries_updated_at():
    h = harness(HUMAN, [{"call": {"archmax_advance": {"to": "review", "reason": "r"}}}, {"say": "Decide."}])
    h.clock.advance(seconds=7)
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.state, out.pending.state) == ("review", "review")
    summary = h.agent.sessions.get("s1")
    assert summary.updated_at == "2025-01-01T00:00:07.000Z"
    assert summary.parent_session_id is None


@pytest.mark.parametrize(
    ("session_id", "parent"),
    [
        ("order-7~review:billing:1", "order-7"),
        ("a~b~check:refund:12", "a~b"),
        ("order-7~review:billing", None),
        ("order-7~review:billing:x", None),
        ("order-7:billing:1", None),
        ("plain", None),
    ],
)
def test_parent_session_id_is_derived_only_from_a_child_shaped_id(session_id, parent):
    h = harness(CHAT, [{"say": "ok"}])
    h.agent.workflow.send(session_id, "Hi")
    assert h.agent.sessions.get(session_id).parent_session_id == parent


# ------------------------------------------------------------------------------ §1 conventions


def test_instants_are_utc_milliseconds_with_z_and_trail_timestamps_are_epoch_milliseconds():
    h = harness(TWO, [wait_then(until="90s")])
    h.clock.advance(seconds=1, milliseconds=5)
    out = h.agent.workflow.send("s1", "Hi")
    p = out.pending
    assert INSTANT.fullmatch(p.parked_at) and INSTANT.fullmatch(p.resume_at)
    assert (p.parked_at, p.resume_at) == ("2025-01-01T00:00:01.005Z", "2025-01-01T00:01:31.005Z")
    summary = h.agent.sessions.get("s1")
    assert INSTANT.fullmatch(summary.updated_at)
    assert all(isinstance(s.ts, int) for s in out.trail)
    assert out.trail[0].ts == 1735689601005


# ------------------------------------------------------------------------------ §3.12 lease


def test_a_running_session_with_no_lease_counts_as_expired_and_is_taken_over():
    h = harness(CHAT, [{"say": "First."}, {"say": "Taken over."}])
    h.agent.workflow.send("s1", "Hi")
    rec = h.load("s1")
    orphan = rec.model_copy(update={"version": rec.version + 1, "status": SessionStatus.RUNNING, "lease": None})
    h.store.commit("s1", orphan, rec.version)
    assert h.agent.workflow.resolve_session(session_id="s1").recovered is True
    out = h.agent.workflow.send("s1", "Still there?")
    assert (out.kind, out.disposition, out.recovered, out.reply) == ("completed", "turn", True, "Taken over.")
    assert [e["scope"] for e in h.events_of("warning")] == ["lease"]


# ------------------------------------------------------------------------------ §3.1 park phase


class _PeekDuringHandoff:
    """A model that waits silently, then, during the owed handoff call, looks at the stored session."""

    def __init__(self, holder: dict) -> None:
        self.holder = holder
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        if self.calls == 1:
            return ModelResponse(tool_calls=[ToolCall(id="w1", name="archmax_wait", args={"reason": "the order"})])
        h = self.holder["h"]
        rec = h.load("s1")
        self.holder["during"] = (rec.status, rec.park_phase, rec.pending_input is not None, rec.lease is not None)
        summary = h.agent.sessions.get("s1")
        self.holder["summary_during"] = (summary.state, summary.wait_reason)
        try:
            h.agent.workflow.deliver("s1", trigger="timer")
        except SessionNotAwaitingInputError as exc:
            self.holder["deliver"] = exc
        return ModelResponse(text="We are waiting for your order number.")


def test_while_a_handoff_is_owed_the_park_is_closing_under_the_lease_and_is_not_yet_parked():
    holder: dict = {}
    h = harness(CHAT, model=_PeekDuringHandoff(holder))
    holder["h"] = h
    out = h.agent.workflow.send("s1", "Hi")
    assert holder["during"] == ("awaiting_input", "closing", True, True)
    assert isinstance(holder["deliver"], SessionNotAwaitingInputError)
    assert holder["summary_during"] == (None, None)  # §3.11: state/wait_reason only while parked
    assert h.agent.sessions.get("s1").wait_reason == "the order"
    rec = h.load("s1")
    assert (out.kind, out.reply) == ("parked", "We are waiting for your order number.")
    assert (rec.park_phase, rec.lease) == ("suspend", None)
    assert h.agent.workflow.resolve_session(session_id="s1").disposition == "resume"  # parked now
