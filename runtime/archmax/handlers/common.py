"""What the four handlers share: one HTTP app over both API Gateway payload versions, error rendering.

Rule source: DESIGN.md §4 (bad input gets a 4xx with a JSON body naming the problem; typed
refusals as 409/400 JSON naming the error class) and CONVENTIONS.md ("The error -> HTTP status
table is one table in ``hosting/``": every status here comes from
:func:`archmax.hosting.http.error_response`).

Failure policy: a caller's mistake (:class:`~archmax.errors.CallerError`) is answered, never
raised, because retrying the same event cannot help. Anything else (a store outage, a model
failure) is raised out of a direct or asynchronous invocation, so Lambda retries it and failed
records are never answered 200 (CONVENTIONS.md "Seen in weaker projects").

Path parameters: Powertools matches routes against the request's raw path (``rawPath`` of an
HTTP API event, ``path`` of a REST one), which keeps the client's percent-encoding, so a route
argument such as ``{id}`` arrives encoded (``x%20y%40z``). :func:`http_app` decodes each one
exactly once, with :func:`urllib.parse.unquote`, before any route sees it; the route then
validates it (``..%2Fetc`` becomes ``../etc`` and is refused with InvalidSessionIdError, 400).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from re import Match
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from archmax.errors import ArchmaxError, CallerError, InvalidEventError
from archmax.hosting.http import error_response
from archmax.session.ids import validate_session_id

if TYPE_CHECKING:
    from archmax.hosting.wiring import Collaborators

Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]
"""A Lambda handler: ``(event, context) -> response``."""

JSON = "application/json"


def json_response(status: int, body: Any) -> Response:
    """A Powertools ``Response`` carrying ``body`` as JSON."""
    return Response(status_code=status, content_type=JSON, body=json.dumps(body, default=str))


def error_body(exc: ArchmaxError) -> tuple[int, dict[str, Any]]:
    """``(status, {error, message, session_id?})`` for an archmax error (hosting's one table)."""
    return error_response(exc)


class _DecodedPathParameters:
    """Mixin for a Powertools resolver: every route argument percent-decoded exactly once.

    Powertools hands a route the groups of its pattern matched over the raw path, still encoded
    (``/sessions/x%20y%40z`` gives ``x%20y%40z``); API Gateway's ``pathParameters`` are decoded.
    This is the one place the handlers decode them, so ``%25`` becomes ``%`` and no more.
    """

    def _convert_matches_into_route_keys(self, match: Match) -> dict[str, str]:
        return {name: unquote(value) for name, value in match.groupdict().items()}


class _HttpResolver(_DecodedPathParameters, APIGatewayHttpResolver):
    """HTTP API (payload v2) resolver with decoded path parameters."""


class _RestResolver(_DecodedPathParameters, APIGatewayRestResolver):
    """REST API (payload v1) resolver with decoded path parameters."""


def is_http_event(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is an API Gateway proxy event (REST v1 or HTTP API v2)."""
    return (
        isinstance(event, Mapping)
        and isinstance(event.get("requestContext"), Mapping)
        and ("routeKey" in event or "httpMethod" in event or "rawPath" in event)
    )


def http_app(register: Callable[[Router], None]) -> Handler:
    """One HTTP entry point serving the same routes to v2 (HTTP API) and v1 (REST) events.

    Args:
        register: Adds the routes to a Powertools router; called once.

    Returns:
        ``(event, context) -> API Gateway proxy response``. Archmax errors become
        ``{error, message, session_id?}`` with the table's status; a request no route matches
        (unknown path, or a known path with another method) is 404 in the same JSON shape.
        Route arguments reach the routes percent-decoded once (see the module docstring).
    """
    router = Router()
    register(router)
    apps: dict[str, Any] = {}
    for version, cls in (("2.0", _HttpResolver), ("1.0", _RestResolver)):
        app = cls()
        app.include_router(router)

        @app.exception_handler(ArchmaxError)
        def _archmax(exc: ArchmaxError) -> Response:
            status, body = error_body(exc)
            return json_response(status, body)

        @app.not_found
        def _missing(_exc: Exception, app: Any = app) -> Response:
            event = app.current_event
            return json_response(
                404,
                {"error": "NotFound", "message": f"no route for {event.http_method} {event.path}"},
            )

        apps[version] = app

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        version = "2.0" if event.get("version") == "2.0" or "routeKey" in event else "1.0"
        return apps[version].resolve(dict(event), context)

    return handle


def direct(call: Callable[[], Any]) -> dict[str, Any]:
    """Run a direct invocation: its JSON result, or ``{error, message, status}`` for a caller's error.

    Raises:
        ArchmaxError: anything that is not a :class:`CallerError` (Lambda retries those).
    """
    try:
        result = call()
    except CallerError as exc:
        status, body = error_body(exc)
        return {"ok": False, "status": status, **body}
    return {"ok": True, **result}


def unrecognised(event: Any, expected: str) -> InvalidEventError:
    """The error for an event no route of a handler understands."""
    keys = ", ".join(sorted(map(str, event))[:8]) if isinstance(event, Mapping) else type(event).__name__
    return InvalidEventError(f"unrecognised event ({keys}): this function takes {expected}")


def refuse(exc: ArchmaxError) -> Callable[[], Any]:
    """A call for :func:`direct` that raises ``exc`` (an event no route understands)."""

    def call() -> Any:
        raise exc

    return call


def is_drain_event(event: Any) -> bool:
    """Whether ``event`` is the waker's asynchronous self-invocation ``{"drain": "<session id>"}``."""
    return isinstance(event, Mapping) and set(event) == {"drain"}


def drain(c: Collaborators, session_id: Any) -> dict[str, Any]:
    """Apply what waits in a session's inbox (the waker's ``{"drain": id}``; DESIGN.md §3 "Inbox").

    Every function whose host can wake a session takes this event: the waker invokes the running
    function itself (``AWS_LAMBDA_FUNCTION_NAME``), so send, deliver and timer all answer it.

    Returns:
        ``{"drained": [{kind, disposition, status} | {error, message}, ...]}`` in arrival order.

    Raises:
        InvalidSessionIdError: ``session_id`` fails BEHAVIOUR.md §4.1 (before any key is built).
    """
    results = c.host.drain(validate_session_id(session_id))
    return {
        "drained": [
            {"error": type(r).__name__, "message": str(r)}
            if isinstance(r, ArchmaxError)
            else {"kind": r.kind, "disposition": r.disposition, "status": str(r.status)}
            for r in results
        ]
    }
