"""Read-only HTTP views of sessions, served by the resolve function and ``archmax serve``.

Rule source: issue 15 items 1 and 3; BEHAVIOUR.md §9.5 (artifacts are views of the checkpoint),
§3.10/§3.11 (``SessionSummary``), §7 (notes are runtime events, not tool calls). Routes:

* ``GET /sessions/{id}/view``: the session page (HTML, no script, CSP header).
* ``GET /sessions/{id}/transcript[?delivery_id=...]``: ``{session_id, status, wait?, park_id?, exit?,
  reply, conversation: [...]}`` (``park_id`` while parked, §5.11); with ``delivery_id``, ``delivery: {id, applied, answered}`` says whether
  that firing has been applied yet, and whether the turn it opened or resumed has ended (parked,
  completed or failed), so ``reply`` is its answer; a turn that stopped on a model outage stays
  unanswered until the sweep finishes it (the poll a webhook's ``Location`` points at).
* ``GET /sessions/{id}/trail``: ``{session_id, workflow, steps: [{to, kind, reason?, at}], timeline}``.
* ``GET /sessions[?status=&workflow=&parked_before=&limit=&after=]``: ``{sessions: [summary + view],
  next?}``, sorted by id; ``after`` is the last id of the previous page.
* ``GET /`` (``archmax serve`` only): the same list as HTML.

A missing session is 404 ``NotFound``; a bad id 400 (checked before any key is built); a bad filter
400 ``InvalidEventError`` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from archmax.engine.deliveries import applied_in_pair
from archmax.errors import InvalidEventError
from archmax.handlers.common import base_path, json_response
from archmax.session.ids import parent_session_id, validate_session_id
from archmax.session.records import PARKED_STATUSES, Checkpoint, SessionStatus
from archmax.session.results import summary_of

# archmax.views (the story, the HTML page) loads with the first view asked for, not with the resolve
# function: a session's summary or a firing's resolution does without it (issue 24 goal 4, cold start).

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import Response

    from archmax.hosting.wiring import Collaborators

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
_STATUSES = {s.value for s in SessionStatus}


def html_response(status: int, body: str) -> Response:
    """An HTML response that nothing can turn into a script or a request elsewhere."""
    from aws_lambda_powertools.event_handler import Response

    from archmax.views.page import CSP

    return Response(
        status_code=status,
        content_type="text/html; charset=utf-8",
        body=body,
        headers={"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"},
    )


def _not_found(session_id: str) -> Response:
    return json_response(
        404, {"error": "NotFound", "message": f"session '{session_id}' does not exist", "session_id": session_id}
    )


def _record(c: Collaborators, session_id: str) -> Checkpoint | None:
    validate_session_id(session_id)  # InvalidSessionIdError → 400, before any key is built
    return c.agent.store.load(session_id)


def _workflow_of(c: Collaborators, record: Checkpoint) -> Any:
    """The served workflow when the session belongs to it, else ``None`` (no graph: not this workflow's)."""
    spec = c.agent.spec
    return spec if spec.slug == record.workflow else None


def transcript(record: Checkpoint, workflow: Any, delivery: tuple[str, bool] | None = None) -> dict[str, Any]:
    """The transcript view: the conversation as a person reads it, the wait or exit, the last reply.

    ``delivery`` is ``(delivery id, applied)`` when the caller asked after one firing. It is
    ``answered`` once applied and its turn has ended: the session is not ``running``, or a later
    firing was applied since (the newest applied id is another one).
    """
    from archmax.views.story import story_of

    story = story_of(record, workflow)
    said = [e for e in story.conversation if e.role == "agent" and e.text.strip()]
    body: dict[str, Any] = {
        "session_id": record.session_id,
        "workflow": record.workflow,
        "status": story.status,
        "reply": said[-1].text if said else "",
        "conversation": [e.model_dump(mode="json", exclude_none=True) for e in story.conversation],
    }
    if story.wait is not None:
        body["wait"] = story.wait.model_dump(mode="json", exclude_none=True)
    if record.park_id is not None and record.status in PARKED_STATUSES:
        body["park_id"] = record.park_id  # what an answer to this park may name (BEHAVIOUR.md §5.11)
    if story.exit is not None:
        body["exit"] = story.exit.model_dump(mode="json", exclude_none=True)
    if delivery is not None:
        delivery_id, applied = delivery
        in_turn = record.status == SessionStatus.RUNNING and record.delivery_ids[-1:] == [delivery_id]
        body["delivery"] = {"id": delivery_id, "applied": applied, "answered": applied and not in_turn}
    return body


def trail(record: Checkpoint, workflow: Any) -> dict[str, Any]:
    """The trail view: every step with an ISO-8601 time, and the derived timeline."""
    from archmax.views.story import instant_of_ms, story_of

    story = story_of(record, workflow)
    steps = [
        {**s.model_dump(mode="json", exclude_none=True, exclude={"ts", "at_message"}), "at": instant_of_ms(s.ts)}
        for s in record.trail
    ]
    return {
        "session_id": record.session_id,
        "workflow": record.workflow,
        "steps": steps,
        "timeline": [e.model_dump(mode="json", exclude_none=True) for e in story.timeline],
    }


def _filters(params: Mapping[str, str]) -> dict[str, str]:
    known = {"status", "workflow", "parked_before", "limit", "after"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise InvalidEventError(f"unknown query parameter '{unknown[0]}'; filters: {', '.join(sorted(known))}")
    status = params.get("status")
    if status is not None and status not in _STATUSES:
        raise InvalidEventError(f"status '{status}' is not one of: {', '.join(sorted(_STATUSES))}")
    limit = params.get("limit")
    if limit is not None and not (limit.isdigit() and 1 <= int(limit) <= MAX_LIMIT):
        raise InvalidEventError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    before = params.get("parked_before")
    if before is not None:
        from archmax.clock import format_instant, parse_instant

        try:
            params = {**params, "parked_before": format_instant(parse_instant(before))}
        except ValueError:
            raise InvalidEventError(f"parked_before '{before}' is not an ISO-8601 instant")
    after = params.get("after")
    if after is not None:
        validate_session_id(after)
    return dict(params)


def _parked_since(record: Checkpoint) -> str | None:
    if record.status == SessionStatus.AWAITING_INPUT and record.pending_input is not None:
        return record.pending_input.parked_at
    if record.status == SessionStatus.AWAITING_DECISION and record.pending_decision is not None:
        return record.pending_decision.created_at
    return None


def listing(c: Collaborators, params: Mapping[str, str], base: str) -> dict[str, Any]:
    """One page of the session list (filters in the module docstring).

    Raises:
        InvalidEventError: an unknown parameter or a bad value (400).
        SessionStoreCapabilityError: the store cannot list.
    """
    from archmax.views.page import session_href

    f = _filters(params)
    limit = int(f.get("limit", DEFAULT_LIMIT))
    store = c.agent.store
    if not store.capabilities.list:
        from archmax.errors import SessionStoreCapabilityError

        raise SessionStoreCapabilityError("list")
    now = c.agent.runtime.now()
    rows: list[dict[str, Any]] = []
    more = False
    for sid in sorted(store.list()):
        if "after" in f and sid <= f["after"]:
            continue
        head = store.head(sid)  # cheap filters first: no checkpoint body read for a session filtered out
        if head is None or ("status" in f and str(head.status) != f["status"]):
            continue
        if "workflow" in f and head.workflow != f["workflow"]:
            continue
        record = store.load(sid)
        if record is None:
            continue
        if "parked_before" in f:
            since = _parked_since(record)
            if since is None or since >= f["parked_before"]:
                continue
        if len(rows) == limit:
            more = True
            break
        summary = summary_of(record, parent_session_id(sid), now).model_dump(mode="json", exclude_none=True)
        rows.append({**summary, "view": session_href(base, sid)})
    body: dict[str, Any] = {"sessions": rows}
    if more:
        query = {k: v for k, v in f.items() if k != "after"} | {"after": rows[-1]["session_id"]}
        body["next"] = f"{base}/sessions?{urlencode(query)}"
    return body


def register(router: Any, c: Collaborators) -> None:
    """Add the view routes to a Powertools router (``GET /`` too: only ``archmax serve`` routes it)."""

    def params() -> dict[str, str]:
        return dict(router.current_event.query_string_parameters or {})

    @router.get("/sessions/<session_id>/view")
    def get_view(session_id: str) -> Any:
        record = _record(c, session_id)
        if record is None:
            return _not_found(session_id)
        from archmax.views.page import render_page
        from archmax.views.story import story_of

        return html_response(200, render_page(story_of(record, _workflow_of(c, record), store=c.agent.store)))

    @router.get("/sessions/<session_id>/transcript")
    def get_transcript(session_id: str) -> Any:
        record = _record(c, session_id)
        if record is None:
            return _not_found(session_id)
        delivery_id = params().get("delivery_id")
        # applied once in the checkpoint's window of ids, or (older) as a marker file, or by the child a
        # caller's park delegates to (a reply it answered for the pair, issue 22; engine/deliveries)
        asked = (delivery_id, applied_in_pair(c.agent.store, record, delivery_id)) if delivery_id is not None else None
        return json_response(200, transcript(record, _workflow_of(c, record), asked))

    @router.get("/sessions/<session_id>/trail")
    def get_trail(session_id: str) -> Any:
        record = _record(c, session_id)
        if record is None:
            return _not_found(session_id)
        return json_response(200, trail(record, _workflow_of(c, record)))

    @router.get("/sessions")
    def get_sessions() -> Any:
        return json_response(200, listing(c, params(), base_path(router.current_event.raw_event)))

    @router.get("/")
    def get_root() -> Any:
        base = base_path(router.current_event.raw_event)
        found = listing(c, params(), base)
        filters = {k: v for k, v in params().items() if k not in ("limit", "after")}
        nxt = found.get("next")
        from archmax.views.page import render_list

        return html_response(
            200,
            render_list(
                found["sessions"],
                base=base,
                filters=filters,
                next_href=nxt.replace("/sessions?", "/?", 1) if nxt else None,
            ),
        )
