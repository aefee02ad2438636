"""A firing that takes over a caller's dead turn does not lose the delivery that turn was forwarding to its child.

A caller parked through its child is claimed with the delivery it forwards, and remembers the delivery's
id in that claim; the child applies it next. When the process dies in between and another firing takes
the dead turn over (a new turn, which abandons the call), the forwarded event is in no transcript: the
caller must not keep its id, or the sender's retry is answered ``DuplicateDeliveryError`` and the event
is lost. Found by the pair soak (``accepted but applied 0 times``); every store kind.

Rule source: BEHAVIOUR.md §3.12 (a takeover), §5.10; issue 22 (each event applied once across the pair).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from archmax import create_agent
from archmax.errors import DuplicateDeliveryError
from archmax.session.records import SessionStatus
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import DieAfterCommitWhere, Env, ProcessDied

from ._pair import CALLER, CHILD, LEASE_TTL_S, PairModel, tokens_in, workspace


def _agent(env: Env, folder: Path, store: Any = None) -> Any:
    return create_agent(folder, store or env.store, PairModel("wait"), clock=env.clock, lease_ttl_s=LEASE_TTL_S)


def _everywhere(env: Env) -> list[str]:
    store = env.other_store()
    return [t for sid in sorted(store.list()) for t in tokens_in(store, sid)]


def _forward_dies_after_the_callers_claim(env: Env, desk: Path) -> None:
    """``<<A>>`` (``d-A``) delivered to the caller parked through its child; death right after the caller's claim."""
    assert _agent(env, desk).workflow.send(CALLER, "go").kind == "parked"  # the child waits: the caller parks
    mortal = DieAfterCommitWhere(env.store, lambda r: r.session_id == CALLER and "d-A" in r.delivery_ids)
    with pytest.raises(ProcessDied):
        _agent(env, desk, mortal).workflow.deliver(CALLER, trigger="ping", message="<<A>>", delivery_id="d-A")
    assert tokens_in(env.other_store(), CHILD) == []  # the child never got it
    env.clock.advance(timedelta(seconds=LEASE_TTL_S + 1))


def test_a_takeover_forgets_the_id_of_a_forward_the_child_never_applied(env: Env, tmp_path: Path) -> None:
    desk, _ = workspace(tmp_path)
    _forward_dies_after_the_callers_claim(env, desk)
    _agent(env, desk).workflow.send(CALLER, "<<B>>", delivery_id="d-B")  # takes the dead turn over: a new turn
    assert "d-A" not in env.other_store().load(CALLER).delivery_ids

    _agent(env, desk).workflow.deliver(CALLER, trigger="ping", message="<<A>>", delivery_id="d-A")  # the retry

    assert sorted(_everywhere(env)) == ["<<A>>", "<<B>>"]  # each applied once, none lost
    with pytest.raises(DuplicateDeliveryError):
        _agent(env, desk).workflow.deliver(CALLER, trigger="ping", message="<<A>>", delivery_id="d-A")


def test_a_retry_before_any_takeover_still_hands_the_forward_over(env: Env, tmp_path: Path) -> None:
    desk, _ = workspace(tmp_path)
    _forward_dies_after_the_callers_claim(env, desk)

    out = _agent(env, desk).workflow.deliver(CALLER, trigger="ping", message="<<A>>", delivery_id="d-A")

    assert out.kind == "completed"  # the dead turn continued: the child took <<A>> and finished
    assert _everywhere(env) == ["<<A>>"]
    assert env.other_store().load(CHILD).status == SessionStatus.COMPLETED
