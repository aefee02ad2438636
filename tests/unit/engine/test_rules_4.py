"""Rules of BEHAVIOUR.md §4.1 (session ids) that the rule audit (tests/RULES.md) found without a test:
C1 control characters, every reserved store name, the byte (not character) limit, and ids that only
look like a refused one."""

from __future__ import annotations

import pytest

from archmax import InvalidSessionIdError

from ._support import CHAT, harness


@pytest.mark.parametrize(
    "bad",
    [
        "a\x7fb",
        "a\x85b",
        "a\x9fb",
        "tab\tid",
        "artifacts",
        "artifacts/x",
        "large_tool_results",
        "conversation_history\\y",
        "scratchpad/notes",
        "é" * 257,  # 514 UTF-8 bytes in 257 characters
        "a\\..\\b",
    ],
    ids=repr,
)
def test_an_id_breaking_one_rule_is_refused_naming_it_and_nothing_is_written(bad):
    h = harness(CHAT, [{"say": "never"}])
    with pytest.raises(InvalidSessionIdError) as err:
        h.agent.workflow.send(bad, "Hi")
    assert repr(bad)[:20] in str(err.value)
    assert h.store.list() == [] and h.model.calls == 0


@pytest.mark.parametrize(
    "good",
    ["é" * 256, "a..b", "..x", "_specsX", "x/_specs", " lead", "trail ", "Order#7?"],
    ids=repr,
)
def test_an_id_that_only_resembles_a_refused_one_is_a_session_of_its_own_kept_untrimmed(good):
    h = harness(CHAT, [{"say": "ok"}])
    out = h.agent.workflow.send(good, "Hi")
    assert out.session_id == good
    assert [s.session_id for s in h.agent.sessions.list()] == [good]
