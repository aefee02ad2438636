"""The flags several ``archmax`` commands share, and the parser that raises instead of printing.

Rule source: BEHAVIOUR.md §11 (flags), issue 12 (``--record``), user-test finding 3 (``--delivery-id``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from archmax.cli.errors import UsageError

AddCommand = Callable[..., argparse.ArgumentParser]
"""``add(name, help, description=None)``: a subparser with the shared flags (see :func:`archmax.cli.main.build_parser`)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one ``error:`` line and exit 2 (raised, not printed)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Raise the message as a :class:`UsageError` (``main`` prints it; exit 2)."""
        raise UsageError(message)


def common(parser: argparse.ArgumentParser) -> None:
    """``--root``, ``--store``, ``--model`` and ``--json``, accepted before or after the command."""
    # SUPPRESS on both levels lets a flag be written before or after the command.
    s = argparse.SUPPRESS
    parser.add_argument("--root", default=s, help="workspace folder holding workflows/<slug>/ (default: .)")
    parser.add_argument(
        "--store",
        default=s,
        help="session store: a folder (default <root>/sessions) "
        "or aws:<table>/<bucket>[/<prefix>] (prefix default: sessions, as the stack)",
    )
    parser.add_argument(
        "--model",
        default=s,
        help="model configuration, e.g. scripted:model.yaml, "
        "bedrock:<model id>, openai:<model> (default: $ARCHMAX_MODEL)",
    )
    parser.add_argument("--json", action="store_true", default=s, help="print the result as JSON")


def firing(p: argparse.ArgumentParser) -> None:
    """``--variables`` and ``--file``: what a firing carries."""
    p.add_argument("--variables", help="a JSON object, or @<file> holding one")
    p.add_argument(
        "--file",
        action="append",
        dest="files",
        metavar="NAME=PATH",
        help="give the session the file at PATH: it is copied to scratchpad/attachments/<file name> "
        "and variable NAME (locked) holds that path; repeatable",
    )


def record(p: argparse.ArgumentParser) -> None:
    """``--record FILE``: append the model's answers to a cassette."""
    p.add_argument(
        "--record",
        metavar="FILE",
        help="append every model answer of this command to a cassette; "
        "replay it with --model scripted:FILE (one cassette per session)",
    )


def delivery(p: argparse.ArgumentParser) -> None:
    """``--delivery-id ID``: apply this event once."""
    p.add_argument(
        "--delivery-id",
        dest="delivery_id",
        metavar="ID",
        help="a stable id of this event (a message id, an Idempotency-Key): the session applies it "
        "once; after an error, the same command with the same id finishes the turn instead "
        "of adding the message again, and a later repeat is a duplicate (exit 0)",
    )


def workflow(p: argparse.ArgumentParser) -> None:
    """``--workflow SLUG``: which workflow, when the session or the workspace does not say."""
    p.add_argument("--workflow", help="workflow slug (default: the session's own, or the only one)")
