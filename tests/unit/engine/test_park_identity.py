"""Park identity (BEHAVIOUR.md §5.11, issue 21 item 6): a late answer to question A never lands on question B.

Every park has a ``park_id`` (the session id and the version of the commit that parked it), in the
Outcome, the session summary and the ``Session Parked`` lifecycle event. ``deliver``, ``reply`` and
``decide`` may name it; naming a park that is no longer current is refused with
``SessionNotAwaitingInputError`` naming both parks, and nothing changes. Naming none behaves as before.
"""

from __future__ import annotations

import pytest

from archmax import SessionNotAwaitingInputError

from ._support import HUMAN, TWO, harness, snapshot, wait_then

ASK_A = wait_then("the order number", say="Which order is this about?")
ASK_B = wait_then("the delivery address", say="Where should it go?")


def _asked_b():
    """Asks A, gets the answer to A, asks B: the park at A is gone, the park at B is current."""
    h = harness(TWO, [ASK_A, ASK_B, {"say": "Shipping ORD-1 to the new address."}])
    a = h.agent.workflow.send("s1", "Where is my order?")
    b = h.agent.workflow.deliver("s1", trigger="email_reply", message="ORD-1", park_id=a.park_id)
    return h, a, b


def test_every_park_has_an_identity_in_the_outcome_and_the_summary():
    h, a, b = _asked_b()
    assert a.park_id and b.park_id and a.park_id != b.park_id
    assert a.park_id.startswith("s1") and b.park_id.startswith("s1")
    assert h.agent.sessions.get("s1").park_id == b.park_id


def test_a_late_answer_naming_an_earlier_park_is_refused_and_changes_nothing():
    h, a, b = _asked_b()
    before = snapshot(h.store, "s1")
    with pytest.raises(SessionNotAwaitingInputError) as refused:
        h.agent.workflow.deliver("s1", trigger="email_reply", message="ORD-1 again", park_id=a.park_id)
    assert a.park_id in str(refused.value) and b.park_id in str(refused.value)
    assert snapshot(h.store, "s1") == before


def test_an_answer_naming_the_current_park_is_applied():
    h, _a, b = _asked_b()
    out = h.agent.workflow.deliver("s1", trigger="email_reply", message="12 Main St", park_id=b.park_id)
    assert out.kind == "completed" and out.park_id is None


def test_an_answer_naming_no_park_keeps_todays_behaviour():
    h, _a, _b = _asked_b()
    out = h.agent.workflow.deliver("s1", trigger="email_reply", message="12 Main St")
    assert out.kind == "completed"


def test_a_handoff_call_after_the_park_keeps_its_identity():
    """The park's commit and the handoff's commit differ in version; the park keeps the first."""
    h = harness(TWO, [wait_then("the order number", say=None), {"say": "Which order?"}])
    out = h.agent.workflow.send("s1", "Where is my order?")
    rec = h.store.load("s1")
    assert out.park_id == rec.park_id and rec.pending_input.parked_version < rec.version


TO_REVIEW = [{"call": {"archmax_advance": {"to": "review", "reason": "ready"}}}, {"say": "Please review."}]


def _decision():
    h = harness(
        HUMAN, [*TO_REVIEW, {"say": "It is a refund of 42."}, {"say": "Please review again."}, {"say": "Done."}]
    )
    h.agent.sessions.seed("s1", {"scratchpad/policy.md": "policy"})
    return h, h.agent.workflow.send("s1", "Refund please")


def test_a_reply_keeps_the_decision_park_and_may_name_it():
    h, parked = _decision()
    out = h.agent.workflow.reply("s1", "How much is it?", park_id=parked.park_id)
    assert out.park_id == parked.park_id and out.reply == "It is a refund of 42."


def test_a_decision_naming_a_re_presented_park_is_refused_and_one_naming_the_current_park_moves():
    h, first = _decision()
    second = h.agent.invoke("s1", message="Look at it again")  # the decision is re-presented: a new park
    assert second.park_id != first.park_id
    before = snapshot(h.store, "s1")
    for stale in (
        lambda: h.agent.workflow.decide("s1", to="approved", park_id=first.park_id),
        lambda: h.agent.workflow.reply("s1", "Still there?", park_id=first.park_id),
    ):
        with pytest.raises(SessionNotAwaitingInputError) as refused:
            stale()
        assert first.park_id in str(refused.value) and second.park_id in str(refused.value)
    assert snapshot(h.store, "s1") == before
    out = h.agent.workflow.decide("s1", to="approved", park_id=second.park_id)
    assert out.kind == "completed"


def test_the_session_parked_lifecycle_event_names_the_park():
    h, a, b = _asked_b()
    rec = h.store.load("s1")
    parked = [e for e in rec.outbox if e.kind == "event" and e.detail_type == "Session Parked"]
    assert parked and parked[-1].detail["park_id"] == b.park_id


# A mail's send names the park its reply token names (issue 21 item 6): the check admission made is made
# again where the mail is applied, so a park that changed while the mail waited in the inbox refuses it.


def test_a_send_naming_an_earlier_park_is_refused_and_changes_nothing():
    h, a, b = _asked_b()
    before = snapshot(h.store, "s1")
    with pytest.raises(SessionNotAwaitingInputError) as refused:
        h.agent.workflow.send("s1", "ORD-1 again", trigger="email_reply", delivery_id="late-a", park_id=a.park_id)
    assert a.park_id in str(refused.value) and b.park_id in str(refused.value)
    assert snapshot(h.store, "s1") == before  # the delivery id is not remembered either


def test_a_send_naming_a_park_of_a_finished_session_opens_no_turn():
    h, _a, b = _asked_b()
    done = h.agent.workflow.deliver("s1", trigger="email_reply", message="12 Main St", park_id=b.park_id)
    assert done.kind == "completed"
    before = snapshot(h.store, "s1")
    with pytest.raises(SessionNotAwaitingInputError, match="parked nowhere now"):
        h.agent.workflow.send("s1", "and another thing", trigger="email_reply", park_id=b.park_id)
    assert snapshot(h.store, "s1") == before


def test_a_send_naming_the_current_park_is_applied_and_one_naming_none_as_before():
    h, _a, b = _asked_b()
    out = h.agent.workflow.send("s1", "12 Main St", trigger="email_reply", park_id=b.park_id)
    assert (out.disposition, out.kind) == ("deliver", "completed")
    h, _a, _b = _asked_b()
    assert h.agent.workflow.send("s1", "12 Main St", trigger="email_reply").kind == "completed"


def test_a_send_naming_the_current_decision_park_is_answered():
    h, parked = _decision()
    out = h.agent.workflow.send("s1", "How much is it?", park_id=parked.park_id)
    assert (out.disposition, out.park_id) == ("reply", parked.park_id)
