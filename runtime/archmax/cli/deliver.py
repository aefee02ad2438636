"""``archmax deliver <session> --trigger <t>``: deliver an event into a session parked by ``archmax_wait``.

Rule source: BEHAVIOUR.md §11 (``deliver``), §3 (the deliver operation).
"""

from __future__ import annotations

from typing import Any

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.errors import UsageError
from archmax.cli.flags import AddCommand
from archmax.cli.workspace import parse_files, parse_variables
from archmax.errors import DuplicateDeliveryError, SessionNotAwaitingInputError
from archmax.session.records import SessionStatus
from archmax.session.variables import check_host_variables


def add_parser(add: AddCommand) -> None:
    """Register ``deliver``."""
    p = add("deliver", "Deliver an event into a session parked by archmax_wait.")
    p.add_argument("session")
    p.add_argument("--trigger", help="the event's trigger id (required)")
    p.add_argument("--message", help="text that arrived with the event")
    p.add_argument(
        "--park-id",
        help="the park this answers (Outcome.park_id, shown by archmax sessions); refused if the session has moved on",
    )
    flags.firing(p)
    flags.delivery(p)
    flags.workflow(p)
    flags.record(p)


def run(cli: Context) -> int:
    """Deliver the event; print the Outcome (a repeated ``--delivery-id`` is a duplicate, exit 0).

    Through :meth:`archmax.hosting.host.Host.deliver_now` over the store's inbox, like ``run`` and
    ``reply``: a ``--delivery-id`` that waits in the inbox is refused (``DeliveryQueuedError``,
    exit 1, nothing changed), so it never overtakes the firings that arrived before it (issue 22).
    """
    a = cli.args
    variables = parse_variables(a.variables)
    files = parse_files(a.files)
    cli.target = a.session
    agent = cli.agent(cli.session_workflow(a.session, SessionNotAwaitingInputError))
    if _awaits_own_input(cli, a.session):  # other states get the engine's refusal (and its next: line)
        check_host_variables(variables, files, source=f"delivered to session '{a.session}'", session_id=a.session)
        check_trigger(a.trigger, agent.spec)
    try:
        outcome = cli.host(agent).deliver_now(  # never ahead of what waits in the inbox (issue 22)
            a.session,
            trigger=a.trigger,
            variables=variables,
            message=a.message,
            files=files,
            delivery_id=a.delivery_id,
            park_id=a.park_id,
        )
    except DuplicateDeliveryError as exc:
        return cli.duplicate(exc)
    return cli.outcome(outcome)


def _awaits_own_input(cli: Context, session_id: str) -> bool:
    """Whether the session is parked on input in its own workflow (not forwarding to a delegated child)."""
    record = cli.store.load(session_id)
    return record is not None and record.status == SessionStatus.AWAITING_INPUT and record.delegation is None


def check_trigger(trigger: str | None, workflow: Any) -> None:
    """Refuse a delivery trigger that looks like a typo of a known one, before anything is written.

    The rule is :meth:`archmax.spec.model.Workflow.near_miss_trigger` (issue 25 item 4): an event
    name of the caller's own is delivered as given (§3.5, §11), a near miss of a known trigger is
    refused. Checked after §3.5's own checks (a session parked on input, a trigger given, good
    variable names), so those refusals are unchanged.

    Raises:
        UsageError: a near miss; the message names the declared triggers and the closest.
    """
    closest = workflow.near_miss_trigger(trigger) if trigger else None
    if closest is None:
        return
    declared = workflow.declared_triggers()
    raise UsageError(
        f"trigger '{trigger}' is not one workflow '{workflow.slug}' knows (declared: {', '.join(declared) or 'none'}; "
        f"also timer, timeout, manual): nothing was delivered; did you mean '{closest}'?"
    )
