"""Run a workflow's cases: one fresh session per case, steps in order, halting by the rules.

Rule source: BEHAVIOUR.md §10.1 (discovery, one session per case on a fresh store), §10.2
(actions, assertions read the nearest preceding action's view), §10.3 (halting, records, runner,
disabled suites, ``tests.maxConcurrency``, ``tests.caseTimeoutMs``), §10.4 (``model:`` scripts,
``model.unconsumed``); seed "Testing a park-and-resume flow".

Example:
    >>> result = run_tests("examples/workflows/support-inbox")  # doctest: +SKIP
    >>> result["exit_code"], [r.verdict.status for r in result["results"]]  # doctest: +SKIP
    (0, ['passed', ...])
"""

from __future__ import annotations

import concurrent.futures
import functools
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from archmax.agent import Agent, create_agent
from archmax.cases.assertions import Grader, View, evaluate
from archmax.cases.discovery import CaseFile, discover_cases, read_case
from archmax.cases.judge import grade
from archmax.cases.mocks import mocked_tools, subworkflow_mocks
from archmax.cases.results import AssertionRecord, CaseResult, Verdict
from archmax.cases.schema import Case, DecideBody, DeliverBody, Step
from archmax.clock import Clock, SystemClock, epoch_ms
from archmax.errors import ArchmaxError, CaseSpecError, WorkflowSpecError
from archmax.models.base import Model
from archmax.models.scripted import ScriptedModel
from archmax.session.results import Outcome
from archmax.spec import Workflow, load_workflow
from archmax.stores.base import SessionStore
from archmax.stores.memory import MemoryStore

DEFAULT_CASE_TIMEOUT_MS = 120_000
REFUSED_START = "Refusing to start"


class _CaseDied(Exception):
    """Internal: the case died (an action raised, a refused start, the timeout); carries the error text."""


class _Settings:
    """The suite's ``tests:`` block of ``workflow.yaml``."""

    def __init__(self, workflow: Workflow, workflow_dir: Path) -> None:
        block = workflow.spec.get("tests") or {}
        where = f"{workflow_dir / 'workflow.yaml'}"
        if not isinstance(block, dict):
            raise CaseSpecError(where, "must be a mapping (caseTimeoutMs, maxConcurrency, judge)", key="tests")
        timeout = block.get("caseTimeoutMs", DEFAULT_CASE_TIMEOUT_MS)
        if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
            raise CaseSpecError(where, "must be a positive integer (milliseconds)", key="tests.caseTimeoutMs")
        concurrency = block.get("maxConcurrency", 1)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise CaseSpecError(where, "must be a positive integer", key="tests.maxConcurrency")
        if concurrency > 1:
            raise CaseSpecError(
                where,
                f"is {concurrency}, but cases run one at a time: use 1 or leave it out",
                key="tests.maxConcurrency",
            )
        judge = block.get("judge")
        if judge is not None and (not isinstance(judge, str) or not judge.strip()):
            raise CaseSpecError(where, "must be a model configuration such as 'bedrock:<model id>'", key="tests.judge")
        self.case_timeout_ms: int = timeout
        self.judge: str | None = judge
        self.base_dir = workflow_dir


