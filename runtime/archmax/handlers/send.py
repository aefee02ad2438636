"""The send handler: webhooks and inbound mail are inboxed, then their session is woken.

Rule source: DESIGN.md §4 (send: ``POST /sessions/{id}/messages``, ``POST /triggers/{trigger}``,
SES receipts; webhooks answer 202 once the firing is durably inboxed, the turn running in an
asynchronous invocation) and §3 "Inbox". Events it takes:

* an API Gateway request (v2 or v1) for one of the two routes;
* an SES receipt event (raw MIME read from S3 at the key the rule's S3 action wrote);
* ``{"drain": "<session id>"}``: the asynchronous self-invocation the waker sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from archmax.errors import CallerError
from archmax.handlers.common import (
    Handler,
    direct,
    drain,
    http_app,
    is_drain_event,
    is_http_event,
    json_response,
    refuse,
    unrecognised,
)
from archmax.inbound.apigw import message_firing, trigger_firing
from archmax.inbound.ses import SesMail, is_ses_event, ses_firing, ses_mails

if TYPE_CHECKING:
    from archmax.hosting.wiring import Collaborators


def _accepted(accepted: Any) -> dict[str, Any]:
    return {
        "session_id": accepted.session_id,
        "disposition": accepted.disposition,
        "delivery_id": accepted.delivery_id,
        "duplicate": accepted.duplicate,
        "warnings": list(accepted.warnings),
    }


def _mail(c: Collaborators, mail: SesMail) -> dict[str, Any]:
    """One SES record: refused mail is recorded and not read; the rest is read from S3 and accepted."""
    if mail.refused is not None:
        c.on_refused(mail)
        return {"message_id": mail.message_id, "refused": mail.refused}
    raw = c.fetch_mail(mail.bucket, mail.key)
    firing = c.thread_mail(ses_firing(mail, raw), mail.recipients)  # a reply to what we sent: its session
    return {"message_id": mail.message_id, **_accepted(c.host.accept(firing))}


def _ses(c: Collaborators, event: Mapping[str, Any]) -> dict[str, Any]:
    results = []
    for mail in ses_mails(event, bucket=c.bucket):
        try:
            results.append(_mail(c, mail))
        except CallerError as exc:  # a bad conversation id etc.: retrying the receipt cannot help
            results.append({"message_id": mail.message_id, "error": type(exc).__name__, "message": str(exc)})
    return {"records": results}


def build(c: Collaborators) -> Handler:
    """The send function's handler over its collaborators (see module docstring).

    Raises:
        ArchmaxError: infrastructure and model errors, so Lambda retries the invocation; caller
            errors are answered (4xx JSON for HTTP, ``{"ok": false, ...}`` otherwise).
    """

    def routes(router: Any) -> None:
        @router.post("/sessions/<session_id>/messages")
        def post_message(session_id: str) -> Any:
            firing = message_firing(router.current_event, session_id=session_id)
            return json_response(202, _accepted(c.host.accept(firing, session_id=session_id)))

        @router.post("/triggers/<trigger>")
        def post_trigger(trigger: str) -> Any:
            decl = c.agent.spec.trigger_decl(trigger)
            firing = trigger_firing(
                router.current_event, trigger=trigger, message_path=decl.message if decl else None
            )
            return json_response(202, _accepted(c.host.accept(firing)))

    http = http_app(routes)

    def handle(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if is_http_event(event):
            return http(event, context)
        if is_ses_event(event):
            return direct(lambda: _ses(c, event))
        if is_drain_event(event):
            return direct(lambda: drain(c, event["drain"]))
        return direct(refuse(unrecognised(event, "API Gateway, SES or {'drain': id} events")))

    return handle

