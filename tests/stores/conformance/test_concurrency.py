"""Conformance: one writer per version, with real threads (BEHAVIOUR.md §9.1, §3.12; DESIGN.md §6).

No test here sleeps or asserts a duration: threads start together at a barrier and the
assertions are about who won, never how fast.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from archmax.errors import CommitConflictError, PathExistsError
from archmax.session.records import Message

from .conftest import make_record

THREADS = 8


def _race(fn, n=THREADS):
    """Run ``fn(i)`` in ``n`` threads released together; return each one's result or exception."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i):
        barrier.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # noqa: BLE001 - the race's losers are what we assert on
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_threads_committing_the_same_first_version_have_exactly_one_winner(store, session_id):
    results = _race(lambda i: store.commit(session_id, make_record(session_id, 1, messages=i + 1), 0))
    kinds = Counter("won" if r is None else type(r).__name__ for r in results)
    assert kinds == Counter({"won": 1, "CommitConflictError": THREADS - 1})
    winner = results.index(None)
    assert store.load(session_id) == make_record(session_id, 1, messages=winner + 1)


def test_threads_committing_on_top_of_the_same_version_have_exactly_one_winner(store, session_id):
    store.commit(session_id, make_record(session_id, 1, messages=1), 0)
    results = _race(lambda i: store.commit(session_id, make_record(session_id, 2, messages=i + 2), 1))
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, CommitConflictError) for r in results if r is not None)
    assert store.load(session_id).version == 2


def test_threads_retrying_after_conflicts_lose_no_update(store, session_id):
    store.commit(session_id, make_record(session_id, 1), 0)
    per_thread = 5

    def append_messages(i):
        done = 0
        while done < per_thread:
            current = store.load(session_id)
            update = current.model_copy(
                update={
                    "version": current.version + 1,
                    "messages": [*current.messages, Message(role="user", content=f"t{i}-{done}")],
                }
            )
            try:
                store.commit(session_id, update, current.version)
            except CommitConflictError:
                continue
            done += 1

    results = _race(append_messages)
    assert results == [None] * THREADS
    final = store.load(session_id)
    assert final.version == 1 + THREADS * per_thread
    assert sorted(m.content for m in final.messages) == sorted(
        f"t{i}-{d}" for i in range(THREADS) for d in range(per_thread)
    )


def test_threads_claiming_the_same_name_create_only_have_exactly_one_winner(store, session_id):
    results = _race(lambda i: store.seed(session_id, {"scratchpad/attachments/x.txt": f"writer {i}"}, create_only=True))
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, PathExistsError) for r in results if r is not None)
    winner = results.index(None)
    assert store.get(session_id, "scratchpad/attachments/x.txt") == f"writer {winner}".encode()


@pytest.mark.parametrize("writers", [THREADS])
def test_threads_committing_to_different_sessions_all_succeed(store, session_id, writers):
    results = _race(lambda i: store.commit(f"{session_id}-{i}", make_record(f"{session_id}-{i}", 1), 0), writers)
    assert results == [None] * writers
    assert all(store.load(f"{session_id}-{i}").version == 1 for i in range(writers))
