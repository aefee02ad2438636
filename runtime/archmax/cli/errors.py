"""How the ``archmax`` CLI turns an error into one line and an exit code.

Rule source: BEHAVIOUR.md §11. Exit codes: 0 success or a park; 1 a failed or rejected result or
any other ``ArchmaxError``; 2 a usage error (bad flags, bad JSON, a non-object ``--variables``, a
bad ``--file``, the id/path/name/empty/missing-trigger errors from the command line, and a session
fired through another workflow); 130 a
turn interrupted with Ctrl-C (the shell's code for SIGINT).
"""

from __future__ import annotations

import os
import sys

from archmax.errors import (
    EmptyMessageError,
    InvalidSessionIdError,
    InvalidSessionPathError,
    InvalidVariableNameError,
    MissingDeliveryTriggerError,
    OtherWorkflowSessionError,
)

USAGE = 2
INTERRUPTED = 130


class UsageError(Exception):
    """A bad command line (exit 2). Internal to the CLI: ``main`` catches every one."""


USAGE_ERRORS = (
    InvalidSessionIdError,
    InvalidSessionPathError,
    InvalidVariableNameError,
    EmptyMessageError,
    MissingDeliveryTriggerError,
    OtherWorkflowSessionError,  # the engine's refusal of another workflow's session, as the CLI's own (attack32)
)
"""Archmax errors that come from command-line input and therefore exit 2 (§11)."""


def report(exc: BaseException, code: int, as_json: bool) -> int:
    """``error: <message>`` on stderr; under ``--json`` also ``{error, message, session_id?, exit}`` on stdout.

    Returns:
        ``code``.
    """
    if as_json:
        from archmax.cli.render import to_json

        body = {"error": type(exc).__name__, "message": str(exc), "exit": code}
        session_id = getattr(exc, "session_id", None)
        if session_id is not None:
            body["session_id"] = session_id
        print(to_json(body))
    print(f"error: {exc}", file=sys.stderr)
    return code


def silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's final flush meets no closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout with no file descriptor (captured by a test): nothing to flush
        pass
