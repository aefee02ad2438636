"""``archmax sessions``: filters, ``--log`` (the story as text) and ``--open`` (the page as a file).

Rule source: BEHAVIOUR.md §11 (``sessions``; ``--json`` prints result models), issue 15 item 2
(``--log`` prints the story, ``--json`` for machines, ``--status``/``--workflow`` filter the list,
``--open`` writes the page and says where; times are ISO-8601). The story comes from
:mod:`archmax.views`, derived from the checkpoint alone.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from archmax.session.records import SessionStatus

STATUSES = [s.value for s in SessionStatus]


def add_flags(sessions: argparse.ArgumentParser) -> None:
    """The view and filter flags of ``sessions``."""
    sessions.add_argument(
        "--log",
        action="store_true",
        help="with a session: print its story (state changes, parks, deliveries, the conversation)",
    )
    sessions.add_argument(
        "--open",
        nargs="?",
        const="",
        default=None,
        metavar="FILE",
        help="with a session: write its page (HTML) to FILE (default: a file under the temporary folder) and print where",
    )
    sessions.add_argument("--status", choices=STATUSES, help="list only sessions with this status")


def wants_view(args: argparse.Namespace) -> bool:
    """Whether ``sessions`` was asked for a story view (``--log`` or ``--open``)."""
    return bool(getattr(args, "log", False)) or getattr(args, "open", None) is not None


def check_flags(args: argparse.Namespace, usage_error: type[Exception]) -> None:
    """``--log``/``--open`` need a session; ``--status`` lists, so it takes none.

    Raises:
        usage_error: a flag used where it means nothing.
    """
    if wants_view(args) and args.session is None:
        raise usage_error("--log and --open show one session: archmax sessions <id> --log")
    if args.status is not None and args.session is not None:
        raise usage_error("--status filters the list: leave out the session id")


def show(cli: Any, record: Any, workflow: Any) -> int:
    """Print one session's story (``--log``, ``--json`` for the Story model) and/or write its page (``--open``)."""
    from archmax.cli.render import to_json
    from archmax.views import log_lines, story_of

    args = cli.args
    story = story_of(record, workflow, store=cli.store)  # held mail is read from the store
    if args.open is not None:
        from archmax.views.page import render_page

        target = Path(args.open) if args.open else _default_page_path(cli, record.session_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_page(story), encoding="utf-8")
        cli.note(f"page: {target.resolve().as_uri()}")
    if args.log:
        if cli.json:
            cli.say(to_json(story))
        else:
            for line in _with_lease(cli, record, story, log_lines(story)):
                cli.say(line)
    return 0


def _default_page_path(cli: Any, session_id: str) -> Path:
    """``<temp dir>/archmax-pages/<folder name>.html``, outside the store and the workspace.

    Named like the filesystem store's folder for the id (§9.2), never by the raw id, which may hold
    ``/``; the name also tells ``A`` from ``a`` on a case-insensitive disk.
    """
    import tempfile

    from archmax.session.ids import portable_folder_name

    return Path(tempfile.gettempdir()) / "archmax-pages" / f"{portable_folder_name(session_id)}.html"


def keep(record: Any, status: str | None) -> bool:
    """Whether a listed session passes ``--status``."""
    return status is None or str(record.status) == status


def _with_lease(cli: Any, record: Any, story: Any, lines: list[str]) -> list[str]:
    """``--log`` lines with, under the headline of a ``running`` session, its lease (issue 25 item 2)."""
    if str(record.status) != "running":
        return lines
    from archmax.cli.leases import now_instant, running_line
    from archmax.cli.render import command
    from archmax.views.text import headline

    expires_at = record.lease.expires_at if record.lease is not None else None
    line = running_line(expires_at, now_instant(), command("archmax", "sweep", *cli.context()))
    at = len(headline(story))
    return [*lines[:at], line, *lines[at:]]
