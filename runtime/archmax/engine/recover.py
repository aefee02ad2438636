"""Recovering a turn whose process died: take the expired lease over and continue from the checkpoint.

Rule source: BEHAVIOUR.md §3.12 (takeover: unanswered tool calls get the ``interrupted`` result, a
``lease`` warning), DESIGN.md §3 (a host's sweep recovers stale sessions); issue 9 (the claim that
started the dead turn carried the firing's files, so nothing of the firing is applied again).
"""

from __future__ import annotations

from archmax.engine.claims import Applied, answer_interrupted_calls, claim, guarded, open_work
from archmax.engine.firing_rule import lease_live, preflight_model, refuse_other_workflow
from archmax.engine.loop import TurnLoop
from archmax.engine.runtime import Runtime
from archmax.errors import SessionNotResumableError
from archmax.session.firing import Recover
from archmax.session.records import Checkpoint, SessionStatus


def recover(rt: Runtime, f: Recover) -> Applied:
    """Finish a dead turn; ``Applied(None, None)`` when the session is not mid-turn.

    Raises:
        SessionNotResumableError: the lease is still live, or another process recovered it first.
    """
    rec = rt.store.load(f.session_id)
    refuse_other_workflow(rt, rec)  # another workflow's dead turn: its own workflow's host finishes it (attack32)
    if rec is None or rec.status != SessionStatus.RUNNING:
        return Applied(None, None)
    if lease_live(rt, rec):
        raise SessionNotResumableError(f.session_id, str(rec.status))
    return continue_dead_turn(rt, rec)


def continue_dead_turn(rt: Runtime, rec: Checkpoint) -> Applied:
    """Take the session over (§3.12) and continue the turn from its last checkpoint, adding nothing."""
    work = open_work(rt, rec, rec.version)  # a load is the caller's own object: no copy
    answer_interrupted_calls(rec)
    work.recovered = True
    preflight_model(rt, rec.position)
    claim(work)
    rt.warn(
        rec,
        "lease",
        f"session '{rec.session_id}' was taken over after its lease expired; continuing the turn its last "
        "event started",
    )
    return guarded(rt, work, lambda: TurnLoop(rt, work).run(), "turn")