def run_tests(
    workflow_dir: str | Path,
    *,
    filter: str | None = None,
    store_factory: Callable[[], SessionStore] | None = None,
    store: SessionStore | None = None,
    clock: Clock | None = None,
    tools: Iterable[Any] | Mapping[str, Any] | None = None,
    model: Model | None = None,
    judge: Model | None = None,
) -> dict[str, Any]:
    """Run the cases of one workflow (``archmax test``), one at a time, in path order.

    Args:
        workflow_dir: The workflow folder (``workflows/<slug>``, holding ``workflow.yaml`` and ``tests/``).
        filter: A substring of the case path (``tests/<...>.test.yaml``); ``None`` runs every case.
        store_factory: Builds the store of each case; default a fresh :class:`MemoryStore` per case.
        store: One configured store for every case (``archmax test --store``); each case still has its
            own session id. ``store_factory`` wins when both are given.
        clock: Injected clock (session ids and every instant); default the wall clock.
        tools: Host tools registered for every case (mocks answer first, then these).
        model: The model that drives cases without ``model:``; default the configured model
            (``ARCHMAX_MODEL``), built when such a case first calls it. Cases with ``model:`` ignore it.
        judge: The ``grade`` judge; default the model named by ``tests.judge`` (built at first use).

    Returns:
        ``{"results": [CaseResult], "exit_code": 0 | 1, "discovered": int}``, plus ``"skipped": "disabled"``
        for a disabled workflow (exit 0, nothing runs) and ``"filter"`` when one was given. ``exit_code``
        is 1 when any case failed or the filter matched nothing. A workflow that fails to load makes
        every discovered case fail with the load error.

    Raises:
        CaseSpecError: ``tests.maxConcurrency`` > 1 or another malformed ``tests:`` setting.
    """
    folder = Path(workflow_dir)
    files = discover_cases(folder, filter)
    out: dict[str, Any] = {"results": [], "exit_code": 0, "discovered": len(files)}
    if filter:
        out["filter"] = filter
    try:
        workflow: Workflow | None = load_workflow(folder)
    except WorkflowSpecError as exc:
        workflow, load_error = None, f"the workflow does not load: {exc}"
    if workflow is not None and workflow.disabled:
        out["skipped"] = "disabled"
        return out
    settings = _Settings(workflow, folder) if workflow is not None else None
    results: list[CaseResult] = []
    for case_file in files:
        if workflow is None or settings is None:
            results.append(_invalid(case_file, load_error))
            continue
        try:
            case = read_case(case_file)
        except CaseSpecError as exc:
            results.append(_invalid(case_file, str(exc)))
            continue
        factory = store_factory or ((lambda: store) if store is not None else MemoryStore)
        runner = _CaseRun(case, workflow, settings, factory, clock or SystemClock(), tools, model, judge)
        results.append(runner.run())
    out["results"] = results
    failed = any(r.verdict.status == "failed" for r in results)
    out["exit_code"] = 1 if failed or (filter and not files) else 0
    return out


def session_id_for(case_id: str, clock: Clock) -> str:
    """``test-<epoch ms>-<case id with / replaced by ->`` (§10.1)."""
    return f"test-{epoch_ms(clock.now())}-{case_id.replace('/', '-')}"


def _invalid(case_file: CaseFile, error: str) -> CaseResult:
    return CaseResult(
        id=case_file.id,
        title=case_file.id,
        description="",
        session_id=None,
        verdict=Verdict(status="failed", failures=[error]),
        error=error,
    )


