"""``archmax validate [<workflow>]``: check a workflow and print its diagnostics.

Rule source: BEHAVIOUR.md §11 (``validate``); :mod:`archmax.workflow_tools` (a ``tools.allow``
name no tool of ``tools.py`` provides).
"""

from __future__ import annotations

from archmax.cli.context import Context
from archmax.cli.flags import AddCommand
from archmax.cli.render import to_json
from archmax.cli.workspace import resolve_workflow
from archmax.workflow_tools import load_tools, tool_diagnostics, tool_names


def add_parser(add: AddCommand) -> None:
    """Register ``validate``."""
    p = add("validate", "Check a workflow and print its diagnostics.")
    p.add_argument("workflow", nargs="?")


def run(cli: Context) -> int:
    """Print the diagnostics; 0 when none is an error, else 1."""
    from archmax.errors import WorkflowSpecError
    from archmax.spec import load_workflow, validate_workflow

    workflow_dir = resolve_workflow(cli.root, cli.args.workflow)
    diagnostics = validate_workflow(workflow_dir)
    if not any(d.severity == "error" for d in diagnostics):
        # grants no tools.py tool provides: the hosts refuse them at start-up (archmax.workflow_tools)
        try:
            provided = tool_names(load_tools(workflow_dir))
        except WorkflowSpecError as exc:
            diagnostics = [*diagnostics, *exc.diagnostics]
        else:
            diagnostics = [*diagnostics, *tool_diagnostics(load_workflow(workflow_dir), provided)]
    ok = not any(d.severity == "error" for d in diagnostics)
    if cli.json:
        cli.say(
            to_json(
                {
                    "ok": ok,
                    "diagnostics": [
                        {"path": d.path, "message": d.message, "severity": d.severity} for d in diagnostics
                    ],
                }
            )
        )
    else:
        for d in diagnostics:
            cli.say(str(d) if d.severity == "error" else f"{d} (warning)")
        if ok:
            cli.note(f"ok: workflow '{workflow_dir.name}' is valid")
    return 0 if ok else 1
