"""Adversarial: hostile host and model input to the engine must be refused before anything is written,
or absorbed, never leave a session stuck, unreadable or silently altered.

Rule sources: BEHAVIOUR.md conventions ("Raises X ... leaves every stored record and file as it was"),
§3.3 (validate everything before writing), §3.12 (a live lease blocks every other writer), §6 (values are
any JSON), §8 step 6 (a firing that does not supply a typed ``requires`` is rejected, not crashed), §9.5
(all of a firing's files are checked before any is stored).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.errors import (
    ArchmaxError,
    InvalidDeliveryIdError,
    InvalidVariableNameError,
    MissingDeliveryTriggerError,
)
from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel
from archmax.session.records import SessionStatus, ToolCall
from archmax.spec import workflow_from_dict

CHAT = {"states": {"chat": {"triggers": {"manual": None}}}}
UPLOAD = {"states": {"chat": {"triggers": {"upload": {"requires": [{"name": "doc", "type": "file"}]}}}}}


class Answers:
    """A model (the provider side, not our code) that answers each call with the next canned response."""

    def __init__(self, *responses: ModelResponse) -> None:
        self.responses = list(responses)

    def complete(self, request: ModelRequest) -> ModelResponse:
        return self.responses.pop(0)


def _agent(doc: dict[str, Any], model: Any, store: Any = None, **kwargs: Any):
    store = store if store is not None else MemoryStore()
    clock = FakeClock("2025-01-01T00:00:00.000Z")
    return create_agent(workflow_from_dict(doc, "demo"), store, model, clock=clock, **kwargs), store


def _snapshot(store: Any, session_id: str) -> tuple[str | None, dict[str, bytes | None]]:
    rec = store.load(session_id)
    files = {p: store.get(session_id, p) for p in store.list_files(session_id, "")}
    return (rec.model_dump_json() if rec else None, files)


def _parked_chat():
    model = ScriptedModel(
        [{"say": "Which order?", "call": {"archmax_wait": {"reason": "the order"}}}, {"say": "Done."}]
    )
    agent, store = _agent(CHAT, model)
    assert agent.workflow.send("s", "hello").kind == "parked"
    return agent, store


# --------------------------------------------------------------------------- delivery ids


@pytest.mark.parametrize("delivery_id", [5, ["a"], "", "   ", "a\x00b", "x" * 600])
def test_an_unusable_delivery_id_is_refused_before_the_session_is_touched(delivery_id):
    # Before the fix an int or a list was committed into `delivery_ids: list[str]`: the store took the
    # commit and every later load (and sweep, and sessions.list) failed validation for good.
    agent, store = _parked_chat()
    before = _snapshot(store, "s")
    with pytest.raises(InvalidDeliveryIdError):
        agent.workflow.send("s", "It's ORD-1.", delivery_id=delivery_id)
    with pytest.raises(InvalidDeliveryIdError):
        agent.workflow.deliver("s", trigger="email_reply", delivery_id=delivery_id)
    assert _snapshot(store, "s") == before
    with pytest.raises(InvalidDeliveryIdError):
        agent.workflow.send("fresh", "hello", delivery_id=delivery_id)
    assert store.load("fresh") is None


def test_a_session_fired_with_an_integer_delivery_id_by_mistake_stays_readable_and_listable():
    agent, store = _agent(CHAT, Answers(ModelResponse(text="hi"), ModelResponse(text="hi again")))
    agent.workflow.send("ok", "hello")
    with pytest.raises(InvalidDeliveryIdError):
        agent.workflow.send("s", "hello", delivery_id=12345)
    assert [s.session_id for s in agent.sessions.list()] == ["ok"]
    assert store.due("9999-12-31T23:59:59.999Z") == []


# --------------------------------------------------------------------------- host variable values


def _deep(levels: int) -> list:
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


NOT_JSON = {
    "nan": float("nan"),
    "infinity": float("inf"),
    "an object": object(),
    "a set": {1, 2},
    "a non-string key": {1: "a"},
    "bytes": b"\xff",
    "a lone surrogate": "\ud800",
    "5000 levels of nesting": _deep(5000),
}


@pytest.mark.parametrize("value", list(NOT_JSON.values()), ids=list(NOT_JSON))
def test_a_variable_value_that_is_not_json_is_refused_before_a_turn_is_claimed(value):
    # Before the fix the claim committed first, then the commit of the seeded value crashed: the session
    # stayed `running` under a live lease for 15 minutes (or NaN was silently stored as null).
    agent, store = _agent(CHAT, Answers(ModelResponse(text="hi")))
    with pytest.raises(InvalidVariableNameError, match="'x'"):
        agent.workflow.send("s", "hello", variables={"x": value})
    assert store.load("s") is None


@pytest.mark.parametrize("value", list(NOT_JSON.values()), ids=list(NOT_JSON))
def test_a_delivered_value_that_is_not_json_is_refused_and_leaves_the_park_byte_for_byte(value):
    agent, store = _parked_chat()
    before = _snapshot(store, "s")
    with pytest.raises(InvalidVariableNameError, match="'reply_body'"):
        agent.workflow.deliver("s", trigger="email_reply", variables={"reply_body": value})
    assert _snapshot(store, "s") == before


def test_assembly_seeds_that_are_not_json_are_refused_at_create_agent():
    with pytest.raises(InvalidVariableNameError):
        _agent(CHAT, Answers(), variables={"tenant": float("nan")})


def test_ordinary_json_values_still_round_trip_exactly():
    value = {"n": [1, 2.5, -0.0, True, None, "é \u2028 😀"], "deep": _deep(50), "big": 10**30}
    agent, store = _agent(CHAT, Answers(ModelResponse(text="hi")))
    out = agent.workflow.send("s", "hello", variables={"x": value, "t": (1, 2)})
    assert out.kind == "completed"
    stored = store.load("s").variables
    assert stored["x"].value == value
    assert stored["t"].value == [1, 2]


# --------------------------------------------------------------------------- text the session cannot encode


def test_model_text_with_a_lone_surrogate_is_stored_and_read_back_exactly():
    # A provider's JSON may carry a lone "\ud83d" escape (an emoji cut in half); json.loads accepts it.
    # Before the fix the commit's UTF-8 encode crashed mid-turn and the lease stayed live for 15 minutes.
    broken = json.loads('"broken emoji \\ud83d"')
    agent, store = _agent(CHAT, Answers(ModelResponse(text=broken), ModelResponse(text="fine")))
    out = agent.workflow.send("s", "hello")
    assert out.kind == "completed" and out.reply == broken
    assert store.load("s").messages[-1].content == broken
    trajectory = [json.loads(line) for line in store.get("s", "artifacts/trajectory.jsonl").splitlines()]
    assert trajectory[-1]["content"] == broken
    assert agent.workflow.send("s", "again").kind == "completed"


def test_a_host_tool_result_with_a_lone_surrogate_does_not_wedge_the_session():
    doc = {"states": {"chat": {"triggers": {"manual": None}, "tools": {"allow": ["lookup"]}}}}

    def lookup() -> str:
        """Look something up."""
        return "half a pair: \udc80"

    model = Answers(ModelResponse(tool_calls=[ToolCall(id="c1", name="lookup", args={})]), ModelResponse(text="done"))
    agent, store = _agent(doc, model, tools=[lookup])
    assert agent.workflow.send("s", "hello").kind == "completed"
    rec = store.load("s")
    assert rec.status == SessionStatus.COMPLETED and rec.lease is None
    assert [m.content for m in rec.messages if m.role == "tool"] == ["half a pair: \udc80"]


def test_file_text_that_cannot_be_encoded_is_refused_before_the_turn_is_claimed():
    agent, store = _agent(CHAT, Answers(ModelResponse(text="hi")))
    with pytest.raises((ArchmaxError, ValueError)):
        agent.workflow.send("s", "hello", files={"f": {"name": "a.txt", "content": "\ud800"}})
    assert store.load("s") is None
    assert store.list_files("s", "") == []


def test_file_text_that_cannot_be_encoded_on_a_delivery_leaves_the_park_byte_for_byte():
    agent, store = _parked_chat()
    before = _snapshot(store, "s")
    with pytest.raises((ArchmaxError, ValueError)):
        agent.workflow.deliver("s", trigger="email_reply", files={"f": {"name": "a.txt", "content": "\ud800"}})
    assert _snapshot(store, "s") == before


# --------------------------------------------------------------------------- requires of type file


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "checkpoints/0000000001.json", "a\x00"])
def test_a_file_requirement_naming_an_unsafe_path_rejects_the_start_instead_of_crashing(path):
    # Before the fix the store's InvalidFilePathError escaped after the claim: `running`, no rejection.
    agent, store = _agent(UPLOAD, Answers(ModelResponse(text="never")))
    out = agent.workflow.send("s", "hello", trigger="upload", variables={"doc": path})
    assert out.kind == "rejected"
    assert out.rejected == "Refusing to start: trigger 'upload' requires 'doc', which this firing does not supply."
    rec = store.load("s")
    assert rec.status == SessionStatus.REJECTED and rec.lease is None


# --------------------------------------------------------------------------- blank trigger into a park


@pytest.mark.parametrize("trigger", ["", "   ", "\t"])
def test_send_into_an_input_park_with_a_blank_trigger_records_no_blank_trigger(trigger):
    # §3.4: the delivery is `{trigger or "manual", ...}`; §3.5: a blank trigger is never recorded.
    agent, store = _parked_chat()
    before = _snapshot(store, "s")
    try:
        out = agent.workflow.send("s", "It's ORD-1.", trigger=trigger)
    except MissingDeliveryTriggerError:
        assert _snapshot(store, "s") == before
        return
    assert out.variables["trigger"]["value"] == "manual"
    assert store.load("s").trigger == "manual"


def test_nan_in_the_turn_variables_is_not_silently_stored_as_null():
    agent, store = _agent(CHAT, Answers(ModelResponse(text="hi")))
    with pytest.raises(InvalidVariableNameError):
        agent.workflow.send("s", "hello", variables={"score": math.nan})
    assert store.load("s") is None
