"""Adversarial contract checks: rules of BEHAVIOUR.md that model output can bend.

Rule sources: BEHAVIOUR.md §5 ("Tool calls in one assistant message are processed in order"), §5.2
(``archmax_wait`` parks the session where it stands; ``park_counts[state] += 1``), §5.4 (``maxParks``
is counted per state), §3.5 (a delivery continues the parked state: its trail step and ``[event]``
note name it), §3.11 (``Outcome.state`` is the record's state when parked).
"""

from __future__ import annotations

from archmax import MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.models.scripted import ScriptedModel
from archmax.session.notes import is_runtime_note
from archmax.spec import workflow_from_dict

TWO = {
    "states": {
        "start": {
            "triggers": {"manual": None},
            "transitions": [{"to": "done", "description": "The work is done."}],
            "budget": {"maxParks": 1},
        },
        "done": {"instructions": "Answer the customer."},
    }
}


def _agent(entries):
    store = MemoryStore()
    agent = create_agent(
        workflow_from_dict(TWO, "demo"),
        store,
        ScriptedModel(entries),
        clock=FakeClock("2025-01-01T00:00:00.000Z"),
    )
    return agent, store


def test_a_wait_after_an_advance_in_the_same_message_parks_in_the_state_advanced_to():
    # Before the fix the park record named 'start' while the position was 'done': the delivery then
    # told the model "You are still in 'start'" and the trail recorded a step back to 'start'.
    agent, store = _agent(
        [
            {
                "say": "Moving on; tell me when it ships.",
                "call": [
                    {"archmax_advance": {"to": "done", "reason": "the order is identified"}},
                    {"archmax_wait": {"reason": "the shipping notice"}},
                ],
            },
            {"say": "It shipped.", "expect_state": "done"},
        ]
    )
    out = agent.workflow.send("s", "Where is ORD-1?")
    rec = store.load("s")
    assert out.kind == "parked" and out.state == "done"
    assert rec.position == "done" and rec.pending_input.state == "done"
    assert rec.park_counts == {"done": 1}

    out = agent.workflow.deliver("s", trigger="shipping_notice")
    assert out.kind == "completed"
    assert [(s.kind, s.to) for s in out.trail] == [
        ("trigger", "start"),
        ("agent", "done"),
        ("trigger", "done"),
    ]
    event = [m.content for m in out.messages if m.role == "tool" and is_runtime_note(m)][-1]
    assert "waited in 'done'" in event and "still in 'done'" in event


def test_the_state_left_behind_keeps_its_park_budget():
    # start allows one park; a wait made after leaving it must not be charged to it.
    agent, store = _agent(
        [
            {"say": "Which order?", "call": {"archmax_wait": {"reason": "the order"}}},
            {
                "say": "Found it; waiting for the courier.",
                "call": [
                    {"archmax_advance": {"to": "done", "reason": "ORD-1"}},
                    {"archmax_wait": {"reason": "the courier"}},
                ],
            },
        ]
    )
    assert agent.workflow.send("s", "Where is my parcel?").kind == "parked"
    out = agent.workflow.deliver("s", trigger="email_reply", message="ORD-1")
    assert out.kind == "parked" and out.state == "done"
    assert store.load("s").park_counts == {"start": 1, "done": 1}
