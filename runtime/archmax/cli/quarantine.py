"""``archmax quarantine list <session>`` and ``archmax quarantine release <session> <delivery id>``.

Rule source: issue 13 item 1 (an operator lists a session's quarantined mail and releases one; a
released mail is applied once). Listing reads the session's ``quarantine/`` files; release hands
the held mail to the session through a host (:func:`archmax.inbound.quarantine.release`) with the
inbox beside a filesystem store (drained at once), or an in-memory inbox for another store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def add_parser(add: Callable[[str, str], Any]) -> None:
    """Register ``quarantine`` with the CLI's parser (``add(name, help)`` returns the subparser)."""
    p = add("quarantine", "List the mail a session holds in quarantine, or release one (it is then applied once).")
    p.add_argument("action", choices=("list", "release"))
    p.add_argument("session")
    p.add_argument("delivery_id", nargs="?", help="the held mail's id (release)")
    p.add_argument("--workflow", help="workflow slug (default: the session's own, or the only one)")


def run(cli: Any) -> int:
    """Run the command for a ``_Cli`` (its store, workspace and output).

    Returns 0 on success; 1 for a refusal, or for a release whose turn stopped part-way (the mail is
    applied, once; a ``next:`` line names the sweep that finishes the turn).

    Raises:
        UsageError: ``release`` without a delivery id.
        InvalidSessionIdError, UnknownQuarantineError, and what ``Host.accept`` raises (exit 1 via the CLI).
    """
    from archmax.cli.errors import UsageError
    from archmax.inbound.quarantine import listing, release
    from archmax.session.ids import validate_session_id

    a = cli.args
    sid = validate_session_id(a.session)
    if a.action == "list":
        mails = listing(cli.store, sid)
        if not mails and cli.store.head(sid) is None:  # say so, as `archmax sessions <id>` does
            return cli.not_found(sid)
        if cli.json:
            cli.say(json.dumps([m.model_dump(mode="json") for m in mails], indent=2))
        elif not mails:
            cli.note(f"session '{sid}' holds no quarantined mail")
        for m in [] if cli.json else mails:
            state = f"released {m.released_at}" if m.released_at else "held"
            cli.say(f"{m.delivery_id}  {state}  from {m.sender}  {m.subject!r}\n    {m.reason}")
        return 0
    if not a.delivery_id:
        raise UsageError("quarantine release needs the held mail's id (see: archmax quarantine list <session>)")
    from archmax.inbound.email import parse_email

    host = cli.host(cli.agent(cli.session_workflow(sid)))
    answer = release(host, sid, a.delivery_id, parse=lambda raw, trigger: parse_email(raw, trigger=trigger))
    unfinished = not answer["duplicate"] and cli.turn_stopped(sid)
    if cli.json:
        cli.say(json.dumps({**answer, "turn_unfinished": unfinished}, indent=2))
    else:
        how = "already released: nothing applied again" if answer["duplicate"] else f"applied ({answer['disposition']})"
        cli.say(f"released {a.delivery_id} into session '{sid}': {how}")
    if unfinished:  # released (and applied once) all the same; its turn stopped on a model or store failure
        from archmax.cli.render import command

        cli.note(f"warning: the turn of session '{sid}' did not finish (see: archmax sessions {sid} --log)")
        cli.note(f"next: once the model answers, {command('archmax', 'sweep', *cli.context())} finishes it")
        return 1
    return 0
