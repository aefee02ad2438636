"""``archmax run [<workflow>] <prompt...>``: start a session, or continue the one this firing belongs to.

Rule source: BEHAVIOUR.md §11 (``run``), §4.2 (which session a firing belongs to: ``--session``,
else the trigger's session path over ``--variables``, else a fresh id), §3.3 (a refused firing
writes nothing: a session of another workflow is refused before the inbox or the store is touched).
"""

from __future__ import annotations

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.flags import AddCommand
from archmax.cli.workspace import find_workflow, only_workflow, parse_files, parse_variables, resolve_workflow
from archmax.errors import DuplicateDeliveryError


def add_parser(add: AddCommand) -> None:
    """Register ``run``."""
    p = add(
        "run",
        "Start a session, or continue the one this firing belongs to (--session, else the "
        "trigger's session path over --variables, else a fresh id), and send it the prompt.",
    )
    p.add_argument("words", nargs="*", metavar="[<workflow>] <prompt...>")
    p.add_argument("--trigger", help="trigger id (default: manual)")
    p.add_argument("--session", help="explicit session id")
    p.add_argument(
        "--session-path",
        dest="session_path",
        help="dotted path to the session id inside --variables, e.g. conversation_id",
    )
    flags.firing(p)
    flags.delivery(p)
    flags.record(p)


def run(cli: Context) -> int:
    """Send the prompt to the session the firing resolves to; print the Outcome."""
    a = cli.args
    words = list(a.words)
    if words and find_workflow(cli.root, words[0]) is not None:
        workflow_dir = resolve_workflow(cli.root, words.pop(0))
    else:
        workflow_dir = only_workflow(
            cli.root, named=words[0] if words else None, how="name it first: archmax run <workflow> <prompt...>"
        )
    variables = parse_variables(a.variables)
    files = parse_files(a.files)
    from archmax.session.variables import check_host_variables

    # What needs no session is checked before resolve_session's warnings are printed, so a bad
    # name is one error line, not a "minted a fresh id" warning for a session never created.
    check_host_variables(variables, files, source="passed to run", session_id=a.session)
    agent = cli.agent(workflow_dir)
    resolved = agent.workflow.resolve_session(
        trigger=a.trigger, variables=variables, session_id=a.session, session_path=a.session_path
    )
    cli.refuse_other_workflow(resolved.session_id, workflow_dir)
    if not cli.json:
        for warning in resolved.warnings:
            cli.note(f"warning: {warning}")
    message = " ".join(words) or None
    cli.target = resolved.session_id
    try:
        outcome = cli.host(agent).send_now(
            resolved.session_id,
            message,
            trigger=a.trigger,
            variables=variables,
            files=files,
            delivery_id=a.delivery_id,
        )
    except DuplicateDeliveryError as exc:
        return cli.duplicate(exc)
    return cli.outcome(outcome)
