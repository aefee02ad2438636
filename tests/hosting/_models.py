"""Model doubles for hosting tests: a gate that holds the first model call, so a turn is "running".

Both wrap the real :class:`ScriptedModel`; nothing of ours is mocked. ``GatedModel`` lets a test
hold a turn mid-flight (its lease live) while other firings arrive; with ``die=True`` the held call
never returns normally: it raises :class:`ProcessDied`, like a process killed mid-turn.
"""

from __future__ import annotations

import threading
from typing import Any

from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.scripted import ScriptedModel


class ProcessDied(BaseException):
    """Stands for a process killed mid-turn: not an Exception, so nothing on the way handles it."""


class GatedModel:
    """The first ``complete`` call waits for :meth:`open`; later calls go straight to the script."""

    def __init__(self, entries: list[dict[str, Any]], *, die: bool = False) -> None:
        self.script = ScriptedModel(entries)
        self.entered = threading.Event()
        self._gate = threading.Event()
        self._die = die
        self._first = True
        self._lock = threading.Lock()

    def open(self) -> None:
        self._gate.set()

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            first, self._first = self._first, False
        if first:
            self.entered.set()
            if not self._gate.wait(timeout=60):
                raise ProcessDied("the gate was never opened")
            if self._die:
                raise ProcessDied("killed mid-turn")
        return self.script.complete(request)


class Runner(threading.Thread):
    """A thread running one call, keeping its result or whatever it raised (BaseException too)."""

    def __init__(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(daemon=True)
        self._call = (fn, args, kwargs)
        self.result: Any = None
        self.raised: BaseException | None = None

    def run(self) -> None:
        fn, args, kwargs = self._call
        try:
            self.result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            self.raised = exc
