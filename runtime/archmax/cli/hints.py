"""The ``next:`` line after an error that left a session ``running`` mid-turn.

Rule source: user-test finding 3; BEHAVIOUR.md §3.12 (recovery: ``archmax sweep`` finishes a turn
whose process stopped, once its lease has expired).
"""

from __future__ import annotations

from archmax.cli.context import Context
from archmax.cli.render import command
from archmax.errors import ArchmaxError, ModelError, SessionStateError

FIRING_COMMANDS = ("run", "deliver", "reply", "decide")
"""Commands that start a turn, and so can leave one stopped part-way."""


def hint_after(cli: Context, exc: ArchmaxError) -> str | None:
    """The ``next:`` line after ``exc``, or None.

    A model error (an outage: a turn a retry can cure) and a refusal because the session is
    ``running`` with no live lease both mean a turn stopped part-way: ``archmax sweep`` finishes it
    (§3.12 recovery), and so does the same command with the same ``--delivery-id`` (the id's dead
    turn is continued, not repeated).
    """
    command_name = cli.args.command
    if command_name not in FIRING_COMMANDS:
        return None
    refused = isinstance(exc, SessionStateError) and getattr(exc, "status", None) == "running"
    if not (isinstance(exc, ModelError) or refused):
        return None
    session_id = getattr(exc, "session_id", None) or cli.target
    if session_id is None:
        return None
    try:
        if not cli.turn_stopped(session_id):
            return None  # not running, or another process is in the turn: it parks or finishes on its own
    except ArchmaxError:
        return None
    sweep = command("archmax", "sweep", *cli.context())
    given = getattr(cli.args, "delivery_id", None)
    if given is not None and not refused:
        return (
            f"next: once the model answers, repeat this command (same --delivery-id {given}) or run "
            f"{sweep}: either finishes the turn of session '{session_id}', which is 'running'"
        )
    if refused:
        return (
            f"next: session '{session_id}' is 'running' with a turn that stopped part-way: {sweep} "
            "finishes it (so does the command that started it, repeated with the same --delivery-id)"
        )
    again = (
        "; repeating this command would add the message again (pass --delivery-id to make a retry safe)"
        if command_name in ("run", "reply")
        else ""
    )
    return (
        f"next: once the model answers, {sweep} finishes the turn of session '{session_id}', which is 'running'{again}"
    )
