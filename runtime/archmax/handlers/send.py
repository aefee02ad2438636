"""The send handler: webhooks and inbound mail are inboxed, then their session is woken.

Rule source: DESIGN.md §4 (send: ``POST /sessions/{id}/messages``, ``POST /triggers/{trigger}``,
SES receipts; webhooks answer 202 once the firing is durably inboxed, the turn running in an
asynchronous invocation) and §3 "Inbox". Events it takes:

* an API Gateway request (v2 or v1) for one of the two routes;
* an SES receipt event (raw MIME read from S3 at the key the rule's S3 action wrote);
* ``{"drain": "<session id>"}``: the asynchronous self-invocation the waker sends.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from archmax.clock import format_instant
from archmax.errors import CallerError, DuplicateDeliveryError, SessionNotResumableError, UnauthenticatedEventError
from archmax.handlers.common import (
    Handler,
    base_path,
    direct,
    drain,
    http_app,
    is_drain_event,
    is_http_event,
    json_response,
    refuse,
    transcript_location,
    unrecognised,
)
from archmax.hosting.inbox_base import queue_id
from archmax.inbound.apigw import message_firing, raw_body, trigger_firing
from archmax.inbound.webhook import verify as verify_webhook

log = logging.getLogger("archmax.handlers.send")

if TYPE_CHECKING:
    from archmax.hosting.wiring import Collaborators
    from archmax.inbound.ses import SesMail


def _accepted(accepted: Any) -> dict[str, Any]:
    return {
        "session_id": accepted.session_id,
        "disposition": accepted.disposition,
        "delivery_id": accepted.delivery_id,
        "duplicate": accepted.duplicate,
        "warnings": list(accepted.warnings),
    }


def _mail(c: Collaborators, mail: SesMail) -> dict[str, Any]:
    """One SES record: refused, quarantined, or accepted (:mod:`archmax.inbound.admission` decides).

    Spam/virus FAIL is recorded and not read. The sender becomes a participant only once the
    session's inbox took the mail (a duplicate of another sender's mail records nobody).
    """
    from archmax.inbound.admission import MailDoor, admit, applied, hold
    from archmax.inbound.ses import ses_firing

    if mail.refused is not None:
        c.on_refused(mail)
        return {"message_id": mail.message_id, "refused": mail.refused}
    raw = c.fetch_mail(mail.bucket, mail.key)
    door = MailDoor(
        store=c.agent.store, workflow=c.agent.workflow, spec=c.agent.spec, thread=c.thread_mail,
        reply_secret=c.reply_secret(), inbox=c.host.inbox,
    )  # fmt: skip
    admission = admit(door, ses_firing(mail, raw, caps=c.caps), raw, recipients=mail.recipients, verdicts=mail.verdicts)
    sid = admission.session_id
    if admission.decision == "refuse":  # answered nothing: no session, nothing kept, no mail back
        log.warning("mail %s refused for session %r: %s", mail.message_id, sid, admission.reason)
        return {"message_id": mail.message_id, "session_id": sid, "refused": admission.reason}
    if admission.decision == "quarantine":  # SES's id: a safe file name for the held mail
        hold(c.agent.store, admission, raw, delivery_id=mail.message_id, at=format_instant(c.host.clock.now()))
        return {"message_id": mail.message_id, "session_id": sid, "quarantined": admission.reason}
    accepted = c.host.accept(admission.firing, session_id=sid)
    applied(c.agent.store, admission, duplicate=accepted.duplicate)
    answer = {"message_id": mail.message_id, **_accepted(accepted)}
    refused = admission.firing.variables.get("attachments_refused")
    if refused:  # recorded: in the answer, the log, and the session's attachments_refused variable
        log.warning("mail %s: %s", mail.message_id, refused["reason"])
        answer["attachments_refused"] = refused["reason"]
    return answer


def _signed_webhook(c: Collaborators, event: Any, trigger: str) -> Any:
    """``POST /webhooks/{trigger}``: verified (401 otherwise), then inboxed like ``/triggers/{trigger}``.

    A replayed delivery id is answered 200 ``DuplicateDeliveryError`` without writing anything.
    """
    decl = c.agent.spec.trigger_decl(trigger)
    if decl is None or decl.signature is None:
        raise UnauthenticatedEventError(f"trigger {trigger!r} declares no signature: it takes no signed webhooks")
    reference = decl.signature.secret
    delivery_id = verify_webhook(
        event.headers, raw_body(event), decl.signature, lambda: c.read_secret(reference), c.host.clock.now()
    )
    firing = trigger_firing(event, trigger=trigger, message_path=decl.message)
    firing = firing.model_copy(update={"delivery_id": delivery_id})
    c.caps.check(firing)
    try:
        sid = c.agent.workflow.resolve_session(trigger=trigger, variables=firing.variables).session_id
    except SessionNotResumableError as exc:
        sid = str(exc.session_id)
    if c.host.inbox.get(queue_id(sid), delivery_id) is not None:
        raise DuplicateDeliveryError(sid, delivery_id)  # a replay: refused, nothing written
    return json_response(202, _accepted(c.host.accept(firing, session_id=sid)))


def _ses(c: Collaborators, event: Mapping[str, Any]) -> dict[str, Any]:
    from archmax.inbound.ses import ses_mails

    results = []
    for mail in ses_mails(event, bucket=c.bucket):
        try:
            results.append(_mail(c, mail))
        except CallerError as exc:  # a bad conversation id etc.: retrying the receipt cannot help
            log.warning("mail %s refused: %s: %s", mail.message_id, type(exc).__name__, exc)
            results.append({"message_id": mail.message_id, "error": type(exc).__name__, "message": str(exc)})
    return {"records": results}


def build(c: Collaborators) -> Handler:
    """The send function's handler over its collaborators (see module docstring).

    Raises:
        ArchmaxError: infrastructure and model errors, so Lambda retries the invocation; caller
            errors are answered (4xx JSON for HTTP, ``{"ok": false, ...}`` otherwise).
    """

    def routes(router: Any) -> None:
        def accepted(answer: Any) -> Any:
            """202 with ``Location``: the transcript to poll for the outcome and the agent's words (issue 15)."""
            poll = transcript_location(base_path(router.current_event.raw_event), answer.session_id, answer.delivery_id)
            response = json_response(202, {**_accepted(answer), "poll": poll})
            response.headers["Location"] = poll
            return response

        @router.post("/sessions/<session_id>/messages")
        def post_message(session_id: str) -> Any:
            firing = message_firing(router.current_event, session_id=session_id)
            c.caps.check(firing, session_id=session_id)
            return accepted(c.host.accept(firing, session_id=session_id))

        @router.post("/triggers/<trigger>")
        def post_trigger(trigger: str) -> Any:
            decl = c.agent.spec.trigger_decl(trigger)
            firing = trigger_firing(router.current_event, trigger=trigger, message_path=decl.message if decl else None)
            c.caps.check(firing)
            return accepted(c.host.accept(firing))

        @router.post("/webhooks/<trigger>")
        def post_webhook(trigger: str) -> Any:
            return _signed_webhook(c, router.current_event, trigger)

    http = http_app(routes)

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if is_http_event(event):
            return http(event, context)
        if is_drain_event(event):  # only the key "drain": never an SES receipt, so the order is free
            return direct(lambda: drain(c, event["drain"]))
        # The mail modules (SES envelope, MIME parsing, admission) load with the first non-HTTP, non-drain
        # event, not with the function: a webhook's or a drain's cold start does without them (issue 24 goal 4).
        from archmax.inbound.ses import is_ses_event

        if is_ses_event(event):
            return direct(lambda: _ses(c, event))
        return direct(refuse(unrecognised(event, "API Gateway, SES or {'drain': id} events")))

    return handle
