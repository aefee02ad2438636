"""``archmax serve [<workflow>]``: the Lambda handlers on 127.0.0.1 for local development (no Docker).

Rule source: BEHAVIOUR.md §11 (``serve``); :mod:`archmax.serve` (the server itself).
"""

from __future__ import annotations

import errno
from pathlib import Path

from archmax.cli.context import Context
from archmax.cli.errors import UsageError
from archmax.cli.flags import AddCommand
from archmax.cli.workspace import build_model, model_spec, only_workflow, resolve_workflow

_CANNOT_LISTEN = (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL)
"""Why a port cannot be bound that another ``--port`` cures."""


def add_parser(add: AddCommand) -> None:
    """Register ``serve``."""
    p = add("serve", "Serve the Lambda handlers on 127.0.0.1 for local development (no Docker).")
    p.add_argument("workflow", nargs="?")
    p.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (0 picks a free one)")
    p.add_argument("--sweep-every", type=float, default=60.0, metavar="SECONDS", help="seconds between sweeps")


def run(cli: Context) -> int:
    """Serve until interrupted; 0.

    Raises:
        UsageError: the port is taken or not allowed (exit 2, with a ``--port`` hint).
    """
    from archmax.serve import main_loop, serve

    a = cli.args
    workflow_dir = resolve_workflow(cli.root, a.workflow) if a.workflow else only_workflow(cli.root)
    if cli.store_flag is not None and cli.store_flag.startswith("aws:"):
        raise UsageError("serve uses SESSIONS_TABLE / SESSIONS_BUCKET from the environment for the AWS store")
    if not 0 <= a.port <= 65535:
        raise UsageError(f"--port {a.port} is not a port (0 to 65535; 0 picks a free one)")
    store_dir = Path(cli.store_flag) if cli.store_flag else cli.root / "sessions"
    model = build_model(model_spec(cli.model_flag))
    try:
        server = serve(workflow_dir, root=store_dir, port=a.port, sweep_interval_s=a.sweep_every, model=model)
    except OSError as exc:
        if exc.errno not in _CANNOT_LISTEN:
            raise
        raise UsageError(
            f"cannot listen on 127.0.0.1:{a.port}: {exc.strerror or exc}; pass --port <another port> "
            "(--port 0 picks a free one)"
        ) from exc
    main_loop(server)
    return 0
