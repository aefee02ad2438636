"""A model error a retry cannot cure fails the turn; an outage leaves it for the sweep.

Rule source: issue 9 (an accepted event is never lost: an outage is "not now") and BEHAVIOUR.md §5.7
(a turn failure is routed by ``on_error``, else the session is rejected); the split between the two is
``archmax.errors.TURN_FAILING_MODEL_ERRORS``.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax import SessionStatus
from archmax.errors import ModelAccessError, ModelError, ModelNotFoundError, ModelRequestError, ModelThrottledError
from archmax.models.base import ModelResponse

from ._support import CHAT, TWO, harness


class Failing:
    """Raises ``error`` on the call numbered ``at`` (1-based), answers ``Done.`` otherwise."""

    def __init__(self, error: Exception, at: int = 1) -> None:
        self.error, self.at, self.calls = error, at, 0

    def complete(self, request: Any) -> ModelResponse:
        self.calls += 1
        if self.calls == self.at:
            raise self.error
        return ModelResponse(text="Done.")


@pytest.mark.parametrize(
    "error", [ModelAccessError("denied"), ModelNotFoundError("no such model"), ModelRequestError("too long")]
)
def test_a_model_error_no_retry_cures_rejects_the_turn_with_its_reason(error: Exception) -> None:
    h = harness(CHAT, model=Failing(error))
    out = h.agent.workflow.send("s1", "Hi")
    rec = h.load("s1")
    assert out.kind == "rejected" and rec.status == SessionStatus.REJECTED
    assert type(error).__name__ in rec.rejected and str(error) in rec.rejected
    assert rec.lease is None  # nothing left for a sweep to retry


def test_such_an_error_routes_by_on_error_when_the_state_has_one() -> None:
    doc = {"states": {**TWO["states"], "start": {**TWO["states"]["start"], "on_error": "done"}}}
    h = harness(doc, model=Failing(ModelRequestError("context too long")))
    out = h.agent.workflow.send("s1", "Hi")
    assert (out.kind, out.state) == ("completed", "done")
    assert any(m.content.startswith("[error]") and "context too long" in m.content for m in h.load("s1").messages)


@pytest.mark.parametrize("error", [ModelThrottledError("slow down"), ModelError("503 from the provider")])
def test_an_outage_raises_and_leaves_the_turn_for_the_sweep(error: Exception) -> None:
    h = harness(CHAT, model=Failing(error))
    with pytest.raises(type(error)):
        h.agent.workflow.send("s1", "Hi")
    rec = h.load("s1")
    assert rec.status == SessionStatus.RUNNING and rec.lease is None  # let go: the sweep recovers it
    h.clock.advance(seconds=1)
    assert h.agent.workflow.recover("s1").kind == "completed"
