"""The deliver handler: resolve a park now (a delivery or a person's decision), or refuse with a typed error.

Rule source: DESIGN.md §4 (deliver: ``POST /sessions/{id}/deliveries`` and direct invoke; typed
refusals as 409/400 JSON naming the error class), BEHAVIOUR.md §3.5 (deliver) and §3.7 (decide).
Deliveries and decisions are never inboxed: one that finds the session not parked is refused,
which is what makes a double fire safe.

* ``POST /sessions/{id}/deliveries`` ``{"trigger", "variables"?, "message"?}`` -> ``deliver``;
* ``POST /sessions/{id}/decisions`` ``{"to", "comment"?}`` -> ``decide`` (a session parked at a
  human state; a message to such a park already replies through ``POST /sessions/{id}/messages``);
* direct invoke ``{"session_id", "trigger", "variables"?, "message"?, "delivery_id"?}``;
* ``{"drain": "<session id>"}``: the waker's asynchronous self-invocation (see
  :func:`archmax.handlers.common.drain`).

Both routes answer ``200`` with the Outcome (without transcript and trail); refusals use hosting's
table: ``SessionNotAwaitingInputError`` / ``SessionNotParkedError`` 409, ``InvalidDecisionTargetError``
and ``InvalidSessionIdError`` 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from archmax.errors import InvalidEventError, MisspeltTriggerError
from archmax.handlers.common import (
    Handler,
    direct,
    drain,
    http_app,
    is_drain_event,
    is_http_event,
    json_response,
)
from archmax.inbound.apigw import delivery_firing, json_object
from archmax.inbound.quarantine import listing, release
from archmax.session.ids import validate_session_id
from archmax.session.results import Outcome

if TYPE_CHECKING:
    from archmax.hosting.wiring import Collaborators


class DirectDelivery(BaseModel):
    """The payload of a direct ``lambda:Invoke`` of the deliver function."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    session_id: str
    trigger: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    message: str | None = None
    delivery_id: str | None = None
    park_id: str | None = None
    """The park this delivery answers (BEHAVIOUR.md §5.11); a stale one is refused, nothing changed."""


class DecisionBody(BaseModel):
    """The JSON body of ``POST /sessions/{id}/decisions`` (``agent.workflow.decide``, BEHAVIOUR.md §3.7)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    to: str | None = None
    """The transition's target state; a missing one is refused by ``decide`` with the valid targets listed."""
    comment: str | None = None
    """The person's note, recorded in the trail and the ``[decision]`` note; blank counts as none."""
    park_id: str | None = None
    """The park this decision answers (``Outcome.park_id``, BEHAVIOUR.md §5.11); a stale one is a 409."""


def decision_body(data: dict[str, Any]) -> DecisionBody:
    """Validate a decision body.

    Raises:
        InvalidEventError: unknown keys or wrong types (400), naming each problem.
    """
    try:
        return DecisionBody.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors())
        raise InvalidEventError(f"the decision body is not usable: {problems}") from exc


def refuse_misspelt_trigger(c: Collaborators, trigger: str | None, session_id: str) -> None:
    """Refuse a delivery whose trigger is a near miss of a known one, before anything is read or written.

    Any other trigger is delivered as given (§3.5); the near miss is a typo that would be locked into
    the session's ``trigger`` variable (issue 25 item 4). Answered 400 (``MisspeltTriggerError``).
    """
    closest = c.agent.spec.near_miss_trigger(trigger) if trigger else None
    if closest is not None and trigger is not None:
        raise MisspeltTriggerError(trigger, c.agent.spec.declared_triggers(), closest, session_id=session_id)


def outcome_view(outcome: Outcome) -> dict[str, Any]:
    """An :class:`Outcome` as JSON without the transcript and trail (they can be large; ``GET`` has the rest)."""
    return outcome.model_dump(mode="json", exclude={"messages", "trail"}, exclude_none=True)


def _direct(c: Collaborators, event: Any) -> dict[str, Any]:
    if not isinstance(event, Mapping):  # a direct invoke's payload may be any JSON value
        raise InvalidEventError(f"a direct delivery must be a JSON object, not {type(event).__name__}")
    try:
        call = DirectDelivery.model_validate(dict(event))
    except ValidationError as exc:
        raise InvalidEventError(f"a direct delivery is not usable: {exc.errors()[0]['msg']}") from exc
    refuse_misspelt_trigger(c, call.trigger, call.session_id)
    outcome = c.host.deliver_now(
        call.session_id,
        trigger=call.trigger,
        variables=call.variables,
        message=call.message,
        delivery_id=call.delivery_id,
        park_id=call.park_id,
    )
    return outcome_view(outcome)


def build(c: Collaborators) -> Handler:
    """The deliver function's handler (see module docstring).

    Raises:
        ArchmaxError: infrastructure and model errors (Lambda retries); caller errors are answered.
    """

    def routes(router: Any) -> None:
        @router.post("/sessions/<session_id>/deliveries")
        def post_delivery(session_id: str) -> Any:
            firing = delivery_firing(router.current_event, session_id=session_id)
            refuse_misspelt_trigger(c, firing.trigger, session_id)
            outcome = c.host.deliver_now(
                session_id,
                trigger=firing.trigger,
                variables=firing.variables,
                message=firing.message,
                delivery_id=firing.delivery_id,
                park_id=firing.park_id,
            )
            return json_response(200, outcome_view(outcome))

        @router.get("/sessions/<session_id>/quarantine")
        def get_quarantine(session_id: str) -> Any:
            sid = validate_session_id(session_id)
            return json_response(
                200, {"session_id": sid, "mails": [m.model_dump(mode="json") for m in listing(c.agent.store, sid)]}
            )

        @router.post("/sessions/<session_id>/quarantine/<delivery_id>/release")
        def post_release(session_id: str, delivery_id: str) -> Any:
            from archmax.inbound.email import parse_email  # only a quarantine release parses mail

            def parse(raw: bytes, trigger: str | None) -> Any:
                return parse_email(raw, trigger=trigger, caps=c.caps)

            return json_response(200, release(c.host, session_id, delivery_id, parse=parse))

        @router.post("/sessions/<session_id>/decisions")
        def post_decision(session_id: str) -> Any:
            body = decision_body(json_object(router.current_event))
            outcome = c.host.decide_now(session_id, to=body.to, comment=body.comment, park_id=body.park_id)
            return json_response(200, outcome_view(outcome))

    http = http_app(routes)

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if is_http_event(event):
            return http(event, context)
        if is_drain_event(event):
            return direct(lambda: drain(c, event["drain"]))
        return direct(lambda: _direct(c, event))

    return handle
