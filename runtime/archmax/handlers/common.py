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

Powertools' event handler is imported when the first API Gateway event arrives, not when a handler
module loads (issue 10, cold import): a container that only drains, or serves direct invokes, SES
or EventBridge events, never pays for HTTP routing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache, wraps
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlencode

from archmax.errors import ArchmaxError, CallerError, InvalidEventError, ModelError, StoreError
from archmax.hosting.http import error_response
from archmax.session.ids import parse_session_id

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import Response
    from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Router

    from archmax.hosting.wiring import Collaborators

Handler = Callable[[Mapping[str, Any], Any], dict[str, Any]]
"""A Lambda handler: ``(event, context) -> response``."""

JSON = "application/json"


def json_response(status: int, body: Any) -> Response:
    """A Powertools ``Response`` carrying ``body`` as JSON."""
    from aws_lambda_powertools.event_handler import Response

    return Response(status_code=status, content_type=JSON, body=json.dumps(body, default=str))


def error_body(exc: ArchmaxError) -> tuple[int, dict[str, Any]]:
    """``(status, {error, message, session_id?})`` for an archmax error (hosting's one table)."""
    return error_response(exc)


def _decoding(route: Callable[..., Any]) -> Callable[..., Any]:
    """``route`` called with every route argument percent-decoded exactly once.

    Powertools matches routes over the raw path (``/sessions/x%20y%40z`` gives ``x%20y%40z``) and
    offers no option to decode what it matched; API Gateway's ``pathParameters`` are decoded. This
    is the one place the handlers decode them, so ``%25`` becomes ``%`` and no more.
    """

    @wraps(route)  # keeps the name and signature Powertools reads
    def decoded(**route_args: str) -> Any:
        return route(**{name: unquote(value) for name, value in route_args.items()})

    return decoded


