"""The claim is the read: an operation acts on the version a warm store remembers, checked by its claim.

Rule source: issue 24 goal 2 ("a claim that returns the state is also the read": the public API in
two AWS calls with a warm store), DESIGN.md §3 "The commit protocol", BEHAVIOUR.md §3.12 (one
writer per session; a refusal changes nothing), the port's ``Capability.GUARDED_READS``.

A store that remembers the version it last read or committed (the AWS store) answers the
operation's first read of its session from memory inside ``guarded_reads(only=sid, once=True)``;
the claim is a commit conditional on that version, so a view that was old can only lose the claim,
writing nothing. Whatever the operation then answers without having written (a refusal, a lost
claim, a recovery that found nothing to do), it answers again from a real read: so every answer is
the one a fresh read would have given, and a refused delivery leaves the session as it was. An
operation that wrote (its claim landed, or a commit failed without saying whether it did) is never
run again. Without ``GUARDED_READS`` (the local stores) every read is real and nothing runs twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from archmax.engine.runtime import Runtime
from archmax.errors import ArchmaxError, StoreError

T = TypeVar("T")


def claim_checked(rt: Runtime, session_id: str | None, run: Callable[[], T]) -> T:
    """``run()`` with its first read of ``session_id`` answered from the store's memory, checked by its claim.

    Args:
        rt: The runtime whose store serves the read.
        session_id: The session the operation claims; ``None`` (a new session's id not chosen yet)
            runs ``run`` with every read real.
        run: The operation (the door's route of one firing).

    Returns:
        What ``run`` returns: from the remembered view when the operation wrote, else from a real read.

    Raises:
        What ``run`` raises on a real read (a typed refusal); a ``StoreError``, and anything raised
        after the operation wrote, as it came (an outage is not retried here: the sweep re-drives).
    """
    if session_id is None:
        return run()
    with rt.store.guarded_reads(only=session_id, once=True) as reads:
        try:
            answer = run()
        except StoreError:
            raise
        except ArchmaxError:
            if session_id not in reads.versions or reads.committed:
                raise  # read from the table, or it wrote: the answer stands
        else:
            if session_id not in reads.versions or reads.committed:
                return answer
    # Answered from memory without writing: the view may have been old (another container moved the
    # session on). Decide again on what the store learnt since (the item its lost claim found, or the
    # read after it: as fresh as a read now), else on a real read; the failed claim wrote nothing.
    if _learnt_since(rt, session_id, reads.versions[session_id]):
        with rt.store.guarded_reads(only=session_id, once=True):
            return run()
    return run()


def _learnt_since(rt: Runtime, session_id: str, served: int) -> bool:
    """Whether the store now remembers a version of ``session_id`` other than ``served`` (no call: memory only)."""
    with rt.store.guarded_reads(only=session_id, once=True) as peek:
        rt.store.head(session_id)
    return peek.versions.get(session_id, served) != served
