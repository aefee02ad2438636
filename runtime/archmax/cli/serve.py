"""``archmax serve [<workflow>]``: the Lambda handlers on 127.0.0.1 for local development (no Docker).

Rule source: BEHAVIOUR.md §11 (``serve``); :mod:`archmax.serve` (the server itself).
"""

from __future__ import annotations

from pathlib import Path

from archmax.cli.context import Context
from archmax.cli.errors import UsageError
from archmax.cli.flags import AddCommand
from archmax.cli.workspace import build_model, model_spec, only_workflow, resolve_workflow


def add_parser(add: AddCommand) -> None:
    """Register ``serve``."""
    p = add("serve", "Serve the Lambda handlers on 127.0.0.1 for local development (no Docker).")
    p.add_argument("workflow", nargs="?")
    p.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (0 picks a free one)")
    p.add_argument("--sweep-every", type=float, default=60.0, metavar="SECONDS", help="seconds between sweeps")


def run(cli: Context) -> int:
    """Serve until interrupted; 0."""
    from archmax.serve import main_loop, serve

    a = cli.args
    workflow_dir = resolve_workflow(cli.root, a.workflow) if a.workflow else only_workflow(cli.root)
    if cli.store_flag is not None and cli.store_flag.startswith("aws:"):
        raise UsageError("serve uses SESSIONS_TABLE / SESSIONS_BUCKET from the environment for the AWS store")
    store_dir = Path(cli.store_flag) if cli.store_flag else cli.root / "sessions"
    model = build_model(model_spec(cli.model_flag))
    main_loop(serve(workflow_dir, root=store_dir, port=a.port, sweep_interval_s=a.sweep_every, model=model))
    return 0