@cache
def _decoding_router() -> type[Router]:
    """A Powertools ``Router`` whose routes receive decoded arguments, through its public ``route``."""
    from aws_lambda_powertools.event_handler.api_gateway import Router

    class DecodingRouter(Router):
        """Registers each route wrapped by :func:`_decoding` (``get``/``post``/... all go through ``route``)."""

        def route(self, rule: str, method: Any, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
            register = super().route(rule, method, *args, **kwargs)

            def register_decoding(func: Any) -> Any:
                register(_decoding(func))
                return func

            return register_decoding

    return DecodingRouter


@cache
def _resolver_classes() -> dict[str, type[ApiGatewayResolver]]:
    """Payload version (``"2.0"``, ``"1.0"``) -> the Powertools resolver class for it."""
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver

    return {"2.0": APIGatewayHttpResolver, "1.0": APIGatewayRestResolver}


def is_http_event(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is an API Gateway proxy event (REST v1 or HTTP API v2)."""
    return (
        isinstance(event, Mapping)
        and isinstance(event.get("requestContext"), Mapping)
        and ("routeKey" in event or "httpMethod" in event or "rawPath" in event)
    )


def _is_v2(event: Mapping[str, Any]) -> bool:
    """Whether an API Gateway event uses the HTTP API payload v2 (``version: "2.0"`` or a ``routeKey``)."""
    return event.get("version") == "2.0" or "routeKey" in event


def envelope_problem(event: Mapping[str, Any]) -> str | None:
    """What makes an API Gateway-shaped event unreadable, or ``None`` when its envelope is sound.

    API Gateway always sends strings where these fields are present; a forged direct invoke may not,
    and Powertools then fails deep inside routing (``KeyError``, ``TypeError``), sometimes after the
    route already wrote (its response compression reads the headers last). Only the fields the
    handlers and Powertools read are checked: the method and path, ``headers`` (string values, or
    ``null``; a number is read as its text, as some fixtures send ``Content-Length: 15``),
    ``multiValueHeaders`` (lists of strings, or ``null``), ``body`` (a string or ``null``),
    ``isBase64Encoded`` (a boolean or ``null``).
    """
    return _route_problem(event) or _headers_problem(event) or _payload_problem(event)


def _route_problem(event: Mapping[str, Any]) -> str | None:
    """The method and path fields of either payload version."""
    if not _is_v2(event):
        if not isinstance(event.get("httpMethod"), str) or not isinstance(event.get("path"), str):
            return "httpMethod and path must be strings"
        return None
    context = event.get("requestContext")
    context = context if isinstance(context, Mapping) else {}
    http = context.get("http")
    if not isinstance(http, Mapping) or not isinstance(http.get("method"), str):
        return "requestContext.http.method must be a string"
    if not isinstance(event.get("rawPath"), str):
        return "rawPath must be a string"
    if not isinstance(context.get("stage"), str):  # Powertools joins it to the path (HTTP API always sends it)
        return "requestContext.stage must be a string"
    return None


def _headers_problem(event: Mapping[str, Any]) -> str | None:
    """``headers`` (text or numbers) and ``multiValueHeaders`` (lists of text), each ``null`` or absent."""
    headers = event.get("headers")
    if headers is not None and not (
        isinstance(headers, Mapping)
        and all(isinstance(k, str) and isinstance(v, str | int | float) for k, v in headers.items())
    ):
        return "headers must map names to strings"
    multi = event.get("multiValueHeaders")
    if multi is not None and not (
        isinstance(multi, Mapping) and all(isinstance(k, str) and _is_text_list(v) for k, v in multi.items())
    ):
        return "multiValueHeaders must map names to lists of strings"
    return None


def _is_text_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _payload_problem(event: Mapping[str, Any]) -> str | None:
    """``body`` (text) and ``isBase64Encoded`` (a boolean), each ``null`` or absent."""
    if event.get("body") is not None and not isinstance(event.get("body"), str):
        return "body must be a string"
    if event.get("isBase64Encoded") is not None and not isinstance(event.get("isBase64Encoded"), bool):
        return "isBase64Encoded must be a boolean"
    return None


def _envelope_refusal(event: Mapping[str, Any], problem: str) -> dict[str, Any]:
    """The 400 proxy response (v2 or v1 shape) for an event whose envelope cannot be routed."""
    exc = InvalidEventError(f"not a usable API Gateway request: {problem}")
    status, payload = error_body(exc)
    answer: dict[str, Any] = {"statusCode": status, "isBase64Encoded": False, "body": json.dumps(payload)}
    if _is_v2(event):
        answer["headers"] = {"Content-Type": JSON}
    else:
        answer["multiValueHeaders"] = {"Content-Type": [JSON]}
    return answer


def http_app(register: Callable[[Router], None]) -> Handler:
    """One HTTP entry point serving the same routes to v2 (HTTP API) and v1 (REST) events.

    Args:
        register: Adds the routes to a Powertools router; called once, on the first HTTP event.

    Returns:
        ``(event, context) -> API Gateway proxy response``. Archmax errors become
        ``{error, message, session_id?}`` with the table's status; a request no route matches
        (unknown path, or a known path with another method) is 404 in the same JSON shape.
        Route arguments reach the routes percent-decoded once (see the module docstring). An
        event whose envelope is malformed (:func:`envelope_problem`) is a 400 before any route runs.
    """
    apps: dict[str, Any] = {}

    def build() -> None:
        router = _decoding_router()()
        register(router)
        for version, cls in _resolver_classes().items():
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
        problem = envelope_problem(event)
        if problem is not None:
            return _envelope_refusal(event, problem)  # nothing routed, nothing written
        if not apps:
            build()  # the first HTTP event: Powertools' routing is loaded now (see the module docstring)
        version = "2.0" if _is_v2(event) else "1.0"
        event = dict(event)
        if event.get("headers"):
            event["headers"] = {k: v if isinstance(v, str) else str(v) for k, v in event["headers"].items()}
        return apps[version].resolve(event, context)

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
        ModelError, StoreError: an item could not be applied now (it stays pending). Raised, not
            answered, so the asynchronous invocation fails: Lambda retries it, then hands it to the
            function's OnFailure DLQ, and the sweep re-drives the item meanwhile.
    """
    results = c.host.drain(parse_session_id(session_id))
    for result in results:
        if isinstance(result, ModelError | StoreError):
            raise result
    return {
        "drained": [
            {"error": type(r).__name__, "message": str(r)}
            if isinstance(r, ArchmaxError)
            else {"kind": r.kind, "disposition": r.disposition, "status": str(r.status)}
            for r in results
        ]
    }


def base_path(event: Any) -> str:
    """The path prefix links need: ``""`` on the ``$default`` stage, else ``/<stage>``."""
    context = event.get("requestContext") if isinstance(event, Mapping) else None
    stage = context.get("stage") if isinstance(context, Mapping) else None
    return "" if not stage or stage == "$default" else f"/{quote(str(stage), safe='')}"


def transcript_location(base: str, session_id: str, delivery_id: str) -> str:
    """The URL a webhook's ``202`` names in ``Location``: the session's transcript, asking after that delivery."""
    return f"{base}/sessions/{quote(session_id, safe='')}/transcript?{urlencode({'delivery_id': delivery_id})}"
