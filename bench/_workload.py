"""The benchmarks' workload: a one-state workflow (``bench/waiter``) and a model that parks or finishes.

:class:`WaiterModel` is stateless and thread-safe, so one instance serves every session and
thread of a run. Its rule, read from the request alone:

* when the newest message is a user message containing ``wait``, it says ``waiting`` and calls
  ``archmax_wait({reason: "bench", until: "1d"})``: the session parks with a ``resume_at``, and
  having spoken it owes no handoff call;
* a handoff call (the reply-only call after a silent park; not reached by this workload) says ``waiting``;
* anything else (``finish``, or a timer's delivery, which carries no message) says ``done``:
  the turn ends and the session completes.

So ``send(id, "please wait")`` parks, ``deliver(id, message="wait again")`` resumes and parks
again, and ``deliver(id, message="finish")`` or a sweep's timer completes it. One model call per
park and one per completion; no network, no randomness.

Rule source: DESIGN.md §7 (benchmarks), BEHAVIOUR.md §3.5 (deliver), §11 (sweep).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from archmax import ModelRequest, ModelResponse, ToolCall, Usage

WORKFLOW = Path(__file__).resolve().parent / "waiter"
START = "start"
PARK_MESSAGE = "please wait"
AGAIN_MESSAGE = "wait again"
FINISH_MESSAGE = "finish"
_USAGE = Usage(input_tokens=1, output_tokens=1)


class WaiterModel:
    """A model that parks when told to wait and finishes otherwise (see the module docstring)."""

    name = "bench-waiter"

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one call from the request alone (no state, so any thread may call it)."""
        if request.handoff:
            return ModelResponse(text="waiting", usage=_USAGE, stop_reason="end_turn", model_id=self.name)
        last = request.messages[-1] if request.messages else None
        if last is not None and last.role == "user" and "wait" in last.content:
            call = ToolCall(
                id=f"call_{len(request.messages)}", name="archmax_wait", args={"reason": "bench", "until": "1d"}
            )
            # Its words ride the parking call, as the peer's tool node adds its "waiting" message: no
            # handoff call is owed (BEHAVIOUR §5.5), so archmax's park costs one model call like the peer's.
            return ModelResponse(
                text="waiting", tool_calls=[call], usage=_USAGE, stop_reason="tool_use", model_id=self.name
            )
        return ModelResponse(text="done", usage=_USAGE, stop_reason="end_turn", model_id=self.name)


def run_threads(count: int, work: Callable[[int], None]) -> float:
    """Start ``count`` threads on a barrier, each running ``work(i)``; seconds from release to last join."""
    barrier = threading.Barrier(count + 1)
    errors: list[BaseException] = []

    def body(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} thread(s) failed; first: {errors[0]!r}") from errors[0]
    return elapsed
