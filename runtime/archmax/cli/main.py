r"""``archmax``: the parser of every command, and the dispatch from a command to its module.

Each command lives in a module of its own (``archmax.cli.<command>``) with ``add_parser(add)`` and
``run(cli)``; this module builds the parser from them, runs one, and turns what it raises into
one ``error:`` line and an exit code (:mod:`archmax.cli.errors`).

Rule source: BEHAVIOUR.md §11 (commands, flags, exit codes, stdout/stderr), §4.2 (which session a
firing belongs to), §3 (the operations), DESIGN.md §5 (the model is configuration).

Exit codes: 0 success or a park; 1 a failed or rejected result or any other ``ArchmaxError``;
2 a usage error (bad flags, bad JSON, a non-object ``--variables``, a bad ``--file``, and
``InvalidSessionIdError``, ``InvalidSessionPathError``, ``InvalidVariableNameError``,
``EmptyMessageError`` or ``MissingDeliveryTriggerError`` from the command line); 130 when Ctrl-C
interrupted the command (one ``interrupted:`` line and, for a turn left ``running``, its ``next:``).

Example:
    $ archmax run support-inbox "Where is my order?" --trigger email_received \
          --variables '{"conversation_id": "AAQk-1"}' --model scripted:model.yaml
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.errors import INTERRUPTED, USAGE, USAGE_ERRORS, UsageError, report, silence_stdout
from archmax.errors import ArchmaxError

COMMANDS = (
    "run", "deliver", "decide", "reply", "sessions", "validate", "test", "sweep", "email", "serve", "invoke", "quarantine",
    "schema",
)  # fmt: skip
"""Every command, as the "choose a command" error names them."""

_HELP_ORDER = (
    "run", "deliver", "decide", "reply", "sessions", "validate", "test", "sweep", "email", "schema", "serve", "invoke",
    "quarantine",
)  # fmt: skip
"""The order ``archmax -h`` lists the commands in."""


def command_module(name: str) -> ModuleType:
    """The module of one command (``archmax.cli.<name>``)."""
    return importlib.import_module(f"archmax.cli.{name}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every command (§11)."""
    parser = flags.Parser(prog="archmax", description="Run governed agent sessions that park and resume.")
    parser.add_argument("--version", action="version", version=f"archmax {_version()}")
    flags.common(parser)
    sub = parser.add_subparsers(dest="command", metavar="<command>")

    def add(name: str, help_text: str, description: str | None = None) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=description or help_text)
        flags.common(p)
        return p

    for name in _HELP_ORDER:
        command_module(name).add_parser(add)
    return parser


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("archmax")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv``; words after the flags join the command's words (§11, the seed's own form).

    ``archmax run support-inbox --trigger email_reply --variables '{...}' "About the thing…"``: argparse
    stops collecting a ``nargs="*"`` positional at the first flag, so the prompt after the flags comes
    back unrecognised and is appended here, in order.

    Raises:
        UsageError: a leftover that looks like a flag, or words for a command that takes none.
    """
    args, extra = build_parser().parse_known_args(argv)
    if extra:
        words = [word for word in extra if word.startswith("-")]
        if words or not isinstance(getattr(args, "words", None), list):
            raise UsageError(f"unrecognized arguments: {' '.join(words or extra)}")
        args.words = [*args.words, *extra]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``archmax`` command and return its exit code (§11).

    Args:
        argv: The arguments after the program name; ``None`` reads ``sys.argv[1:]``.

    Returns:
        0 for success or a park; 1 for a failed/rejected result or an ``ArchmaxError``; 2 for a usage error;
        130 when Ctrl-C interrupted it.
    """
    as_json = "--json" in (sys.argv[1:] if argv is None else argv)
    cli: Context | None = None
    try:
        args = _parse(argv)
        if args.command is None:
            raise UsageError(f"choose a command: {', '.join(COMMANDS)} (archmax -h for help)")
        cli = Context(args)
        return int(command_module(args.command).run(cli))
    except SystemExit as exc:  # -h/--help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except (UsageError, *USAGE_ERRORS) as exc:
        return report(exc, USAGE, as_json)
    except KeyboardInterrupt:  # Ctrl-C: one line and what to do, never a traceback
        return _interrupted(cli, as_json)
    except BrokenPipeError:  # `archmax sessions | head`: the reader left; no traceback for that
        silence_stdout()
        return 1
    except ArchmaxError as exc:
        code = report(exc, 1, as_json)
        if cli is not None and not as_json:
            cli.sent_before_error()  # what the operation sent before it raised
            from archmax.cli.hints import hint_after

            hint = hint_after(cli, exc)
            if hint:
                print(hint, file=sys.stderr)
        return code


def _interrupted(cli: Context | None, as_json: bool) -> int:
    """Say that Ctrl-C stopped the command (and how to finish a turn it left ``running``); 130."""
    from archmax.cli.hints import interrupted_lines

    lines = interrupted_lines(cli)
    if as_json:
        from archmax.cli.render import to_json

        body = {"error": "Interrupted", "message": lines[0], "exit": INTERRUPTED}
        if cli is not None and cli.target is not None:
            body["session_id"] = cli.target
        print(to_json(body))
    for line in lines:
        print(line, file=sys.stderr)
    return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
