"""A firing whose turn dies is not lost: redelivering the same event finishes that turn.

Rule source: BEHAVIOUR.md §3.12 (takeover of an expired lease), DESIGN.md §3 (inbox: nothing lost,
a duplicate is a no-op). The opening, its message and the firing's delivery id are committed together.
"""

from __future__ import annotations

import pytest

from archmax import DuplicateDeliveryError, MemoryStore, SessionStatus, create_agent
from archmax.clock import FakeClock
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.session.notes import is_runtime_note
from archmax.session.records import Lease

from ._support import SUPPORT_INBOX

SCRIPT = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}, "expect_state": "intake"},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}},
]
VARS = {"conversation_id": "c-1"}


class FlakyModel:
    """Fails its first call (a provider outage mid-turn), then follows the script."""

    def __init__(self) -> None:
        self.script = ScriptedModel(SCRIPT)
        self.failed = False

    def complete(self, request: ModelRequest) -> ModelResponse:
        if not self.failed:
            self.failed = True
            raise RuntimeError("provider unavailable")
        return self.script.complete(request)


def user_texts(agent) -> list[str]:
    return [m.content for m in agent.sessions.messages("c-1") if m.role == "user" and not is_runtime_note(m)]


def test_a_turn_that_died_keeps_its_event_and_the_redelivered_event_finishes_it():
    clock = FakeClock()
    agent = create_agent(SUPPORT_INBOX, MemoryStore(), FlakyModel(), clock=clock)
    with pytest.raises(RuntimeError):
        agent.workflow.send("c-1", "Where is my thing?", trigger="email_received", variables=VARS, delivery_id="m-1")
    stuck = agent.store.load("c-1")
    assert stuck.status == SessionStatus.RUNNING and stuck.delivery_ids == ["m-1"]
    assert user_texts(agent) == ["Where is my thing?"]  # the event was committed with its id

    outcome = agent.workflow.send(
        "c-1", "Where is my thing?", trigger="email_received", variables=VARS, delivery_id="m-1"
    )
    assert outcome.recovered is True and outcome.kind == "parked" and outcome.state == "clarify"
    assert user_texts(agent) == ["Where is my thing?"]  # continued, not applied twice

    with pytest.raises(DuplicateDeliveryError):  # once it finished, the same id is a plain duplicate
        agent.workflow.send("c-1", "Where is my thing?", trigger="email_received", variables=VARS, delivery_id="m-1")


class RedeliveringModel:
    """On its first call — mid-turn, lease live — the host redelivers the same event."""

    def __init__(self) -> None:
        self.script = ScriptedModel(SCRIPT)
        self.agent = None
        self.seen: list[BaseException] = []
        self.version_during: int | None = None

    def complete(self, request: ModelRequest) -> ModelResponse:
        if not self.seen:
            self.version_during = self.agent.store.load("c-1").version
            try:
                self.agent.workflow.send("c-1", "Hello", trigger="email_received", variables=VARS, delivery_id="m-1")
            except BaseException as exc:  # noqa: BLE001 - the test inspects it
                self.seen.append(exc)
            assert self.agent.store.load("c-1").version == self.version_during
        return self.script.complete(request)


def test_a_redelivered_event_whose_turn_is_still_alive_is_a_duplicate_and_changes_nothing():
    model = RedeliveringModel()
    agent = create_agent(SUPPORT_INBOX, MemoryStore(), model, clock=FakeClock())
    model.agent = agent
    outcome = agent.workflow.send("c-1", "Hello", trigger="email_received", variables=VARS, delivery_id="m-1")
    assert [type(e) for e in model.seen] == [DuplicateDeliveryError]
    assert outcome.kind == "parked" and outcome.recovered is False
    assert user_texts(agent) == ["Hello"]


def test_recover_finishes_a_dead_turn_once_its_lease_expired_and_refuses_while_it_is_live():
    from archmax import SessionNotResumableError

    clock = FakeClock()
    store = MemoryStore()
    model = FlakyModel()
    agent = create_agent(SUPPORT_INBOX, store, model, clock=clock)
    assert agent.workflow.recover("c-1") is None  # no session: nothing to recover
    with pytest.raises(RuntimeError):
        agent.workflow.send("c-1", "Hello", trigger="email_received", variables=VARS)
    # Simulate the dead process still holding a live lease: re-claim it as another owner would have.
    record = store.load("c-1")
    record.version += 1
    record.lease = Lease(owner="dead-process", expires_at="2025-01-01T00:15:00.000Z")
    store.commit("c-1", record, record.version - 1)
    with pytest.raises(SessionNotResumableError):
        agent.workflow.recover("c-1")
    clock.advance(minutes=16)
    outcome = agent.workflow.recover("c-1")
    assert outcome.recovered is True and outcome.kind == "parked" and outcome.state == "clarify"
    assert user_texts(agent) == ["Hello"]
    assert agent.workflow.recover("c-1") is None  # parked now: not mid-turn


def test_each_model_call_keeps_its_own_usage_beside_the_session_total():
    agent = create_agent(SUPPORT_INBOX, MemoryStore(), ScriptedModel(SCRIPT), clock=FakeClock())
    agent.workflow.send("c-1", "Hello", trigger="email_received", variables=VARS)
    record = agent.store.load("c-1")
    calls = [m.usage for m in record.messages if m.role == "assistant" and not is_runtime_note(m)]
    assert len(calls) == 2 and all(u is not None and u.output_tokens > 0 for u in calls)
    assert record.usage.input_tokens == sum(u.input_tokens for u in calls)
    assert record.usage.output_tokens == sum(u.output_tokens for u in calls)


def test_a_store_outage_while_checking_a_file_return_is_an_error_not_a_silent_rejection():
    from archmax.errors import StoreError
    from archmax.spec import workflow_from_dict

    class FlakyFiles(MemoryStore):
        def get(self, session_id, path):
            raise StoreError("S3 unavailable")

    doc = {
        "states": {
            "chat": {"triggers": {"manual": {"returns": [{"name": "report", "type": "file"}]}}},
        }
    }
    wf = workflow_from_dict(doc, "chat")
    script = ScriptedModel(
        [{"call": {"archmax_set_variables": {"variables": {"report": "scratchpad/r.txt"}}}}, {"say": "Done."}]
    )
    store = FlakyFiles()
    agent = create_agent(wf, store, script, clock=FakeClock())
    with pytest.raises(StoreError):
        agent.workflow.send("s", "Write the report")
    assert store.load("s").status == SessionStatus.RUNNING  # retryable: not recorded as the agent's failure
