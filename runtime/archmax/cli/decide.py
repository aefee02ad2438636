"""``archmax decide <session> --to <state>``: pick a transition of the human state a session is parked at.

Rule source: BEHAVIOUR.md §11 (``decide``), §3.2 (the decide operation).
"""

from __future__ import annotations

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.flags import AddCommand
from archmax.errors import SessionNotParkedError


def add_parser(add: AddCommand) -> None:
    """Register ``decide``."""
    p = add("decide", "Pick a transition of the human state a session is parked at.")
    p.add_argument("session")
    p.add_argument("--to", help="the transition's target state")
    p.add_argument(
        "--comment",
        help="why the person chose this; kept on the session's trail and told to the agent in the next state",
    )
    p.add_argument(
        "--park-id",
        help="the park this answers (Outcome.park_id, shown by archmax sessions); refused if the session has moved on",
    )
    flags.workflow(p)
    flags.record(p)


def run(cli: Context) -> int:
    """Apply the decision; print the Outcome."""
    a = cli.args
    agent = cli.agent(cli.session_workflow(a.session, SessionNotParkedError))
    return cli.outcome(agent.workflow.decide(a.session, to=a.to, comment=a.comment, park_id=a.park_id))
