"""``archmax reply <session> <message...>``: a message to a session parked at a human state (it stays parked).

Rule source: BEHAVIOUR.md §11 (``reply``), §3.2; user-test finding 3 (``--delivery-id``).
"""

from __future__ import annotations

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.flags import AddCommand
from archmax.engine.firing_rule import refuse_stale_park
from archmax.errors import DuplicateDeliveryError, SessionNotParkedError
from archmax.session.records import SessionStatus


def add_parser(add: AddCommand) -> None:
    """Register ``reply``."""
    p = add("reply", "Send a message to a session parked at a human state (it stays parked).")
    p.add_argument("session")
    p.add_argument("words", nargs="*", metavar="<message...>")
    p.add_argument(
        "--park-id",
        help="the park this answers (Outcome.park_id, shown by archmax sessions); refused if the session has moved on",
    )
    flags.delivery(p)
    flags.workflow(p)
    flags.record(p)


def run(cli: Context) -> int:
    """Send the reply; print the Outcome (a repeated ``--delivery-id`` is a duplicate, exit 0)."""
    a = cli.args
    cli.target = a.session
    agent = cli.agent(cli.session_workflow(a.session, SessionNotParkedError))
    message = " ".join(a.words)
    if a.delivery_id is None or not _reply_by_firing(cli, a.session, a.delivery_id):
        return cli.outcome(agent.workflow.reply(a.session, message, park_id=a.park_id))
    refuse_stale_park(cli.store.load(a.session), a.park_id)  # the firing rule names no park: check it here
    try:  # the firing rule answers a decision park (§3.2) and applies the id once, as reply cannot
        return cli.outcome(cli.host(agent).send_now(a.session, message, delivery_id=a.delivery_id))
    except DuplicateDeliveryError as exc:
        return cli.duplicate(exc)


def _reply_by_firing(cli: Context, session_id: str, delivery_id: str) -> bool:
    """Whether ``reply --delivery-id`` goes through ``send`` rather than ``reply``.

    It does when the session is parked at a human state, or when its last applied event is this id
    (a retry finishing the turn that id started); otherwise ``reply`` gives its own refusal.
    """
    head = cli.store.head(session_id)
    if head is None or head.status == SessionStatus.AWAITING_DECISION:
        return head is not None
    if head.status != SessionStatus.RUNNING:
        return False
    rec = cli.store.load(session_id)
    return rec is not None and bool(rec.delivery_ids) and rec.delivery_ids[-1] == delivery_id
