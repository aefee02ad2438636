"""A sub-workflow call a new turn abandoned: its child is closed, and a firing at the child's id is refused.

Rule source: BEHAVIOUR.md §8 step 5 (a turn opening resets the park records: the call in flight is
abandoned), §3.9 (``invoke`` on an ``input`` park abandons it with a ``warning``), §5.10 (child ids; a
firing addressed to a child's id reaches the pair through its caller), §3.1 (``rejected``: the runtime
ended the turn), §5.11 (hosts report the oldest park's age), §3.3 (a refused firing changes nothing).

The contract is silent on what becomes of the child of an abandoned call. Left alone it stayed
``awaiting_input`` for ever (finding of note32): the oldest-park metric reported it, its timer kept
coming due, and a firing at its id ran it, although no caller would ever take its result. The rule
chosen here, what a user expects of a call nobody waits on any more:

* The caller records the abandoned call's child id in ``Checkpoint.abandoned_calls``, in the claim of
  the turn that abandons it: the caller's one conditional commit is the pair's commit point, as the
  call in flight (``delegation``) is when a call begins (:mod:`archmax.engine.subworkflows`).
* Right after that claim the child is closed (:func:`close_abandoned`): one conditional commit to
  ``rejected`` with the reason :func:`abandoned_reason`, its park record cleared, a ``warning``
  event (scope ``park``) and, as for every rejection, a ``Session Rejected`` lifecycle event in its
  outbox. A child with a call of its own in flight abandons that one the same way, down the chain.
* A process that dies between the two commits (or a child another process holds) leaves the child
  open; its next touch closes it (:func:`refuse_abandoned`, which every firing from outside passes
  through :func:`archmax.engine.forwarding.addressed`), so nothing depends on the second commit.
* Every firing at the child's id from then on — ``deliver``, ``reply``, ``decide``, ``send``, a
  timer or deadline — raises :class:`~archmax.errors.SubworkflowCallAbandonedError` naming the
  caller, and changes nothing. A redelivery of an event the pair applied still answers as a
  duplicate at the caller (the caller adopted the chain's delivery ids in the same claim).
"""

from __future__ import annotations

from archmax.engine.children import runtime_of
from archmax.engine.claims import answer_interrupted_calls, open_work
from archmax.engine.deliveries import was_applied
from archmax.engine.firing_rule import lease_live
from archmax.engine.runtime import Runtime
from archmax.engine.subworkflows import MAX_DEPTH
from archmax.errors import SessionNotResumableError, SessionStateError, StoreError, SubworkflowCallAbandonedError
from archmax.session.records import Checkpoint, SessionStatus, is_finished


def abandoned_reason(caller_id: str) -> str:
    """The ``rejected`` reason of a closed child: names the caller whose new turn abandoned the call."""
    return (
        f"Abandoned: the calling session '{caller_id}' opened a new turn, which abandoned this sub-workflow call "
        "before it finished."
    )


def abandon_call(record: Checkpoint) -> str | None:
    """Note the call in flight of ``record`` (a turn opening on it) as abandoned, before the claim commits.

    Args:
        record: The caller's record, its ``delegation`` not yet cleared by the opening (§8 step 5).

    Returns:
        The abandoned child's id (now in ``record.abandoned_calls``), or ``None`` without a call in flight.
    """
    d = record.delegation
    if d is None:
        return None
    if d.session_id not in record.abandoned_calls:
        record.abandoned_calls = [*record.abandoned_calls, d.session_id]
    return d.session_id


