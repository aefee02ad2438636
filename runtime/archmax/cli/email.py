"""``archmax email <file.eml>``: send a raw email to the session of its conversation.

A sender who is not a participant of an existing session (and carries no reply token of it) is
quarantined, as on SES; an operator releases it with ``archmax quarantine``.

Rule source: BEHAVIOUR.md §11 (``email``); issue 13 item 1 (the participant rule; a local file has
no receipt verdicts, so the authentication policy is not checked: the operator vouches for it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.errors import UsageError
from archmax.cli.flags import AddCommand
from archmax.cli.render import command, to_json
from archmax.cli.workspace import resolve_workflow
from archmax.clock import SystemClock, format_instant
from archmax.errors import ArchmaxError, CallerError, DuplicateDeliveryError


def add_parser(add: AddCommand) -> None:
    """Register ``email``."""
    p = add(
        "email",
        "Send a raw email (.eml) to the session of its conversation. A sender who is not a participant of an "
        "existing session (and carries no reply token of it) is quarantined, as on SES.",
    )
    p.add_argument("file")
    p.add_argument("--trigger", help="override the trigger (default: email_received / email_reply)")
    flags.workflow(p)
    flags.record(p)


def run(cli: Context) -> int:
    """Apply the mail to its session (or hold it); print the Outcome."""
    from archmax.inbound.email import parse_email
    from archmax.outbound.config import reply_threader

    a = cli.args
    try:
        raw = Path(a.file).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read '{a.file}': {exc.strerror or exc}") from exc
    firing = parse_email(raw, trigger=a.trigger)
    firing = reply_threader(cli.store)(firing, ())  # a reply to what we sent: its session
    workflow_dir = resolve_workflow(cli.root, a.workflow, how="pass --workflow <slug>")
    agent = cli.agent(workflow_dir)
    resolved = agent.workflow.resolve_session(trigger=firing.trigger, variables=firing.variables)
    if not cli.json:
        for warning in [*firing.warnings, *resolved.warnings]:
            cli.note(f"warning: {warning}")
        cli.note(
            f"email: {firing.variables.get('subject')!r} from {firing.variables.get('from')} "
            f"-> session '{resolved.session_id}' ({firing.trigger}: {resolved.disposition})"
        )
    sid = resolved.session_id
    if _quarantined(cli, sid, firing, raw):
        return 0  # held, as the SES path holds it: an operator decides
    try:
        outcome = agent.workflow.send(
            sid,
            firing.message,
            trigger=firing.trigger,
            variables=firing.variables,
            files=dict(firing.files) or None,
            delivery_id=firing.delivery_id,
        )
    except DuplicateDeliveryError as exc:
        cli.note(f"duplicate: {exc}")  # the event was applied the first time: success
        return 0
    except CallerError:
        raise  # refused: nothing was applied and the sender is admitted to nothing
    except ArchmaxError:
        # A model or store failure after the claim: the mail is in the session (the sweep finishes
        # its turn), so its sender is a participant, and a retry of the same file is admitted.
        _admit_sender(cli, sid, firing, if_claimed=True)
        raise
    _admit_sender(cli, sid, firing)
    return cli.outcome(outcome)


def _admit_sender(cli: Context, session_id: str, firing: Any, *, if_claimed: bool = False) -> None:
    """Note the sender of a mail the session applied as a participant (``if_claimed``: only if it has a checkpoint)."""
    from archmax.inbound.mail_auth import record_participant

    try:
        if not if_claimed or cli.store.head(session_id) is not None:
            record_participant(cli.store, session_id, firing.variables.get("from"))
    except ArchmaxError as exc:  # the store is failing too: the next mail from this sender is held for review
        cli.note(f"warning: sender not noted as a participant of session '{session_id}': {exc}")


def _quarantined(cli: Context, session_id: str, firing: Any, raw: bytes) -> bool:
    """Hold a mail whose sender may not speak into the existing session (issue 13 item 1's participant rule).

    A local file has no receipt verdicts, so the authentication policy is not checked here (the
    operator vouches for the file); the participant rule is, as on SES. Held mail is listed and
    released with ``archmax quarantine``.
    """
    import hashlib
    import os

    from archmax.inbound.mail_auth import speaker_refusal
    from archmax.inbound.quarantine import QuarantinedMail, hold
    from archmax.outbound.config import token_session_from_env

    if cli.store.head(session_id) is None:
        return False  # a new conversation: its sender becomes the first participant
    read_token = token_session_from_env(os.environ)
    token_sid = read_token(firing.variables.get("to") or []) if read_token else None
    reason = speaker_refusal(cli.store, session_id, firing.variables.get("from"), token_session_id=token_sid)
    if reason is None:
        return False
    held = QuarantinedMail.of(  # the file's hash: a safe file name, the same for the same file
        firing, session_id=session_id, delivery_id=hashlib.sha256(raw).hexdigest()[:32], reason=reason,
        at=format_instant(SystemClock().now()),
    )  # fmt: skip
    hold(cli.store, held, raw)
    if cli.json:
        cli.say(to_json({"session_id": session_id, "quarantined": reason, "delivery_id": held.delivery_id}))
    else:
        cli.note(f"quarantined: {reason}")
        release = command("archmax", "quarantine", "release", session_id, held.delivery_id, *cli.context())
        cli.note(f"next: {release}")
    return True
