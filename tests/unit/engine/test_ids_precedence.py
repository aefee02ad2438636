"""Session ids and where they come from (BEHAVIOUR.md §4.1–§4.4; seed "Sessions: which session does
this event belong to?", "Supplying the path from outside the workflow")."""

from __future__ import annotations

import re

import pytest

from archmax import InvalidSessionIdError, InvalidSessionPathError, MemoryStore, create_agent

from ._support import harness, wf

MINTED = re.compile(r"^session-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

DOC = {
    "states": {
        "intake": {
            "triggers": {
                "email_received": {"session": "conversation_id"},
                "manual": None,
            },
        }
    }
}
VARS = {
    "conversation_id": "from-trigger",
    "assembly": {"id": "from-assembly"},
    "firing": {"id": "from-firing"},
}


def test_level_one_an_explicit_id_wins_and_no_path_is_read():
    h = harness(DOC, [], session_path="assembly.id")
    r = h.agent.workflow.resolve_session(
        trigger="email_received", variables=VARS, session_id="explicit-1", session_path="firing.id"
    )
    assert (r.session_id, r.minted) == ("explicit-1", False)


def test_level_two_a_per_firing_path_beats_the_assembly_and_the_trigger():
    h = harness(DOC, [], session_path="assembly.id")
    r = h.agent.workflow.resolve_session(trigger="email_received", variables=VARS, session_path="firing.id")
    assert r.session_id == "from-firing"


def test_level_three_the_assembly_path_beats_the_trigger_declaration():
    h = harness(DOC, [], session_path="assembly.id")
    r = h.agent.workflow.resolve_session(trigger="email_received", variables=VARS)
    assert r.session_id == "from-assembly"


def test_level_four_the_trigger_declaration_is_read_when_nothing_else_is_given():
    h = harness(DOC, [])
    r = h.agent.workflow.resolve_session(trigger="email_received", variables=VARS)
    assert (r.session_id, r.minted, r.warnings) == ("from-trigger", False, [])


def test_level_five_a_trigger_without_a_path_mints_a_fresh_id_without_a_warning():
    h = harness(DOC, [])
    r = h.agent.workflow.resolve_session(trigger="manual", variables=VARS)
    assert MINTED.fullmatch(r.session_id) and r.minted is True
    assert r.warnings == []
    assert h.store.list() == []  # resolving writes nothing


def test_an_unresolved_path_mints_an_id_with_a_warning_and_lower_sources_are_not_tried():
    h = harness(DOC, [])
    r = h.agent.workflow.resolve_session(trigger="email_received", variables=VARS, session_path="missing.id")
    assert MINTED.fullmatch(r.session_id) and r.minted
    assert r.session_id != "from-trigger"
    assert len(r.warnings) == 1 and "no later firing can continue it" in r.warnings[0]


def test_an_invoke_whose_path_does_not_resolve_emits_the_minted_warning_as_an_event_too():
    h = harness(DOC, [{"say": "ok"}])
    out = h.agent.invoke(message="Hi", trigger="email_received", variables={"other": 1})
    assert MINTED.fullmatch(out.session_id)
    assert any("no later firing can continue it" in w for w in out.warnings)
    assert any("no later firing can continue it" in e["message"] for e in h.events_of("warning"))


def test_a_malformed_caller_path_is_refused_even_beside_an_explicit_id():
    h = harness(DOC, [])
    with pytest.raises(InvalidSessionPathError) as err:
        h.agent.workflow.resolve_session(session_id="explicit-1", session_path="triggers..id")
    assert "triggers..id" in str(err.value)
    with pytest.raises(InvalidSessionPathError):
        h.agent.invoke("explicit-1", message="Hi", session_path="${{conversation_id}}")
    assert h.load("explicit-1") is None


def test_a_malformed_assembly_path_is_refused_at_create_agent():
    with pytest.raises(InvalidSessionPathError, match="is not usable"):
        create_agent(wf(DOC), MemoryStore(), None, session_path="Conversation")


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"triggers": [{"conversationId": "first"}, {"conversationId": "last"}]}, "last"),
        ({"triggers": [{"conversationId": "first"}, {"conversationId": "last"}], "x": 0}, "last"),
    ],
)
def test_a_negative_index_reads_from_the_end_of_an_array(variables, expected):
    h = harness(DOC, [])
    r = h.agent.workflow.resolve_session(variables=variables, session_path="triggers.-1.conversationId")
    assert r.session_id == expected
    r2 = h.agent.workflow.resolve_session(variables=variables, session_path="triggers.-2.conversationId")
    assert r2.session_id == "first"


@pytest.mark.parametrize(
    "path", ["triggers.-0.conversationId", "triggers.-3.conversationId", "triggers.01.conversationId"]
)
def test_non_canonical_or_out_of_range_indices_leave_the_path_unresolved(path):
    h = harness(DOC, [])
    r = h.agent.workflow.resolve_session(
        variables={"triggers": [{"conversationId": "a"}, {"conversationId": "b"}]}, session_path=path
    )
    assert r.minted and MINTED.fullmatch(r.session_id)


def test_a_nested_field_and_numeric_values_resolve_as_ids():
    h = harness(DOC, [])
    assert (
        h.agent.workflow.resolve_session(
            variables={"mail": {"thread": {"id": "T-9"}}}, session_path="mail.thread.id"
        ).session_id
        == "T-9"
    )
    assert h.agent.workflow.resolve_session(variables={"n": 42.0}, session_path="n").session_id == "42"


def test_a_resolved_value_that_is_not_a_valid_id_is_refused_and_nothing_is_minted():
    h = harness(DOC, [{"say": "never"}])
    with pytest.raises(InvalidSessionIdError):
        h.agent.invoke(message="Hi", trigger="email_received", variables={"conversation_id": "../etc"})
    assert h.store.list() == []
    assert h.model.calls == 0


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "_specs/x", "checkpoints", "a/../b", "x" * 513])
def test_an_invalid_explicit_id_is_refused_at_every_entry_point(bad):
    h = harness(DOC, [])
    ops = [
        lambda: h.agent.workflow.send(bad, "Hi"),
        lambda: h.agent.workflow.deliver(bad, trigger="t"),
        lambda: h.agent.workflow.reply(bad, "x"),
        lambda: h.agent.workflow.decide(bad, to="x"),
        lambda: h.agent.workflow.resolve_session(session_id=bad),
        lambda: h.agent.invoke(bad, message="Hi"),
        lambda: h.agent.sessions.get(bad),
        lambda: h.agent.sessions.seed(bad, {"a.txt": "x"}),
        lambda: h.agent.sessions.delete(bad),
        lambda: h.agent.sessions.messages(bad),
    ]
    for op in ops:
        with pytest.raises(InvalidSessionIdError):
            op()
    assert h.store.list() == []


def test_send_with_a_declared_path_lands_related_triggers_in_one_conversation():
    doc = {
        "states": {
            "intake": {
                "triggers": {
                    "email_received": {"session": "conversation_id"},
                    "email_reply": {"session": "conversation_id"},
                },
            }
        }
    }
    h = harness(doc, [{"say": "one"}, {"say": "two"}])
    first = h.agent.invoke(message="Hi", trigger="email_received", variables={"conversation_id": "AAQk1"})
    second = h.agent.invoke(message="Again", trigger="email_reply", variables={"conversation_id": "AAQk1"})
    assert first.session_id == second.session_id == "AAQk1"
    assert h.store.list() == ["AAQk1"]
