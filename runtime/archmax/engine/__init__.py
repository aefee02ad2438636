"""The engine: one door (:func:`apply`) into the firing kinds and the turn loop they drive (DESIGN.md §2).

Layout: :mod:`~archmax.engine.door` (``apply``: the one entry) → :mod:`~archmax.engine.firing_rule`
(what a session's state makes of a firing; reads only) and one module per firing kind —
:mod:`~archmax.engine.turn` (send, invoke), :mod:`~archmax.engine.deliver`, :mod:`~archmax.engine.reply`,
:mod:`~archmax.engine.decide`, :mod:`~archmax.engine.recover` (and :mod:`~archmax.engine.forwarding` for
a park delegated to a sub-workflow's child) → :mod:`~archmax.engine.claims` (the one place a session is
claimed and an operation's work ends) → :mod:`~archmax.engine.loop` (model call → governed tool calls →
model call … until the session finishes or parks; BEHAVIOUR.md §5, §8). The engine never imports
boto3 (DESIGN.md §1), a host, an inbound or an outbound edge.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # ``archmax.engine.apply`` without importing the door (and the loop) for every engine submodule.
    if name in ("apply", "Applied", "Door"):
        from archmax.engine import door

        return getattr(door, name)
    raise AttributeError(f"module 'archmax.engine' has no attribute {name!r}")
