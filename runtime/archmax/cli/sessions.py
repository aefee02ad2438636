"""``archmax sessions [<id>]``: list all sessions, or show one (``--log``/``--open`` in :mod:`.session_views`).

Rule source: BEHAVIOUR.md §11 (``sessions``; ``--json`` prints result models), issue 15 item 2.
"""

from __future__ import annotations

from typing import Any

from archmax.cli import flags, session_views
from archmax.cli.context import Context
from archmax.cli.errors import UsageError
from archmax.cli.flags import AddCommand
from archmax.cli.leases import now_instant
from archmax.cli.render import command, session_lines, to_json
from archmax.cli.workspace import resolve_workflow


def add_parser(add: AddCommand) -> None:
    """Register ``sessions``."""
    p = add("sessions", "List all sessions, or show one.")
    p.add_argument("session", nargs="?")
    flags.workflow(p)
    session_views.add_flags(p)


def run(cli: Context) -> int:
    """Print the sessions (one line each, more for one session), or one session's story or page."""
    from archmax.session.ids import validate_session_id

    a = cli.args
    session_views.check_flags(a, UsageError)
    if a.session is not None:
        validate_session_id(a.session)
        record = cli.store.load(a.session)
        if record is None:
            return cli.not_found(a.session)
        if session_views.wants_view(a):
            return session_views.show(cli, record, cli.workflow_spec(record.workflow, {}))
        pairs = [(record, _one_summary(cli, a.session, record))]
    else:
        pairs = _listed(cli)
    if cli.json:
        summaries = [s for _r, s in pairs]
        cli.say(to_json(summaries[0] if a.session is not None else summaries))
        return 0
    if not pairs:
        cli.note("no sessions")
    specs: dict[str, Any] = {}
    sweep = command("archmax", "sweep", *cli.context())
    now = now_instant()
    for record, summary in pairs:
        spec = cli.workflow_spec(record.workflow, specs)
        for line in session_lines(summary, record, spec, one=a.session is not None, sweep=sweep, now=now):
            cli.say(line)
    return 0


def _one_summary(cli: Context, session_id: str, record: Any) -> Any:
    """One session's summary, with its quarantined mail."""
    from archmax.inbound.quarantine import held_in_summary
    from archmax.session.ids import parent_session_id
    from archmax.session.results import summary_of

    held = held_in_summary(cli.store, session_id, record.version)
    summary = summary_of(record, parent_session_id(session_id))
    return summary.model_copy(update={"quarantined": held}) if held else summary


def _listed(cli: Context) -> list[tuple[Any, Any]]:
    """``(record, summary)`` of every session the filters keep.

    Raises:
        SessionStoreCapabilityError: the store cannot list.
    """
    a = cli.args
    if not cli.store.capabilities.list:
        from archmax.errors import SessionStoreCapabilityError

        raise SessionStoreCapabilityError("list")
    slug = resolve_workflow(cli.root, a.workflow).name if a.workflow is not None else None
    pairs = []
    for sid in cli.store.list():
        record = cli.store.load(sid)
        if record is not None and (slug is None or record.workflow == slug) and session_views.keep(record, a.status):
            pairs.append((record, _one_summary(cli, sid, record)))
    return pairs
