"""The resolve handler: what a firing would do, and session summaries. It never runs a turn.

Rule source: DESIGN.md §4 (resolve: ``GET /sessions/{id}``, ``POST /resolve``, direct invoke) and
BEHAVIOUR.md §3.8 (``resolve_session`` writes nothing), §3.11 (``SessionSummary``).

``POST /resolve`` body and direct invoke: ``{"trigger"?, "variables"?, "session_id"?,
"session_path"?}``; a direct invoke with ``"action": "get"`` and a ``session_id`` answers
``{"session": <SessionSummary> | null}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from archmax.errors import InvalidEventError
from archmax.handlers import views
from archmax.handlers.common import Handler, direct, http_app, is_http_event, json_response
from archmax.inbound.apigw import json_object
from archmax.session.ids import validate_session_id

if TYPE_CHECKING:
    from archmax.hosting.wiring import Collaborators


class ResolveCall(BaseModel):
    """What to resolve (BEHAVIOUR.md §3.8 arguments) or, with ``action: get``, which summary to read."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    action: Literal["resolve", "get"] = "resolve"
    trigger: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = None
    session_path: str | None = None


def _call(data: Any) -> ResolveCall:
    if not isinstance(data, Mapping):  # a direct invoke's payload may be any JSON value
        raise InvalidEventError(f"a resolve request must be a JSON object, not {type(data).__name__}")
    try:
        return ResolveCall.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise InvalidEventError(f"a resolve request is not usable: {where}: {first['msg']}") from exc


def summary(c: Collaborators, session_id: str) -> tuple[int, dict[str, Any]]:
    """``(200, SessionSummary)`` or ``(404, {error: "NotFound", ...})``.

    Raises:
        InvalidSessionIdError: the id fails BEHAVIOUR.md §4.1 (checked before any key is built).
    """
    validate_session_id(session_id)
    found = c.agent.sessions.get(session_id)
    if found is None:
        return 404, {"error": "NotFound", "message": f"no session '{session_id}'", "session_id": session_id}
    return 200, found.model_dump(mode="json", exclude_none=True)


def resolution(c: Collaborators, call: ResolveCall) -> dict[str, Any]:
    """The :class:`~archmax.session.results.Resolution` of a firing, as JSON."""
    resolved = c.agent.workflow.resolve_session(
        trigger=call.trigger,
        variables=call.variables,
        session_id=call.session_id,
        session_path=call.session_path,
    )
    return resolved.model_dump(mode="json", exclude_none=True)


def _direct(c: Collaborators, event: Mapping[str, Any]) -> dict[str, Any]:
    call = _call(event)
    if call.action == "get":
        if call.session_id is None:
            raise InvalidEventError("action 'get' needs a session_id")
        status, body = summary(c, call.session_id)
        return {"session": body if status == 200 else None}
    return resolution(c, call)


def build(c: Collaborators) -> Handler:
    """The resolve function's handler (see module docstring)."""

    def routes(router: Any) -> None:
        @router.get("/sessions/<session_id>")
        def get_session(session_id: str) -> Any:
            return json_response(*summary(c, session_id))

        @router.post("/resolve")
        def post_resolve() -> Any:
            call = _call(json_object(router.current_event))
            if call.action != "resolve":
                raise InvalidEventError("POST /resolve only resolves; read a session with GET /sessions/{id}")
            return json_response(200, resolution(c, call))

        views.register(router, c)  # GET /sessions, /sessions/{id}/view|transcript|trail (issue 15)

    http = http_app(routes)

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if is_http_event(event):
            return http(event, context)
        return direct(lambda: _direct(c, event))

    return handle
