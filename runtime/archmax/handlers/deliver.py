"""The deliver handler: resume a session parked awaiting input, now, or refuse with a typed error.

Rule source: DESIGN.md §4 (deliver: ``POST /sessions/{id}/deliveries`` and direct invoke; typed
refusals as 409/400 JSON naming the error class) and BEHAVIOUR.md §3.5. Deliveries are never
inboxed: a delivery that finds the session not parked is refused, which is what makes a double
fire safe.

Direct invoke: ``{"session_id", "trigger", "variables"?, "message"?, "delivery_id"?}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from archmax.errors import InvalidEventError
from archmax.handlers.common import Handler, direct, http_app, is_http_event, json_response
from archmax.inbound.apigw import delivery_firing
from archmax.session.results import Outcome

if TYPE_CHECKING:
    from archmax.hosting.wiring import Collaborators


class DirectDelivery(BaseModel):
    """The payload of a direct ``lambda:Invoke`` of the deliver function."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    trigger: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    message: str | None = None
    delivery_id: str | None = None


def outcome_view(outcome: Outcome) -> dict[str, Any]:
    """An :class:`Outcome` as JSON without the transcript and trail (they can be large; ``GET`` has the rest)."""
    return outcome.model_dump(mode="json", exclude={"messages", "trail"}, exclude_none=True)


def _direct(c: Collaborators, event: Mapping[str, Any]) -> dict[str, Any]:
    try:
        call = DirectDelivery.model_validate(dict(event))
    except ValidationError as exc:
        raise InvalidEventError(f"a direct delivery is not usable: {exc.errors()[0]['msg']}") from exc
    outcome = c.host.deliver_now(
        call.session_id,
        trigger=call.trigger,
        variables=call.variables,
        message=call.message,
        delivery_id=call.delivery_id,
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
            outcome = c.host.deliver_now(
                session_id,
                trigger=firing.trigger,
                variables=firing.variables,
                message=firing.message,
                delivery_id=firing.delivery_id,
            )
            return json_response(200, outcome_view(outcome))

    http = http_app(routes)

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if is_http_event(event):
            return http(event, context)
        return direct(lambda: _direct(c, event))

    return handle
