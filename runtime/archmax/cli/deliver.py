"""``archmax deliver <session> --trigger <t>``: deliver an event into a session parked by ``archmax_wait``.

Rule source: BEHAVIOUR.md §11 (``deliver``), §3 (the deliver operation).
"""

from __future__ import annotations

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.flags import AddCommand
from archmax.cli.workspace import parse_files, parse_variables
from archmax.errors import DuplicateDeliveryError, SessionNotAwaitingInputError


def add_parser(add: AddCommand) -> None:
    """Register ``deliver``."""
    p = add("deliver", "Deliver an event into a session parked by archmax_wait.")
    p.add_argument("session")
    p.add_argument("--trigger", help="the event's trigger id (required)")
    p.add_argument("--message", help="text that arrived with the event")
    flags.firing(p)
    flags.delivery(p)
    flags.workflow(p)
    flags.record(p)


def run(cli: Context) -> int:
    """Deliver the event; print the Outcome (a repeated ``--delivery-id`` is a duplicate, exit 0)."""
    a = cli.args
    variables = parse_variables(a.variables)
    files = parse_files(a.files)
    cli.target = a.session
    agent = cli.agent(cli.session_workflow(a.session, SessionNotAwaitingInputError))
    try:
        outcome = agent.workflow.deliver(
            a.session,
            trigger=a.trigger,
            variables=variables,
            message=a.message,
            files=files,
            delivery_id=a.delivery_id,
        )
    except DuplicateDeliveryError as exc:
        return cli.duplicate(exc)
    return cli.outcome(outcome)
