"""What a hosted function says about its work: JSON log lines, EMF metrics and X-Ray subsegments.

Rule source: issue 11 item 5 ("seen failures"); CONVENTIONS.md (Powertools logger, metrics and
tracer in the functions). ``functions/<name>/app.py`` builds one :class:`Telemetry`, hands it to the composition root
(``from_environment(telemetry=...)``: the engine's door, the store and the model are wrapped as
they are assembled, never patched afterwards) and wraps its handler (:meth:`Telemetry.handler`);
``archmax invoke`` runs those same modules.

Log lines (Powertools Logger, JSON on stdout). Every line of an invocation carries ``workflow``,
``correlation_id`` (API Gateway ``requestContext.requestId``, the SES message id, the EventBridge
event id; a direct invoke's ``delivery_id`` else the Lambda request id) and, once known,
``session_id``, ``trigger`` and ``disposition``. One line per outcome:

* ``outcome`` (INFO): a firing applied (send, deliver, reply, decide, recover), with ``operation``,
  ``kind``, ``status``, ``state``, ``parked_channel``, token counts and ``cost_usd``;
* ``accepted`` (INFO): a firing durably inboxed (``delivery_id``, ``duplicate``);
* ``duplicate`` (INFO): a redelivered event (applied the first time; nothing changed);
* ``refused`` (WARNING): a caller's error (``error_class``, ``error``); the event changed nothing;
* ``failed`` (ERROR, with the exception): a model, store or other failure; the inbox item stays
  pending (the sweep re-drives it) or the invocation raises (Lambda retries, then the DLQ);
* ``swept`` (INFO): what a timer sweep did.

The runtime's own loggers (``archmax.*``) write through the same handler and formatter, whatever
``POWERTOOLS_SERVICE_NAME`` is.

Metrics (CloudWatch EMF, namespace ``POWERTOOLS_METRICS_NAMESPACE``, template: ``archmax``). Every
metric has the dimensions ``service`` and ``Workflow``; three add one more:

==================  =========  =================  ==============================================
metric              unit       extra dimension    counts
==================  =========  =================  ==============================================
``Turns``           Count                         operations that ran (an Outcome came back)
``Parks``           Count      ``Channel``        outcomes parked on ``input`` or ``decision``
``Deliveries``      Count                         outcomes of disposition ``deliver``
``Duplicates``      Count                         redelivered events (inbox or session said so)
``Refusals``        Count      ``ErrorClass``     caller errors (bad input, wrong state)
``ModelErrors``     Count      ``ErrorClass``     model failures (truncation included)
``Failures``        Count      ``ErrorClass``     other failures (store outages, crashes)
``InputTokens``     Count                         tokens an outcome spent (``OutputTokens`` too)
``EstimatedCost``   None                          USD, ``archmax.models.pricing`` estimate
``TimerLateness``   Seconds                       ``resume_at`` -> the timer delivery returning
``StaleSessions``   Count                         per sweep: running sessions past their lease,
                                                  or whose re-driven item failed again
``OldestParkAge``   Seconds                       per sweep: age of the workflow's oldest open
                                                  park, so a wait nobody answers is seen
``RefusedMail``     Count                         SES mail refused by its spam/virus verdict
``ColdStart``       Count      ``function_name``  Powertools' cold-start metric
==================  =========  =================  ==============================================

Traces (Powertools Tracer, X-Ray): subsegments ``turn`` (each operation), ``model call`` (each
call of the default model) and ``store commit``, annotated with ``session_id``, ``workflow`` (and
``state`` for model calls). Nothing is created at import: only when an invocation runs.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from archmax import errors
from archmax.errors import ArchmaxError, CallerError, DuplicateDeliveryError, ModelError
from archmax.hosting.coldstart import resume_gc

if TYPE_CHECKING:
    from archmax.engine.claims import Applied
    from archmax.engine.door import Door
    from archmax.engine.runtime import Runtime
    from archmax.inbound.ses import SesMail
    from archmax.session.firing import EngineFiring
    from archmax.session.results import Outcome
    from archmax.stores.base import SessionStore

RUNTIME_LOGGER = "archmax"


def error_class(exc: BaseException | str) -> str:
    """The name a metric and a log line give an error."""
    return exc if isinstance(exc, str) else type(exc).__name__


def family(name: str, exc: BaseException | None = None) -> str:
    """``Refusals``, ``Duplicates``, ``ModelErrors`` or ``Failures``: the metric an error counts in."""
    cls = type(exc) if exc is not None else getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, DuplicateDeliveryError):
        return "Duplicates"
    if isinstance(cls, type) and issubclass(cls, CallerError):
        return "Refusals"
    if isinstance(cls, type) and issubclass(cls, ModelError):
        return "ModelErrors"
    return "Failures"


def _seconds_between(earlier: str, later: datetime) -> float | None:
    try:
        start = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (later - start).total_seconds())


class Telemetry:
    """One function's logger, metrics and tracer, and what it reports (see module docstring).

    Args:
        function: ``send``, ``deliver``, ``resolve`` or ``timer`` (a log key).
        logger: A Powertools ``Logger`` (default: service ``POWERTOOLS_SERVICE_NAME``, else ``archmax``).
        metrics: A Powertools ``Metrics`` (default: namespace ``POWERTOOLS_METRICS_NAMESPACE``, else ``archmax``).
        tracer: A Powertools ``Tracer`` (disabled outside Lambda, as Powertools decides). Default: built
            on first use (the first invocation), patching botocore only, so importing a function
            module neither imports the X-Ray SDK nor patches libraries it does not use (issue 10).
    """

    def __init__(self, function: str, *, logger: Any = None, metrics: Any = None, tracer: Any = None) -> None:
        from aws_lambda_powertools import Logger, Metrics

        self.function = function
        self.logger = logger or Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME") or "archmax")
        self.metrics = metrics or Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "archmax")
        self._tracer = tracer
        self.workflow: str | None = None
        self.clock: Any = None
        self._reported: list[str] = []  # error classes reported during this invocation
        self._due: dict[str, str] = {}  # session id -> resume_at of parks the sweep is about to wake
        route_runtime_logs(self.logger)
        # An invocation that counted nothing (a GET, a quiet sweep) is normal here, not worth a warning.
        warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)

    @property
    def tracer(self) -> Any:
        """The Powertools ``Tracer``: the one given, else built now (first use) patching botocore only."""
        if self._tracer is None:
            from aws_lambda_powertools import Tracer

            self._tracer = Tracer(patch_modules=("botocore",))
        return self._tracer

    # ------------------------------------------------------------------ wiring

    def observe(self, workflow: str, clock: Any) -> None:
        """Name the workflow every line and metric carries, and the clock timer lateness is read from."""
        self.workflow = workflow
        self.clock = clock

    def door(self, door: Door) -> Door:
        """The engine's door as this function calls it: every firing traced and reported (:func:`observed`)."""
        return observed(door, self)

    def store(self, store: SessionStore) -> SessionStore:
        """``store`` with its commits traced (:class:`TracedStore`)."""
        return TracedStore(store, self)

    def model(self, model: Any) -> Any:
        """``model`` with its calls traced (``model call`` subsegments)."""
        return _TracedModel(model, self)

    def due(self, session_id: str, resume_at: str) -> None:
        """The sweep is about to wake ``session_id``'s park, due at ``resume_at`` (for ``TimerLateness``)."""
        self._due[session_id] = resume_at

    def handler(self, handle: Callable[[Mapping[str, Any], Any], Any]) -> Callable[[Mapping[str, Any], Any], Any]:
        """``handle`` wrapped: Lambda context and correlation keys, one line per outcome, metrics flushed.

        A raised exception is logged (unless an operation already did) and raised again, so Lambda
        retries an asynchronous invocation and finally hands it to the function's OnFailure DLQ.
        When an invocation ends, the garbage collector :func:`~archmax.hosting.coldstart.pause_gc`
        held off for the cold start runs again (:func:`~archmax.hosting.coldstart.resume_gc`).
        """

        @functools.wraps(handle)
        def invoke(event: Mapping[str, Any], context: Any) -> Any:
            self._begin(event, context)
            try:
                answer = handle(event, context)
            except ArchmaxError as exc:
                self.report_error(exc)
                raise
            except Exception as exc:
                self.logger.exception("failed", extra={"error_class": error_class(exc), "error": str(exc)})
                self._count(family("", exc), error_class(exc))
                raise
            self._answered(answer)
            return answer

        captured: list[Callable[[Mapping[str, Any], Any], Any]] = []

        @functools.wraps(invoke)
        def traced(event: Mapping[str, Any], context: Any) -> Any:
            if not captured:  # the tracer is built at the first invocation, not at import
                captured.append(self.tracer.capture_lambda_handler(invoke))
            return captured[0](event, context)

        measured = self.metrics.log_metrics(traced, capture_cold_start_metric=True)
        logged = self.logger.inject_lambda_context(measured, clear_state=True)

        @functools.wraps(logged)
        def lambda_handler(event: Mapping[str, Any], context: Any) -> Any:
            try:
                return logged(event, context)
            finally:
                resume_gc()  # a cold start's pause (app.py's first line) ends with the first invocation

        return lambda_handler

    # ------------------------------------------------------------------ invocation

    def _begin(self, event: Mapping[str, Any], context: Any) -> None:
        self._reported.clear()
        self._due.clear()
        self.logger.append_keys(workflow=self.workflow, function=self.function)
        keys = event_keys(event, getattr(context, "aws_request_id", None))
        correlation = keys.pop("correlation_id", None)
        if correlation:
            self.logger.set_correlation_id(correlation)
        if keys:
            self.logger.append_keys(**keys)
        if self.workflow:
            self.metrics.set_default_dimensions(Workflow=self.workflow)

    def _answered(self, answer: Any) -> None:
        if not isinstance(answer, Mapping):
            return
        if "statusCode" in answer:
            status = int(answer.get("statusCode") or 500)
            try:
                body = json.loads(answer.get("body") or "null")
            except ValueError:
                body = None
            if status >= 400 and isinstance(body, Mapping):
                self._report_answer(str(body.get("error", "Error")), str(body.get("message", "")), status)
            elif status == 202 and isinstance(body, Mapping):
                self._accepted(body)
            return
        if answer.get("ok") is False:
            self._report_answer(str(answer.get("error", "Error")), str(answer.get("message", "")), answer.get("status"))
        for record in answer.get("records", []) or []:
            if "error" in record:
                self._report_answer(
                    record["error"], record.get("message", ""), None, message_id=record.get("message_id")
                )
            elif "session_id" in record:
                self._accepted(record)
        if isinstance(answer.get("report"), Mapping):
            self._swept(answer["report"])

    def _accepted(self, body: Mapping[str, Any]) -> None:
        keys = {k: body[k] for k in ("session_id", "disposition") if body.get(k)}
        self.logger.append_keys(**keys)
        self.logger.info(
            "accepted",
            extra={"delivery_id": body.get("delivery_id"), "duplicate": bool(body.get("duplicate")),
                   "message_id": body.get("message_id")},
        )  # fmt: skip
        if body.get("duplicate"):
            self.metrics.add_metric(name="Duplicates", unit="Count", value=1)

    def _swept(self, report: Mapping[str, Any]) -> None:
        # Sessions left running past their lease: taken over by this sweep (``stale``), or re-driven
        # and failed again. A session that stays stuck counts at every sweep, so the alarm sees it.
        stale = report.get("stale") or []
        failing = [
            r for r in report.get("redriven") or []
            if any(family(str(x)) in ("ModelErrors", "Failures") for x in r.get("results", []) if x[:1].isupper())
        ]  # fmt: skip
        self.metrics.add_metric(name="StaleSessions", unit="Count", value=len(stale) + len(failing))
        age = report.get("oldest_park_age_s")
        if isinstance(age, int | float):  # the workflow's oldest open park (BEHAVIOUR.md §5.11)
            self.metrics.add_metric(name="OldestParkAge", unit="Seconds", value=age)
        self.logger.info(
            "swept",
            extra={"due": len(report.get("due") or []), "redriven": len(report.get("redriven") or []),
                   "stale": len(stale), "now": report.get("now")},
        )  # fmt: skip

    # ------------------------------------------------------------------ reporting

    def _report_answer(self, name: str, message: str, status: Any, **extra: Any) -> None:
        if name in self._reported:  # an operation already said it
            self._reported.remove(name)
            return
        kind = family(name)
        fields = {"error_class": name, "error": message, "status": status, **extra}
        if kind == "Duplicates":
            self.logger.info("duplicate", extra=fields)
        elif kind == "Refusals":
            self.logger.warning("refused", extra=fields)
        else:
            self.logger.error("failed", extra=fields)
        self._count(kind, name)

    def report_error(self, exc: ArchmaxError, **extra: Any) -> None:
        """Log and count an error once per invocation (operations and the handler both see it)."""
        if getattr(exc, "_archmax_reported", False):
            return
        exc._archmax_reported = True  # type: ignore[attr-defined]
        name, kind = error_class(exc), family("", exc)
        self._reported.append(name)
        fields = {"error_class": name, "error": str(exc), **extra}
        if getattr(exc, "session_id", None):
            fields["session_id"] = exc.session_id
        if kind == "Duplicates":
            self.logger.info("duplicate", extra=fields)
        elif kind == "Refusals":
            self.logger.warning("refused", extra=fields)
        else:
            self.logger.error("failed", extra=fields, exc_info=exc)
        self._count(kind, name)

    def _count(self, kind: str, name: str) -> None:
        if kind == "Duplicates":
            self.metrics.add_metric(name="Duplicates", unit="Count", value=1)
            return
        self._single(kind, "ErrorClass", name)

    def _single(self, metric: str, dimension: str, value: str) -> None:
        """One metric with its own extra dimension (an EMF blob shares one dimension set)."""
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        dims = {"service": self.metrics.service or "archmax"} | ({"Workflow": self.workflow} if self.workflow else {})
        with single_metric(
            name=metric, unit=MetricUnit.Count, value=1, namespace=self.metrics.namespace, default_dimensions=dims
        ) as one:
            one.add_dimension(name=dimension, value=value)

    def outcome(self, operation: str, outcome: Outcome) -> None:
        """The ``outcome`` line and its metrics for one operation that returned."""
        usage = outcome.usage
        self.logger.append_keys(session_id=outcome.session_id, disposition=outcome.disposition)
        self.logger.info(
            "outcome",
            extra={
                "operation": operation,
                "kind": outcome.kind,
                "status": str(outcome.status),
                "state": outcome.state,
                "parked_channel": outcome.parked_channel,
                "input_tokens": usage.input_tokens if usage else 0,
                "output_tokens": usage.output_tokens if usage else 0,
                "cost_usd": usage.cost_usd if usage else None,
            },
        )
        self.metrics.add_metric(name="Turns", unit="Count", value=1)
        if outcome.disposition == "deliver":
            self.metrics.add_metric(name="Deliveries", unit="Count", value=1)
        if outcome.kind == "parked" and outcome.parked_channel:
            self._single("Parks", "Channel", outcome.parked_channel)
        if usage is not None:
            self.metrics.add_metric(name="InputTokens", unit="Count", value=usage.input_tokens)
            self.metrics.add_metric(name="OutputTokens", unit="Count", value=usage.output_tokens)
            if usage.cost_usd is not None:
                self.metrics.add_metric(name="EstimatedCost", unit="None", value=usage.cost_usd)

    def timer_delivered(self, session_id: str) -> None:
        """``TimerLateness``: seconds from the park's ``resume_at`` to its timer delivery returning."""
        resume_at = self._due.pop(session_id, None)
        if resume_at is None or self.clock is None:
            return
        late = _seconds_between(resume_at, self.clock.now())
        if late is not None:
            self.metrics.add_metric(name="TimerLateness", unit="Seconds", value=late)
            self.logger.info("timer delivered", extra={"resume_at": resume_at, "late_s": late})

    def refused_mail(self, mail: SesMail) -> None:
        """An SES mail refused by its verdicts: a warning line and ``RefusedMail``."""
        self.logger.warning("mail refused", extra={"message_id": mail.message_id, "reason": mail.refused})
        self.metrics.add_metric(name="RefusedMail", unit="Count", value=1)

    @contextmanager
    def subsegment(self, name: str, session_id: str | None, **annotations: Any) -> Iterator[None]:
        """An X-Ray subsegment annotated with the session id (a no-op while tracing is disabled)."""
        with self.tracer.provider.in_subsegment(name) as sub:
            if session_id:
                sub.put_annotation("session_id", session_id)
            if self.workflow:
                sub.put_annotation("workflow", self.workflow)
            for key, value in annotations.items():
                if value is not None:
                    sub.put_annotation(key, value)
            yield


