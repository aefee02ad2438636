"""The door: the one entry through which every firing reaches a session.

Rule source: BEHAVIOUR.md §3 (operations: each validates the session's state and its arguments
before it writes anything, then claims the session with a conditional commit that takes the lease),
DESIGN.md §2 (the engine), issue 23 ("The door").

``apply(rt, firing)`` picks the module of the firing's kind — :mod:`~archmax.engine.turn`
(``Send``, ``Turn``), :mod:`~archmax.engine.deliver`, :mod:`~archmax.engine.reply`,
:mod:`~archmax.engine.decide`, :mod:`~archmax.engine.recover` — and answers :class:`Applied`
(the Outcome and the committed record). The firing rule is :mod:`~archmax.engine.firing_rule`; claims
and the shared tail are :mod:`~archmax.engine.claims`. What follows a commit (sending the outbox) is
the caller's: the engine runs no consequence of its own. A host observing operations (telemetry)
wraps this one callable (:class:`Door`) when it assembles the agent.
"""

from __future__ import annotations

from typing import Protocol

from archmax.engine import decide, deliver, expire, forwarding, recover, remembered, reply, turn
from archmax.engine.claims import Applied
from archmax.engine.firing_rule import refuse_outside_pair
from archmax.engine.runtime import Runtime
from archmax.engine.work import releases
from archmax.session.firing import Decide, Deliver, EngineFiring, Expire, Recover, Reply, Send, Turn


class Door(Protocol):
    """The shape of :func:`apply`, and of anything wrapping it (``Agent(runtime, door)``)."""

    def __call__(self, rt: Runtime, firing: EngineFiring) -> Applied:
        """Apply ``firing`` on ``rt`` (see :func:`apply`)."""
        ...


def apply(rt: Runtime, firing: EngineFiring) -> Applied:
    """Apply one firing to its session.

    Args:
        rt: The assembled runtime of the session's workflow.
        firing: ``Send``, ``Turn``, ``Deliver``, ``Reply``, ``Decide`` or ``Recover``
            (:mod:`archmax.session.firing`); its session id was parsed at the edge.

    Returns:
        :class:`Applied`: ``outcome`` (``None`` only for a ``Recover`` that found no dead turn),
        ``record``, the record the operation's last commit left (``None`` when nothing was committed),
        and ``others``, the other sessions of the pair it let go of with outbox entries (§5.10).

    A firing at a session recorded under another workflow than ``rt``'s is refused by every kind on
    the record it reads, before its claim (:func:`~archmax.engine.firing_rule.refuse_other_workflow`,
    attack32): a child's id is first refused to a workflow outside its caller chain
    (:func:`~archmax.engine.firing_rule.refuse_outside_pair`), then routed through its caller, or to
    its own workflow (§5.10); a runtime that ``adopts`` the session's workflow (the CLI's renamed
    folder) continues it.

    Raises:
        Every typed refusal of the firing's kind (BEHAVIOUR.md §3.4–§3.9, §3.12); nothing is written.
        OtherWorkflowSessionError: the session belongs to another workflow (BEHAVIOUR.md §3.3).
    """
    refuse_outside_pair(rt, getattr(firing, "session_id", None))  # only the pair's workflows reach it (attack32)
    rt, firing = forwarding.addressed(rt, firing)  # a child's id reaches the pair through its caller (§5.10)
    with releases() as released:  # the pair's other session may have committed messages to send too
        # the first read is what a warm store remembers, checked by the claim (issue 24: the claim is the read)
        applied = remembered.claim_checked(rt, getattr(firing, "session_id", None), lambda: _route(rt, firing))
        applied = forwarding.caught_up(rt, firing, applied)  # and the child's news reaches it
    own = applied.record.session_id if applied.record is not None else None
    return applied._replace(others=tuple(r for sid, r in released.items() if sid != own))


def _route(rt: Runtime, firing: EngineFiring) -> Applied:
    if isinstance(firing, Send):
        return turn.send(rt, firing)
    if isinstance(firing, Deliver):
        return deliver.deliver(rt, firing)
    if isinstance(firing, Reply):
        return reply.reply(rt, firing)
    if isinstance(firing, Decide):
        return decide.decide(rt, firing)
    if isinstance(firing, Recover):
        return recover.recover(rt, firing)
    if isinstance(firing, Turn):
        return turn.invoke(rt, firing)
    if isinstance(firing, Expire):
        return expire.expire(rt, firing)
    raise TypeError(f"not a firing: {type(firing).__name__}")


def run_child(rt: Runtime, firing: EngineFiring) -> Applied:
    """The :class:`~archmax.engine.runtime.FiringRunner` of sub-workflow children.

    The caller drives its own child here, so the firing goes to the child itself, never back through
    the caller (:func:`~archmax.engine.forwarding.addressed` is for firings from outside).
    """
    return _route(rt, firing)


__all__ = ["Applied", "Door", "apply", "run_child"]
