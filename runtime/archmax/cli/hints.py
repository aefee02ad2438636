"""The ``next:`` line after an error, or after Ctrl-C, that left a session ``running`` mid-turn.

Rule source: user-test finding 3; BEHAVIOUR.md §3.12 (recovery: ``archmax sweep`` finishes a turn
whose process stopped, once its lease has expired); issue 25 items 1 and 5.
"""

from __future__ import annotations

from archmax.cli.context import Context
from archmax.cli.leases import live_lease, now_instant
from archmax.cli.render import command
from archmax.errors import ArchmaxError, DeliveryQueuedError, ModelError, SessionStateError
from archmax.session.records import SessionStatus

FIRING_COMMANDS = ("run", "deliver", "reply", "decide")
"""Commands that start a turn, and so can leave one stopped part-way."""


def hint_after(cli: Context, exc: ArchmaxError) -> str | None:
    """The ``next:`` line after ``exc``, or None.

    A model error (an outage: a turn a retry can cure) and a refusal because the session is
    ``running`` with no live lease both mean a turn stopped part-way: ``archmax sweep`` finishes it
    (§3.12 recovery), and so does the same command with the same ``--delivery-id`` (the id's dead
    turn is continued, not repeated). A refusal because another process holds the turn's lease
    names the instant the lease expires, from which the sweep can take the turn over.
    """
    command_name = cli.args.command
    if command_name not in FIRING_COMMANDS:
        return None
    if isinstance(exc, DeliveryQueuedError):
        return _queued_hint(cli, exc)
    refused = isinstance(exc, SessionStateError) and getattr(exc, "status", None) == "running"
    if not (isinstance(exc, ModelError) or refused):
        return None
    session_id = getattr(exc, "session_id", None) or cli.target
    if session_id is None:
        return None
    sweep = command("archmax", "sweep", *cli.context())
    try:
        expires_at, stopped = _turn_of(cli, session_id)
    except ArchmaxError:
        return None
    if refused and expires_at is not None:
        sessions = command("archmax", "sessions", session_id, *cli.context())
        return _mid_turn_hint(session_id, expires_at, sweep, sessions)
    if not stopped:
        return None  # not running, or this process's own turn still holds it: it parks or finishes on its own
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
    return f"next: once the model answers, {sweep} finishes the turn of session '{session_id}', which is 'running'" + (
        _adds_again(command_name)
    )


def _queued_hint(cli: Context, exc: DeliveryQueuedError) -> str:
    """Who applies a ``--delivery-id`` that waits in the inbox: ``archmax serve`` (issue 22).

    The CLI's own ``sweep`` does not drain the inbox, so repeating the command alone never gets past
    the refusal; the server's drain, or its sweep, applies the id in arrival order.
    """
    flags = cli.context()
    if "--record" in flags:  # serve records nothing
        at = flags.index("--record")
        flags = flags[:at] + flags[at + 2 :]
    serve = command("archmax", "serve", *flags)
    return (
        f"next: {serve} applies delivery '{exc.delivery_id}' from the inbox of session '{exc.session_id}', "
        "after the firings that arrived before it; this command repeated then answers that it was already applied"
    )


def _turn_of(cli: Context, session_id: str) -> tuple[str | None, bool]:
    """``(live lease expiry, stopped)`` of the session: mid-turn under a lease, or ``running`` with none.

    Raises:
        StoreError: the head could not be read.
    """
    head = cli.store.head(session_id)
    expires_at = live_lease(head, now_instant())
    return expires_at, head is not None and head.status == SessionStatus.RUNNING and expires_at is None


def _mid_turn_hint(session_id: str, expires_at: str, sweep: str, sessions: str) -> str:
    return (
        f"next: session '{session_id}' is mid-turn in another process (its lease runs until {expires_at}): "
        f"wait for it to park or finish ({sessions} shows it); if that process "
        f"was stopped, {sweep} finishes the turn from {expires_at}"
    )


def _adds_again(command_name: str) -> str:
    if command_name in ("run", "reply"):
        return "; repeating this command would add the message again (pass --delivery-id to make a retry safe)"
    return ""


def interrupted_lines(cli: Context | None) -> list[str]:
    """What Ctrl-C prints: one ``interrupted:`` line and, when a turn was left ``running``, its ``next:`` line.

    The interrupted process still holds the turn's lease, so the session stays ``running`` until
    the lease expires; from then the sweep (or, with ``--delivery-id``, the same command repeated)
    finishes the turn.
    """
    session_id = cli.target if cli is not None else None
    if cli is None or session_id is None or cli.args.command not in FIRING_COMMANDS:
        return ["interrupted"]
    try:
        expires_at, stopped = _turn_of(cli, session_id)
    except (ArchmaxError, KeyboardInterrupt):
        return [f"interrupted: the turn of session '{session_id}' may have stopped part-way"]
    sweep = command("archmax", "sweep", *cli.context())
    given = getattr(cli.args, "delivery_id", None)
    again = (
        f" (so does this command repeated with the same --delivery-id {given})"
        if given is not None
        else _adds_again(cli.args.command)
    )
    if expires_at is not None:
        return [
            f"interrupted: the turn of session '{session_id}' stopped part-way; it stays 'running' until its "
            f"lease expires at {expires_at}",
            f"next: from {expires_at}, {sweep} finishes the turn{again}",
        ]
    if stopped:
        return [
            f"interrupted: the turn of session '{session_id}' stopped part-way",
            f"next: {sweep} finishes the turn{again}",
        ]
    return [
        f"interrupted: session '{session_id}' was not left mid-turn",
        f"next: {command('archmax', 'sessions', session_id, *cli.context())} shows where it stands",
    ]