def event_keys(event: Any, request_id: str | None = None) -> dict[str, Any]:
    """The log keys an event gives away before any handler reads it: correlation id, session id, trigger.

    Args:
        event: The invocation's event (API Gateway, SES, EventBridge, ``{"drain": id}``, direct).
        request_id: The Lambda request id, the correlation id of a direct invoke without a delivery id.

    Returns:
        ``{correlation_id?, session_id?, trigger?}``; values are the event's own (untrusted: logged
        as data, never used as keys).
    """
    if not isinstance(event, Mapping):
        return {"correlation_id": request_id} if request_id else {}
    keys: dict[str, Any] = {}
    context = event.get("requestContext")
    path_parameters = event.get("pathParameters")
    params: Mapping[str, Any] = path_parameters if isinstance(path_parameters, Mapping) else {}
    records = event.get("Records")
    if isinstance(context, Mapping):  # API Gateway
        keys["correlation_id"] = context.get("requestId")
        keys["session_id"] = params.get("id")
        keys["trigger"] = params.get("trigger")
    elif isinstance(records, list) and records and isinstance(records[0], Mapping) and "ses" in records[0]:
        mail = records[0].get("ses", {}).get("mail", {}) if isinstance(records[0].get("ses"), Mapping) else {}
        keys["correlation_id"] = mail.get("messageId") if isinstance(mail, Mapping) else None
    elif "detail-type" in event or event.get("source") == "aws.events":
        keys["correlation_id"] = event.get("id")
        keys["trigger"] = "timer"
    else:
        keys["session_id"] = event.get("drain") or event.get("session_id")
        keys["trigger"] = event.get("trigger")
        keys["correlation_id"] = event.get("delivery_id") or request_id
    return {k: v for k, v in keys.items() if isinstance(v, str) and v}


