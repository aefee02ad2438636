"""Issue 9, scenario 4: a double-fired timer wakes a session once; a timer names the park it wakes.

Two sessions parked with ``until``; two sweeps. The second sweep read its due list before the first one
woke the sessions, which then parked again (no ``until``). Working from that old list it must deliver
nothing: each of its timers names the park it found due (the version ``due_parks`` listed it at) and
the new park is another one, so it is refused (``SessionNotAwaitingInputError``, reported ``skipped``)
and changes nothing. Rule source: seed "Waiting for a time, not a reply"; BEHAVIOUR.md §3.5, §11
``sweep``; issue 9 item 4. Every store kind.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax import SessionNotAwaitingInputError, create_agent
from archmax.hosting.sweep import sweep
from archmax.models.scripted import ScriptedModel
from archmax.session.notes import is_runtime_note
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import SUPPORT_INBOX, Env

T_DUE = "2025-01-01T02:00:00.000Z"
PARK = {"say": "Checking the bank.", "call": {"archmax_wait": {"reason": "the transfer posts", "until": "1h"}}}
REPARK = {"say": "Not posted yet; I will wait for your reply.", "call": {"archmax_wait": {"reason": "a reply"}}}


class ListsThen:
    """A store whose ``due_parks`` answers its listing, but only after ``meanwhile`` ran (the race, made certain)."""

    def __init__(self, inner: Any, meanwhile: Any) -> None:
        self._inner, self._meanwhile = inner, meanwhile
        self.capabilities = inner.capabilities

    def due_parks(self, *args: Any, **kwargs: Any) -> Any:
        listed = self._inner.due_parks(*args, **kwargs)
        self._meanwhile()
        return listed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _timer_notes(env: Env, sid: str) -> int:
    messages = env.other_store().load(sid).messages
    return sum(1 for m in messages if m.role == "tool" and is_runtime_note(m) and "timer" in m.content)


def _park_two(env: Env) -> None:
    agent = env.agent([PARK, PARK])
    for sid in ("s1", "s2"):
        out = agent.workflow.send(
            sid, "Has my transfer arrived?", trigger="email_received", variables={"conversation_id": sid}
        )
        assert out.kind == "parked" and out.pending.resume_at is not None
    env.clock.set(T_DUE)


def test_a_sweep_working_from_an_older_due_list_wakes_nothing(env: Env) -> None:
    _park_two(env)
    first = env.agent([REPARK, REPARK])
    firsts: list[Any] = []
    late_store = ListsThen(env.other_store(), lambda: firsts.append(sweep(first, T_DUE)))
    late = create_agent(SUPPORT_INBOX, late_store, ScriptedModel([]), clock=env.clock)  # any model call fails

    seconds = sweep(late, T_DUE)

    assert firsts == [[("s1", "parked"), ("s2", "parked")]]
    assert seconds == [("s1", "skipped"), ("s2", "skipped")]
    for sid in ("s1", "s2"):
        assert _timer_notes(env, sid) == 1
        rec = env.other_store().load(sid)
        assert rec.status == "awaiting_input" and rec.pending_input.reason == "a reply"


def test_a_timer_naming_a_park_that_was_resumed_is_refused_and_changes_nothing(env: Env) -> None:
    _park_two(env)
    agent = env.agent([REPARK])
    found = {park.session_id: park.version for park in env.store.due_parks(T_DUE)}
    agent.workflow.deliver("s1", trigger="email_reply", variables={"reply_body": "any news?"})
    before = env.other_store().load("s1").model_dump_json()

    with pytest.raises(SessionNotAwaitingInputError) as refused:
        agent.workflow.deliver("s1", trigger="timer", variables={"now": T_DUE}, park_version=found["s1"])

    assert f"version {found['s1']}" in str(refused.value)
    assert env.other_store().load("s1").model_dump_json() == before
    # the park it names still being there, the same timer wakes it
    out = env.agent([REPARK]).workflow.deliver(
        "s2", trigger="timer", variables={"now": T_DUE}, park_version=found["s2"]
    )
    assert out.kind == "parked"


def test_due_parks_lists_each_due_park_with_the_version_it_was_found_at(env: Env) -> None:
    _park_two(env)
    parks = env.store.due_parks(T_DUE)
    assert [(p.session_id, p.version) for p in parks] == [
        ("s1", env.store.head("s1").version),
        ("s2", env.store.head("s2").version),
    ]
    assert env.store.due(T_DUE) == [(p.session_id, p.resume_at) for p in parks]
    assert env.store.due_parks("2025-01-01T00:30:00.000Z") == []
