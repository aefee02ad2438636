"""``archmax test [<workflow>] [filter]``: run a workflow's test cases.

Rule source: BEHAVIOUR.md §10 (test cases), §11 (``test``); user-test finding 10 (a lone word).
"""

from __future__ import annotations

from pathlib import Path

from archmax.cli.context import Context
from archmax.cli.errors import UsageError
from archmax.cli.flags import AddCommand
from archmax.cli.render import to_json
from archmax.cli.workspace import build_model, find_workflow, model_spec, only_workflow, resolve_workflow
from archmax.workflow_tools import load_workspace_tools


def add_parser(add: AddCommand) -> None:
    """Register ``test``."""
    p = add("test", "Run a workflow's test cases.")
    p.add_argument("words", nargs="*", metavar="[<workflow>] [filter]")


def run(cli: Context) -> int:
    """Run the cases and print their results; the runner's exit code."""
    words = list(cli.args.words)
    if len(words) > 2:
        raise UsageError("test takes at most a workflow and a filter")
    workflow_dir: Path | None = None
    if words and (len(words) == 2 or find_workflow(cli.root, words[0]) is not None):
        workflow_dir = resolve_workflow(cli.root, words.pop(0))
    # one word that is no workflow is a filter only in a one-workflow workspace: otherwise it was
    # meant as the workflow, and is reported as not found (user-test finding 10)
    workflow_dir = workflow_dir or only_workflow(
        cli.root, named=words[0] if words else None, how="name it first: archmax test <workflow> [filter]"
    )
    case_filter = words[0] if words else None
    try:
        from archmax.cases import format_results, results_to_json, run_tests
    except ImportError as exc:
        cli.note(f"error: archmax test: the case runner is not available: {exc}")
        return 1
    spec = model_spec(cli.model_flag)
    result = run_tests(
        workflow_dir,
        filter=case_filter,
        store=cli.store if cli.store_flag is not None else None,
        tools=load_workspace_tools(workflow_dir),
        model=build_model(spec) if spec is not None else None,
    )
    if cli.json:
        cli.say(to_json(results_to_json(result)))
    else:
        cli.say(format_results(result))
    return int(result.get("exit_code", 1))
