"""A function's cold start without the cyclic garbage collector: paused at import, resumed after the first invocation.

Rule source: issue 24 goal 4 (cold start end to end, import + first event, against ``import
boto3`` + one GetItem; ``bench/cold_import.py``). Loading a function allocates hundreds of
thousands of long-lived objects (modules, classes, pydantic models, boto3's service models), and
every 700 allocations CPython runs a collection that walks them, finding nothing to free: about a
tenth of the cold start's CPU time. ``functions/<name>/app.py`` calls :func:`pause_gc` on its first
line; :meth:`archmax.hosting.telemetry.Telemetry.handler` calls :func:`resume_gc` when the first
invocation returns or raises, so every later invocation runs with the collector as configured.

Resuming freezes what exists then (``gc.freeze``: the permanent generation) before it re-enables
the collector. Without that, the second invocation paid for the first collection of everything the
cold start built (about 100 ms measured by ``bench/cold_import.py``'s second event), which is
long-lived anyway. Reference counting frees all else meanwhile; the reference cycles the cold start
left behind are frozen too and never collected: about 800-1,000 objects, 0.3 MB measured (send,
timer), once per container.
"""

from __future__ import annotations

import gc

_paused: list[bool] = []
"""``[True]`` while this module holds the collector off (so a collector disabled by someone else stays off)."""


def pause_gc() -> None:
    """Disable the cyclic garbage collector until :func:`resume_gc`; nothing when it is already disabled."""
    if gc.isenabled() and not _paused:
        gc.disable()
        _paused.append(True)


def resume_gc() -> None:
    """Freeze what exists and re-enable the collector :func:`pause_gc` disabled; nothing otherwise (idempotent, cheap)."""
    if _paused:
        _paused.clear()
        gc.freeze()
        gc.enable()


__all__ = ["pause_gc", "resume_gc"]
