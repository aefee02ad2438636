"""Running ``before``/``after`` hooks: executors, verdicts, correction budgets, marks.

Rule source: BEHAVIOUR.md §2.4 (kinds, ``hook(ctx)``, verdicts, budgets, when hooks run, routing),
§5.1 refusals (6)-(7), §5.7 (terminal hook results are turn failures), §5.8 step (2) (a terminal
state's ``after`` hooks at completion), §7 (the ``[after]`` note), §8 (the turn boundary resets
correction counts and ``before`` marks).

The turn loop asks three questions, one per moment a hook can run:

* :meth:`HookRunner.before_visit` — just before a visit's first model call, unless the visit's
  ``before`` hooks already ran (the state is marked in ``before_done``);
* :meth:`HookRunner.at_advance` — during ``archmax_advance``: the leaving state's ``after`` hooks,
  then the target's ``before`` hooks;
* :meth:`HookRunner.at_completion` — when the model finishes in a terminal state.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.util
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any

from archmax.errors import HookToolForbiddenError
from archmax.hooks import HookContext
from archmax.models.base import ModelRequest
from archmax.session.evidence import evidence
from archmax.session.notes import after_note_text, make_note
from archmax.session.records import Message
from archmax.spec.check_hooks import hook_kind
from archmax.spec.governance import WILDCARD

if TYPE_CHECKING:
    from archmax.engine.runtime import RunningTurn

VERDICTS = ("ok", "correct", "veto")
RUBRIC_SYSTEM = (
    "You are a completion check of an automated agent's work. Grade the evidence (the conversation so "
    "far) against the instructions. Answer with JSON only, exactly one of: "
    '{"verdict": "ok"} when the work meets the instructions; '
    '{"verdict": "correct", "reason": "<what the agent must fix>"} when the agent can fix it; '
    '{"verdict": "veto", "reason": "<why>"} when the work must not go on.'
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
_modules: dict[tuple[str, int], ModuleType] = {}
_modules_lock = threading.Lock()


@dataclass(frozen=True)
class HookResult:
    """What the hooks of one (state, phase) answered, taken together.

    Attributes:
        verdict: ``ok`` when every hook said ok; else the first non-ok verdict as counted.
        reason: The hook's reason (or why it failed closed); ``None`` for ``ok``.
        terminal: A fail-closed result or an exhausted correction budget: a turn failure (§5.7).
    """

    verdict: str
    reason: str | None = None
    terminal: bool = False

    @property
    def passed(self) -> bool:
        """Whether every hook answered ok."""
        return self.verdict == "ok"


PASSED = HookResult("ok")


class HookFailure(Exception):
    """A hook that cannot give a verdict: it raised, is missing, or answered something else."""


class HookRunner:
    """Runs one loop's hooks on runtime authority and records each result (trail step + ``hook`` event)."""

    def __init__(self, loop: RunningTurn) -> None:
        self.loop = loop
        self.rt = loop.rt
        self.wf = loop.rt.workflow

    # ------------------------------------------------------------------ the three moments

    def before_visit(self) -> bool:
        """Run the position's ``before`` hooks when this visit has not run them yet (§2.4).

        A visit that did not start with an advance (turn opening, decision, reset, ``on_error`` route)
        runs them here, just before its first model call. Any non-ok result is a turn failure; at a
        turn opening a deliberate veto also writes ``Request rejected before the '<state>' state
        could run: <reason>`` as assistant text.

        Returns:
            True when the visit failed (``pending_failure`` is set and the loop must route it).
        """
        rec = self.loop.rec
        slug = rec.current_state
        state = self.wf.states[slug]
        if not state.before or slug in rec.before_done:
            return False
        rec.before_done = [*rec.before_done, slug]
        result = self.run(slug, "before")
        if result.passed:
            self.loop.work.commit()
            return False
        text = f"Request rejected before the '{slug}' state could run: {result.reason}"
        opening = rec.turn_open_state == slug and not rec.moved_since_open
        if opening and not result.terminal:
            rec.messages.append(Message(role="assistant", content=text))
            self.rt.events.emit(rec, "agent_text", text=text)
        rec.pending_failure = text
        return True

    def at_advance(self, source: str, target: str, reason: str) -> str | None:
        """``archmax_advance`` refusals (6) and (7): the leaving state's ``after``, then the target's ``before``.

        Returns:
            ``None`` when the advance may go on (the target is then marked); else the refusal's
            reason. A terminal result also sets ``pending_failure`` (§5.7).
        """
        rec = self.loop.rec
        moves = {"from_state": source, "to_state": target, "reason": reason}
        # A hook's verdict is a commit point (§9.3): the batch that ran it ends in a commit, so a crash
        # after it never runs the hook again and a `correct` it spent stays spent (issue 22 item 5).
        if self.wf.states[source].after or self.wf.states[target].before:
            self.loop.side_effect()
        result = self.run(source, "after", **moves)
        if result.passed:
            result = self.run(target, "before", **moves)
        if result.terminal:
            rec.pending_failure = result.reason
        if not result.passed:
            return result.reason
        rec.before_done = [s for s in rec.before_done if s != target] + [target]
        return None

    def at_completion(self) -> bool:
        """A terminal state's ``after`` hooks when the model finishes (§5.8 step 2).

        A ``correct`` within budget or a deliberate veto appends an ``[after]`` note so the model is
        called again; a terminal result is a turn failure.

        Returns:
            True when the loop must go on (call the model again, or route the failure); False when
            the completion stands.
        """
        rec = self.loop.rec
        slug = rec.current_state
        state = self.wf.states[slug]
        if not state.is_terminal or not state.after:
            return False
        result = self.run(slug, "after")
        if result.passed:
            return False
        if result.terminal:
            rec.pending_failure = result.reason
        else:
            rec.messages.extend(make_note("after", after_note_text(slug, result.reason or "")))
        self.loop.work.commit()
        return True

    # ------------------------------------------------------------------ running hooks

    def run(self, slug: str, phase: str, **moves: str) -> HookResult:
        """Run the hooks of ``slug``'s ``phase`` in order, stopping at the first that is not ok."""
        state = self.wf.states[slug]
        for index, hook in enumerate(getattr(state, phase)):
            result = self._one(slug, phase, index, hook, moves)
            if not result.passed:
                return result
        return PASSED

    def _one(self, slug: str, phase: str, index: int, hook: dict[str, Any], moves: dict[str, str]) -> HookResult:
        rec = self.loop.rec
        kind = hook_kind(hook)
        label = f"{phase} hook {index} ({kind}) of state '{slug}'"
        try:
            verdict, reason = _verdict_of(self._execute(kind, hook, self._context(slug, phase, moves)))
        except HookFailure as exc:
            result = HookResult("veto", f"the {label} failed: {exc}", terminal=True)
        else:
            if phase == "before" and verdict == "correct":
                verdict = "veto"  # a before hook answers ok or veto (§2.4)
            result = HookResult(verdict, reason)
            if verdict == "correct":
                result = self._spend_correction(slug, phase, index, hook, label, reason or "")
        self.rt.trail(
            rec, "hook", rec.current_state, result.reason, state=slug, phase=phase, index=index, verdict=result.verdict
        )
        self.rt.events.emit(
            rec, "hook", state=slug, phase=phase, index=index, kind=kind,
            verdict=result.verdict, reason=result.reason, terminal=result.terminal,
        )  # fmt: skip
        return result

    def _spend_correction(
        self, slug: str, phase: str, index: int, hook: dict[str, Any], label: str, reason: str
    ) -> HookResult:
        """Count one ``correct`` against the position's ``max_iterations``; past it, the result is terminal."""
        rec = self.loop.rec
        budget = _budget(hook)
        key = f"{slug}/{phase}/{index}"
        used = rec.hook_iterations.get(key, 0)
        if used + 1 > budget:
            return HookResult(
                "correct", f"the {label} exhausted its correction budget (max_iterations: {budget}): {reason}",
                terminal=True,
            )  # fmt: skip
        rec.hook_iterations = {**rec.hook_iterations, key: used + 1}
        return HookResult("correct", reason)

    def _context(self, slug: str, phase: str, moves: dict[str, str]) -> HookContext:
        rec = self.loop.rec
        return HookContext(
            session_id=rec.session_id,
            workflow=self.wf.slug,
            state=slug,
            phase=phase,  # type: ignore[arg-type]
            trigger=rec.trigger,
            variables=MappingProxyType({n: json.loads(json.dumps(v.value)) for n, v in rec.variables.items()}),
            messages=tuple(m.model_copy(deep=True) for m in rec.messages),
            tools=tuple(self.wf.offered_tools(slug, self.rt.host_tools.keys())),
            from_state=moves.get("from_state"),
            to_state=moves.get("to_state"),
            reason=moves.get("reason"),
            _call_tool=self._call_tool,
        )

    def _call_tool(self, name: str, **args: Any) -> Any:
        """A host tool on runtime authority: state lists do not bind hooks, root forbid lists do (§2.4)."""
        removed = {r.tool for r in self.wf.forbid_always if not r.guarded}
        if name in removed or WILDCARD in removed:
            raise HookToolForbiddenError(name, "the workflow's root forbid lists remove it")
        tool = self.rt.host_tools.get(name)
        if tool is None:
            raise HookToolForbiddenError(name, "it is not a host tool of this agent")
        return tool.fn(**args)

    # ------------------------------------------------------------------ executors

    def _execute(self, kind: str, hook: dict[str, Any], ctx: HookContext) -> Any:
        try:
            if kind == "script":
                return self._script(hook["script"])(ctx)
            if kind == "rubric":
                return self._rubric(hook["rubric"], ctx)
            executor = self.rt.hook_executors.get(kind)
            if executor is None:
                raise HookFailure(f"no executor for hook kind '{kind}'")
            return executor(ctx, hook[kind])
        except HookFailure:
            raise
        except (Exception, SystemExit) as exc:  # fail-closed: a hook that raises is a terminal veto (§2.4)
            # SystemExit too (issue 21 item 5): a hook calling sys.exit() must not end the process
            # mid-turn, or the session stays running and every sweep re-runs it and exits again
            raise HookFailure(f"{type(exc).__name__}: {exc}") from exc

    def _script(self, relative: str) -> Any:
        root = self.wf.root
        path = (root / relative) if root is not None else None
        if path is None or not path.is_file():
            raise HookFailure(f"'{relative}' is missing")
        fn = getattr(_load_module(path), "hook", None)
        if not callable(fn):
            raise HookFailure(f"'{relative}' defines no hook(ctx) function")
        return fn

    def _rubric(self, rubric: dict[str, Any], ctx: HookContext) -> Any:
        """One model call grading the evidence against the rubric's instructions (§2.4)."""
        state = self.wf.states[ctx.state]
        override = rubric.get("model") or state.model
        assert self.rt.hook_model_for is not None, "the runtime sets it when assembled"
        model = self.rt.hook_model_for(override)
        prompt = (
            f"Instructions:\n{rubric['instructions'].strip()}\n\n"
            f"Evidence (the conversation, state '{ctx.state}'):\n{evidence(list(ctx.messages))}"
        )
        timeout_ms = state.budget.timeout_ms if state.budget else None
        request = ModelRequest(
            system=RUBRIC_SYSTEM,
            messages=[Message(role="user", content=prompt)],
            state=ctx.state,
            session_id=ctx.session_id,
            model=override,
            timeout_s=timeout_ms / 1000 if timeout_ms else None,
        )
        response = _within_budget(lambda: model.complete(request), timeout_ms)
        self.loop.work.spend(response.usage)
        body = _FENCE.sub("", (response.text or "").strip())
        try:
            return json.loads(body)
        except ValueError:
            raise HookFailure(f"the rubric's grader answered no JSON verdict: {body[:200]!r}") from None


