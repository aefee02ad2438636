"""A model that cannot be built refuses the firing before anything is written.

Rule source: BEHAVIOUR.md §3 (create_agent: model=None reads the environment's configuration) and
§3.3 (validate before writing; a refused call changes nothing); DESIGN.md §5 (models by configuration).
"""

from __future__ import annotations

import pytest

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.errors import ModelConfigurationError
from archmax.models.scripted import ScriptedModel
from archmax.spec import workflow_from_dict

from ._support import SUPPORT_INBOX

VARS = {"conversation_id": "c-1"}


def test_with_no_model_configured_a_send_is_refused_and_no_session_is_written(monkeypatch):
    monkeypatch.delenv("ARCHMAX_MODEL", raising=False)
    store = MemoryStore()
    agent = create_agent(SUPPORT_INBOX, store, None, clock=FakeClock())
    with pytest.raises(ModelConfigurationError):
        agent.workflow.send("c-1", "Hello", trigger="email_received", variables=VARS)
    assert store.load("c-1") is None


def test_a_model_spec_string_is_accepted_by_create_agent(tmp_path):
    script = tmp_path / "model.yaml"
    script.write_text("- say: Hello there.\n", encoding="utf-8")
    wf = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "chat")
    agent = create_agent(wf, MemoryStore(), f"scripted:{script}", clock=FakeClock())
    assert agent.workflow.send("s", "hi").reply == "Hello there."


def test_an_object_that_is_not_a_model_is_refused_at_assembly():
    with pytest.raises(TypeError, match="must be a Model"):
        create_agent(SUPPORT_INBOX, MemoryStore(), 42)


def test_a_state_model_spec_that_cannot_be_built_fails_at_assembly_not_mid_turn(tmp_path):
    doc = {
        "states": {
            "a": {"triggers": {"manual": None}, "transitions": [{"to": "b", "description": "next"}]},
            "b": {"model": "scripted:missing-script.yaml"},
        }
    }
    wf = workflow_from_dict(doc, "two", root=tmp_path)
    with pytest.raises(ModelConfigurationError):
        create_agent(wf, MemoryStore(), ScriptedModel([]))


def test_a_delivery_is_refused_before_the_park_is_claimed_when_the_model_cannot_be_built(monkeypatch):
    store = MemoryStore()
    entries = [
        {"call": {"archmax_advance": {"to": "clarify", "reason": "no order"}}},
        {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number"}}},
    ]
    create_agent(SUPPORT_INBOX, store, ScriptedModel(entries), clock=FakeClock()).workflow.send(
        "c-1", "Hello", trigger="email_received", variables=VARS
    )
    before = store.load("c-1")
    monkeypatch.delenv("ARCHMAX_MODEL", raising=False)
    unconfigured = create_agent(SUPPORT_INBOX, store, None, clock=FakeClock())
    with pytest.raises(ModelConfigurationError):
        unconfigured.workflow.deliver("c-1", trigger="email_reply", variables={"reply_body": "ORD-1"})
    after = store.load("c-1")
    assert after.version == before.version and after.status == "awaiting_input"
