"""``archmax email <file.eml>``: send a raw email to the session of its conversation.

Admission is the SES path's own rule, :mod:`archmax.inbound.admission`: a mail opens sessions only
as ``mail:<conversation id>``, and a sender who is not a participant of an existing session (and
carries no reply token of it) is quarantined, whatever its Message-ID; an operator releases it with
``archmax quarantine``. A mail whose reply token names a park that is no longer the session's
current park (a late answer to an earlier question) is refused: exit 1 with
``SessionNotAwaitingInputError`` naming both parks, nothing written (BEHAVIOUR.md §5.11). A mail
whose conversation is a session of another workflow than ``--workflow``'s is refused (exit 2,
nothing written), as ``run``/``deliver`` refuse one (attack32: it resumed under the wrong states).

Rule source: BEHAVIOUR.md §11 (``email``), §5.11; issue 13 item 1, issue 21 items 1, 3 and 6, issue 23 item 5
(one admission rule; a local file has no receipt verdicts, so the authentication policy is not
checked: the operator vouches for it).
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
    """Admit the mail (:func:`archmax.inbound.admission.admit`), then apply it to its session or hold it; print the Outcome."""
    import os

    from archmax.inbound.admission import MailDoor, admit
    from archmax.inbound.email import parse_email
    from archmax.inbound.reply_token import configured_secret
    from archmax.outbound.config import reply_threader

    a = cli.args
    try:
        raw = Path(a.file).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read '{a.file}': {exc.strerror or exc}") from exc
    workflow_dir = resolve_workflow(cli.root, a.workflow, how="pass --workflow <slug>")
    agent = cli.agent(workflow_dir)
    door = MailDoor(store=cli.store, workflow=agent.workflow, spec=agent.spec, thread=reply_threader(cli.store),
                    reply_secret=configured_secret(os.environ))  # fmt: skip
    admission = admit(door, parse_email(raw, trigger=a.trigger), raw)  # no receipt: no verdicts
    firing, sid = admission.firing, admission.session_id
    cli.refuse_other_workflow(sid, workflow_dir)  # a conversation of another workflow: nothing written (§3.3)
    if not cli.json:
        resolved = agent.workflow.resolve_session(trigger=firing.trigger, variables=firing.variables, session_id=sid)
        for warning in [*firing.warnings, *resolved.warnings]:
            cli.note(f"warning: {warning}")
        cli.note(
            f"email: {firing.variables.get('subject')!r} from {firing.variables.get('from')} "
            f"-> session '{sid}' ({firing.trigger}: {resolved.disposition})"
        )
    if admission.decision != "admit":  # without verdicts admission never refuses: it holds
        return _held(cli, admission, raw)  # held, as the SES path holds it: an operator decides
    try:
        outcome = cli.host(agent).send_now(
            sid,
            firing.message,
            trigger=firing.trigger,
            variables=firing.variables,
            files=dict(firing.files) or None,
            delivery_id=firing.delivery_id,
            park_id=firing.park_id,  # the park its reply token names: refused if the session moved on meanwhile
        )
    except DuplicateDeliveryError as exc:
        cli.note(f"duplicate: {exc}")  # the event was applied the first time: success, and admits nobody
        return 0
    except CallerError:
        raise  # refused: nothing was applied and the sender is admitted to nothing
    except ArchmaxError:
        # A model or store failure after the claim: the mail is in the session (the sweep finishes
        # its turn), so its sender is a participant, and a retry of the same file is admitted.
        _admit_sender(cli, admission, if_claimed=True)
        raise
    _admit_sender(cli, admission)
    return cli.outcome(outcome)


def _admit_sender(cli: Context, admission: Any, *, if_claimed: bool = False) -> None:
    """Note the sender of a mail the session applied as a participant (``if_claimed``: only if it has a checkpoint)."""
    from archmax.inbound.admission import applied

    try:
        if not if_claimed or cli.store.head(admission.session_id) is not None:
            applied(cli.store, admission, duplicate=False)
    except ArchmaxError as exc:  # the store is failing too: the next mail from this sender is held for review
        cli.note(f"warning: sender not noted as a participant of session '{admission.session_id}': {exc}")


def _held(cli: Context, admission: Any, raw: bytes) -> int:
    """Hold a mail admission did not admit in its session's quarantine; listed and released with ``archmax quarantine``."""
    import hashlib

    from archmax.inbound.admission import hold

    sid, delivery_id = admission.session_id, hashlib.sha256(raw).hexdigest()[:32]  # the same name for the same file
    hold(cli.store, admission, raw, delivery_id=delivery_id, at=format_instant(SystemClock().now()))
    if cli.json:
        cli.say(to_json({"session_id": sid, "quarantined": admission.reason, "delivery_id": delivery_id}))
    else:
        cli.note(f"quarantined: {admission.reason}")
        cli.note(f"next: {command('archmax', 'quarantine', 'release', sid, delivery_id, *cli.context())}")
    return 0