def _within_budget(call: Any, timeout_ms: int | None) -> Any:
    """``call()`` racing the state's ``timeoutMs`` (§5.4): a grader that does not answer in time fails closed.

    Raises:
        HookFailure: the budget passed first; the late answer is discarded (issue 21 item 5).
    """
    if not timeout_ms:
        return call()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="archmax-grader")
    future = pool.submit(call)
    try:
        return future.result(timeout=timeout_ms / 1000)
    except concurrent.futures.TimeoutError:
        raise HookFailure(f"the rubric's grader exceeded the state's time budget (timeoutMs: {timeout_ms})") from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _verdict_of(raw: Any) -> tuple[str, str | None]:
    """``(verdict, reason)`` of a hook's answer; anything but a well-formed verdict fails closed (§2.4)."""
    if not isinstance(raw, dict) or raw.get("verdict") not in VERDICTS:
        raise HookFailure(f"returned {json.dumps(raw, default=repr)[:200]}, which is not a verdict")
    verdict = raw["verdict"]
    if verdict == "ok":
        return "ok", None
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise HookFailure(f"answered '{verdict}' without a reason")
    return verdict, reason.strip()


def _budget(hook: dict[str, Any]) -> int:
    """``max_iterations`` of a hook position: a rubric's own, else the sidecar, else 0 (§2.4)."""
    rubric = hook.get("rubric")
    if isinstance(rubric, dict) and "max_iterations" in rubric:
        return int(rubric["max_iterations"])
    return int(hook.get("max_iterations", 0))


def _load_module(path: Path) -> ModuleType:
    """Import a hook script once per file version (a changed file is imported again)."""
    key = (str(path.resolve()), path.stat().st_mtime_ns)
    with _modules_lock:
        module = _modules.get(key)
        if module is None:
            name = "archmax_hook_" + hashlib.sha256(repr(key).encode()).hexdigest()[:16]
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise HookFailure(f"'{path.name}' cannot be imported")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _modules[key] = module
        return module