class _CaseRun:
    """One case, start to verdict."""

    def __init__(
        self,
        case: Case,
        workflow: Workflow,
        settings: _Settings,
        store_factory: Callable[[], SessionStore],
        clock: Clock,
        tools: Iterable[Any] | Mapping[str, Any] | None,
        agent_model: Model | None,
        judge: Model | None,
    ) -> None:
        self.case = case
        self.workflow = workflow
        self.settings = settings
        self.store = store_factory()
        self.agent_model = agent_model
        self.clock = clock
        self.tools = tools
        self.judge = judge
        self.session_id = session_id_for(case.id, clock)
        self.model: ScriptedModel | None = None
        self.agent: Agent | None = None
        self.view: View | None = None
        self.deadline = 0.0

    def _result(self, status: str, records: list[AssertionRecord], error: str | None) -> CaseResult:
        failures = [error] if error else []
        for r in records:
            if r.status == "failed":
                where = f"step {r.step} " if r.step is not None else ""
                failures.append(f"{where}{r.kind}: {r.detail}")
        return CaseResult(
            id=self.case.id,
            title=self.case.title,
            description=self.case.description,
            session_id=None if status == "skipped" else self.session_id,
            verdict=Verdict(status=status, failures=failures),  # type: ignore[arg-type]
            records=records,
            skip_reason=self.case.skip,
            error=error,
        )

    def run(self) -> CaseResult:
        case = self.case
        if case.skip:
            return self._result("skipped", [], None)
        records: list[AssertionRecord] = []
        error: str | None = None
        try:
            self._prepare()
        except _CaseDied as died:
            error = str(died)
        halted = error is not None
        self.deadline = time.monotonic() + self.settings.case_timeout_ms / 1000
        for step in case.steps:
            if halted:
                records.append(AssertionRecord(kind=step.key, status="not-executed", step=step.number))
                continue
            try:
                if step.is_action:
                    records.append(self._act(step))
                else:

                    def check(s: Step = step) -> list[AssertionRecord]:
                        # the view is set by the case's first firing, before any assertion step
                        return evaluate(s, cast(View, self.view), self._grader())

                    found = self._within(check)
                    records.extend(found)
                    if step.is_structural and any(r.status == "failed" for r in found):
                        halted = True
            except _CaseDied as died:
                error = str(died)
                halted = True
                records.append(AssertionRecord(kind=step.key, status="failed", step=step.number, detail=error))
        if not halted and self.model is not None and self.model.remaining:
            n = self.model.remaining
            records.append(
                AssertionRecord(
                    kind="model.unconsumed",
                    status="failed",
                    step=None,
                    detail=f"{n} script entr{'y was' if n == 1 else 'ies were'} never used",
                )
            )
        failed = error is not None or any(r.status == "failed" for r in records)
        return self._result("failed" if failed else "passed", records, error)

    # ------------------------------------------------------------------ setup

    def _prepare(self) -> None:
        case = self.case
        if case.trigger is not None and not self.workflow.is_declared(case.trigger):
            declared = ", ".join(f"'{t}'" for t in self.workflow.declared_triggers()) or "(none)"
            raise _CaseDied(
                f"{case.path} at 'trigger.id': trigger '{case.trigger}' is not declared; declared: {declared}"
            )
        if case.model_entries is not None:
            self.model = ScriptedModel([dict(e) for e in case.model_entries], name=f"scripted:{case.id}")
        try:
            self.agent = create_agent(
                self.workflow,
                self.store,
                self.model if self.model is not None else self.agent_model,
                tools=mocked_tools(case.mocks, self.tools),
                clock=self.clock,
                # a case's script replaces every model call, states' own `model:` included (§10.4)
                model_overrides=case.model_entries is None,
                hook_model=self.agent_model,  # rubric hooks keep their configured models (§10.4)
            )
            self.agent.runtime.workflows.mocks = subworkflow_mocks(case.mocks)
            if case.workspace:
                self.agent.sessions.seed(self.session_id, case.workspace)
        except ArchmaxError as exc:
            raise _CaseDied(_describe(exc)) from None

    def _grader(self) -> Grader | None:
        if self.judge is None and self.settings.judge is not None:
            from archmax.models import model_from_config

            try:
                self.judge = model_from_config(self.settings.judge, base_dir=self.settings.base_dir)
            except ArchmaxError as exc:
                raise _CaseDied(f"tests.judge: {_describe(exc)}") from None
        judge = self.judge
        if judge is None:
            return None
        return lambda question, messages: grade(judge, question, messages, session_id=self.session_id)

    # ------------------------------------------------------------------ actions

    def _within(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` inside the case's remaining time budget (``tests.caseTimeoutMs``)."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _CaseDied(self._timeout_text())
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="archmax-case")
        future = pool.submit(fn)
        try:
            return future.result(timeout=remaining)
        except concurrent.futures.TimeoutError:
            raise _CaseDied(self._timeout_text()) from None
        except _CaseDied:
            raise
        except Exception as exc:  # noqa: BLE001 - an action that raises kills the case, whatever it raised (§10.3)
            raise _CaseDied(_describe(exc)) from None
        finally:
            pool.shutdown(wait=False)

    def _timeout_text(self) -> str:
        return f"the case exceeded tests.caseTimeoutMs ({self.settings.case_timeout_ms} ms)"

    def _act(self, step: Step) -> AssertionRecord:
        agent = self.agent
        assert agent is not None
        case = self.case
        sid = self.session_id
        body = step.body
        call: Callable[[], Outcome]
        if step.key == "send":
            call = functools.partial(
                agent.workflow.send, sid, body, trigger=case.trigger, variables=case.variables or None
            )
        elif step.key == "deliver":
            assert isinstance(body, DeliverBody)
            call = functools.partial(
                agent.workflow.deliver, sid, trigger=body.trigger, variables=body.variables or None
            )
        else:
            assert isinstance(body, DecideBody)
            call = functools.partial(agent.workflow.decide, sid, to=body.to, comment=body.comment)
        outcome: Outcome = self._within(call)
        record = self.store.load(sid)
        if record is None:  # cannot happen after a successful operation; guard the view anyway
            raise _CaseDied(f"session '{sid}' has no checkpoint after '{step.key}'")
        self.view = View(record)
        if (
            outcome.disposition == "turn"
            and outcome.kind == "rejected"
            and (outcome.rejected or "").startswith(REFUSED_START)
        ):
            raise _CaseDied(f"the start was refused: {outcome.rejected}")
        detail = f"{outcome.disposition} → {outcome.kind}" + (f" in '{outcome.state}'" if outcome.state else "")
        return AssertionRecord(kind=step.key, status="passed", step=step.number, detail=detail)


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
