"""Rules of BEHAVIOUR.md §6 (variables and locking) that the rule audit (tests/RULES.md) found without a
test: the ``title`` rules hold for every host route, deliveries and file variables included."""

from __future__ import annotations

from ._support import CHAT, TWO, harness, wait_then


def test_a_delivered_title_applies_unlocked_when_the_session_has_none_and_a_bad_one_is_skipped_with_a_warning():
    h = harness(TWO, [wait_then(), wait_then(reason="again"), {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="t", variables={"title": "  Refund for ORD-7  "})
    assert out.variables["title"] == {"value": "Refund for ORD-7", "locked": False}
    out = h.agent.workflow.deliver("s1", trigger="t", variables={"title": "two\nlines", "other": 1})
    assert out.variables["title"] == {"value": "Refund for ORD-7", "locked": False}
    assert out.variables["other"] == {"value": 1, "locked": True}
    assert out.warnings == ["Title ignored: a title must be a single line"]


def test_a_file_variable_named_title_follows_the_title_rules_it_is_never_locked():
    h = harness(CHAT, [{"say": "ok"}, {"say": "ok"}])
    out = h.agent.workflow.send("s1", "Hi", files={"title": {"name": "brief.txt", "content": "x"}})
    assert out.variables["title"] == {"value": "scratchpad/attachments/brief.txt", "locked": False}
    out = h.agent.workflow.send("s1", "Again", files={"title": {"name": "other.txt", "content": "y"}})
    # a host title applies only while the session has none
    assert out.variables["title"] == {"value": "scratchpad/attachments/brief.txt", "locked": False}
    assert h.store.get("s1", "scratchpad/attachments/other.txt") == b"y"


def test_a_file_variable_named_title_whose_path_is_too_long_is_skipped_with_a_warning():
    h = harness(TWO, [wait_then(), {"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    name = "n" * 190 + ".txt"
    out = h.agent.workflow.send("s1", files={"title": {"name": name, "content": "x"}})
    assert out.disposition == "deliver"
    assert "title" not in out.variables
    assert len(out.warnings) == 1 and out.warnings[0].startswith("Title ignored: a title must be at most 200")
    assert h.store.get("s1", f"scratchpad/attachments/{name}") == b"x"


def test_a_host_file_variable_replaces_an_agent_value_and_is_locked():
    h = harness(
        CHAT,
        [{"call": {"archmax_set_variables": {"variables": {"invoice": "mine"}}}}, {"say": "ok"}, {"say": "ok"}],
    )
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.send("s1", "Here it is", files={"invoice": {"name": "inv.txt", "content": "1"}})
    assert out.variables["invoice"] == {"value": "scratchpad/attachments/inv.txt", "locked": True}