def close_abandoned(rt: Runtime, caller_id: str, child_id: str) -> list[str]:
    """Close the child of an abandoned call, then the child's own call in flight, down the chain.

    Each open session is committed ``rejected`` with one commit conditional on the version read (no
    lease is taken: the commit itself ends it). A session already finished, or absent, is left as it is.

    Args:
        rt: Any runtime of the stack (each child's own workflow runtime is looked up beside it).
        caller_id: The session whose new turn abandoned the call.
        child_id: The abandoned call's child.

    Returns:
        The ids closed by this call, top first. A child held by a live lease, or a commit that lost
        to another writer or met a store outage, stops the walk: that child and those below it stay
        as they are and are closed at their next touch (:func:`refuse_abandoned`).
    """
    closed: list[str] = []
    above: str = caller_id
    sid: str | None = child_id
    while sid is not None and len(closed) <= MAX_DEPTH:
        try:
            landed, below = _close_one(rt, above, sid)
        except (SessionStateError, StoreError):
            return closed
        if not landed:
            return closed
        closed.append(sid)
        above, sid = sid, below
    return closed


def _close_one(rt: Runtime, caller_id: str, sid: str) -> tuple[bool, str | None]:
    """Commit ``sid`` ``rejected`` (abandoned by ``caller_id``), unless it is absent or finished.

    Returns:
        ``(committed, the child id of sid's own call in flight, now abandoned too, or None)``.

    Raises:
        SessionNotResumableError: another process holds ``sid``'s live lease.
        CommitConflictError: another writer committed ``sid`` since it was read.
        StoreError: the store could not be read or written.
    """
    rec = rt.store.load(sid)
    if rec is None or is_finished(rec.status):
        return False, None
    if lease_live(rt, rec):
        raise SessionNotResumableError(sid, str(rec.status), f"its caller '{caller_id}' abandoned the call")
    own = runtime_of(rt, rec) or rt
    work = open_work(own, rec, rec.version)
    if rec.status == SessionStatus.RUNNING:
        answer_interrupted_calls(rec)  # a dead turn's open calls (§3.12)
    below = abandon_call(rec)
    rec.status = SessionStatus.REJECTED
    rec.rejected = abandoned_reason(caller_id)
    rec.pending_input = rec.pending_decision = None
    rec.park_phase = None
    rec.delegation = None
    own.warn(rec, "park", f"session '{sid}' was closed: its caller '{caller_id}' abandoned the sub-workflow call")
    work.release()  # conditional on the version read; records the lifecycle event (Session Rejected)
    return True, below


def refuse_abandoned(
    rt: Runtime,
    session_id: str,
    caller: Checkpoint | None,
    rec: Checkpoint | None,
    delivery_id: str | None,
    *,
    recovering: bool = False,
) -> None:
    """Refuse a firing from outside at the child of a call its caller abandoned; close the child first if open.

    Called for a firing addressed to ``session_id`` that did not reach the pair through its caller
    (the caller's call in flight does not name it). Costs nothing when ``caller`` records no
    abandoned call of that id.

    Args:
        rt: The runtime the firing reached (the child's own workflow is looked up beside it).
        session_id: The id the firing is addressed to.
        caller: The latest checkpoint of ``session_id``'s caller (``None``: no caller).
        rec: The latest checkpoint of ``session_id`` (``None``: none).
        delivery_id: The firing's delivery id: one the child applied itself is let through, so the
            child's firing rule answers it as the duplicate it is (``DuplicateDeliveryError``).
        recovering: The firing is a sweep's recovery of a dead turn (``Recover``): once the child is
            closed it is let through, and finds no turn to continue (a sweep's ``skipped``).

    Raises:
        SubworkflowCallAbandonedError: ``caller`` abandoned the call whose child ``session_id`` is;
            the firing was not applied (the close, when the child was still open, is the abandoning
            turn's, done now because that turn's own close did not land).
    """
    if caller is None or session_id not in caller.abandoned_calls:
        return
    if rec is not None and delivery_id is not None and was_applied(rt.store, rec, delivery_id):
        return
    close_abandoned(rt, caller.session_id, session_id)
    now = rt.store.load(session_id)
    if recovering and (now is None or is_finished(now.status)):
        return
    raise SubworkflowCallAbandonedError(session_id, str(now.status) if now else None, caller.session_id)


__all__ = ["abandon_call", "abandoned_reason", "close_abandoned", "refuse_abandoned"]