def route_runtime_logs(logger: Any) -> None:
    """Send the runtime's loggers (``archmax.*``) through ``logger``'s handler and JSON formatter.

    Powertools names its Python logger after the service, so with ``POWERTOOLS_SERVICE_NAME``
    other than ``archmax`` the runtime's warnings would otherwise go unformatted (or nowhere).
    """
    runtime = logging.getLogger(RUNTIME_LOGGER)
    source = logging.getLogger(logger.name) if hasattr(logger, "name") else None
    if source is None or source is runtime:
        return
    for stale in [h for h in runtime.handlers if getattr(h, "_archmax_routed", False)]:
        runtime.removeHandler(stale)  # the handler of an earlier Telemetry (another service name)
    for handler in source.handlers:
        handler._archmax_routed = True  # type: ignore[attr-defined]
        runtime.addHandler(handler)
    runtime.setLevel(source.level or logging.INFO)
    runtime.propagate = False


def observed(door: Door, telemetry: Telemetry) -> Door:
    """``door`` (the engine's :func:`~archmax.engine.door.apply`) with every firing in a ``turn`` subsegment, then reported.

    The log keys (``session_id``, ``trigger``) are set before the firing runs; a refusal is reported
    once (:meth:`Telemetry.report_error`), an outcome gets its line and metrics, a ``timer`` delivery
    its lateness.
    """

    @functools.wraps(door)
    def observe(rt: Runtime, firing: EngineFiring) -> Applied:
        t = telemetry
        operation = firing.kind
        session_id = firing.session_id
        trigger = getattr(firing, "trigger", None)
        if session_id:
            t.logger.append_keys(session_id=session_id)
        if trigger:
            t.logger.append_keys(trigger=trigger)
        with t.subsegment("turn", session_id, operation=operation, trigger=trigger):
            try:
                applied = door(rt, firing)
            except ArchmaxError as exc:
                t.report_error(exc, operation=operation)
                raise
        if applied.outcome is not None:
            t.outcome(operation, applied.outcome)
            if trigger == "timer" and session_id:
                t.timer_delivered(session_id)
        return applied

    return observe


class TracedStore:
    """A session store whose ``commit`` runs in a ``store commit`` subsegment (built around the store at assembly).

    The protocol's methods are the wrapped store's; members beyond it (an ``AwsStore``'s warm reads
    and capability flags) are looked up on the wrapped store until the port declares them.
    """

    def __init__(self, inner: SessionStore, telemetry: Telemetry) -> None:
        self._inner = inner
        self._telemetry = telemetry

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def commit(self, session_id: str, *args: Any, **kwargs: Any) -> Any:
        """``SessionStore.commit`` in a ``store commit`` subsegment annotated with the session id."""
        with self._telemetry.subsegment("store commit", session_id):
            return self._inner.commit(session_id, *args, **kwargs)


class _TracedModel:
    """A model whose every call runs in a ``model call`` subsegment."""

    def __init__(self, inner: Any, telemetry: Telemetry) -> None:
        self._inner = inner
        self._telemetry = telemetry

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def complete(self, request: Any) -> Any:
        with self._telemetry.subsegment("model call", request.session_id, state=request.state):
            return self._inner.complete(request)


__all__ = ["Telemetry", "TracedStore", "error_class", "event_keys", "family", "observed", "route_runtime_logs"]
