"""``archmax sweep [--now <instant>]``: wake every due session (trigger ``timer``); finish dead turns; send the outbox.

Rule source: BEHAVIOUR.md §11 (``sweep``), §3.12 (recovery of a turn whose process died, once its
lease has expired), DESIGN.md §3 "Inbox".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from archmax.cli import flags
from archmax.cli.context import Context
from archmax.cli.errors import UsageError
from archmax.cli.flags import AddCommand
from archmax.cli.leases import EVERY_LEASE, LEASE_MINUTES, live_lease, running_line
from archmax.cli.render import command, sweep_lines, to_json
from archmax.cli.workspace import only_workflow, resolve_workflow, workflows_in
from archmax.clock import FakeClock, SystemClock, format_instant


def add_parser(add: AddCommand) -> None:
    """Register ``sweep``."""
    p = add(
        "sweep",
        "Wake every session whose resume_at is due (trigger 'timer'); finish turns whose process died (once "
        f"the turn's lease of {LEASE_MINUTES} minutes has expired); send every reply and event not sent yet; "
        "name the sessions still mid-turn.",
    )
    p.add_argument("--now", help="the instant to sweep at (default: the clock)")
    flags.workflow(p)
    flags.record(p)


def run(cli: Context) -> int:
    """Wake and recover; one line per session (``--json``: a list); 1 when any wake or recovery failed."""
    from archmax.hosting.sweep import ERROR, RECOVERED, SKIPPED, sweep_failed

    a = cli.args
    now = parse_instant(a.now) if a.now is not None else format_instant(SystemClock().now())
    targets = _targets(cli)
    results: list[tuple[str, str]] = []
    stale: list[tuple[str, str]] = []  # dead turns continued (DESIGN.md §3 "Inbox")
    outcomes: dict[str, Any] = {}  # session id -> the Outcome its wake or recovery returned

    def on_outcome(sid: str, outcome: Any) -> None:
        outcomes[sid] = outcome

    def on_error(sid: str, exc: Exception) -> None:
        cli.note(f"error: session '{sid}': {exc}")

    mid_turn: list[tuple[str, str]] = []  # (session id, lease expiry): running, no sweep can take them yet
    for workflow_dir in targets:
        mid_turn += _mid_turn(cli, now, workflow_dir.name)
        woken, continued = _sweep_workflow(cli, now, workflow_dir, on_error=on_error, on_outcome=on_outcome)
        results += woken
        stale += continued
    sent = _send_outbox(cli, targets, on_error)  # issue 20 item 2: what no operation sent, sent now
    recovered = [(sid, kind if kind in (SKIPPED, ERROR) else RECOVERED, kind) for sid, kind in stale]
    if cli.json:
        _say_json(cli, results, recovered, RECOVERED)
    else:
        _say_lines(cli, now, results, recovered, outcomes, mid_turn)
    for sid, kind in sent:  # on stderr: stdout and the exit code are §11's (wake-ups and recoveries)
        cli.note(f"outbox: {sid}  {kind}")
    return 1 if sweep_failed(results + stale) else 0


def _send_outbox(cli: Context, targets: list[Any], on_error: Any) -> list[tuple[str, str]]:
    """Send every committed, unsent outbox entry of the swept workflows (``outbox: <id>  sent`` on stderr)."""
    from archmax.hosting.sweep import send_outbox
    from archmax.outbound.config import dispatcher_from_env

    dispatcher = dispatcher_from_env(cli.store)
    out: list[tuple[str, str]] = []
    for workflow_dir in targets:
        out += send_outbox(cli.store, dispatcher, workflow=workflow_dir.name, on_error=on_error)
    return out


def _targets(cli: Context) -> list[Path]:
    """The workflow folders to sweep: ``--workflow``'s, else every one in the workspace (a usage error if none)."""
    if cli.args.workflow is not None:
        return [resolve_workflow(cli.root, cli.args.workflow)]
    targets = list(workflows_in(cli.root).values())
    if not targets:
        only_workflow(cli.root)  # raises the usage error naming the missing workflows
    return targets


def _sweep_workflow(
    cli: Context,
    now: str,
    workflow_dir: Path,
    *,
    on_error: Callable[[str, Exception], None],
    on_outcome: Callable[[str, Any], None],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Wake one workflow's due sessions, then continue its dead turns; ``(woken, recovered)`` as the sweep reports.

    A workflow with nothing due and no dead turn needs no model: no agent is built for it.
    """
    from archmax.hosting.sweep import recover_stale, sweep

    if not cli.store.due(now, workflow=workflow_dir.name) and not cli.store.stale(now, workflow=workflow_dir.name):
        return [], []
    clock = FakeClock(now) if cli.args.now is not None else None
    agent = cli.agent(workflow_dir, clock=clock)
    woken = sweep(agent, now, on_error=on_error, on_outcome=on_outcome)
    stale = recover_stale(agent, now, exclude={sid for sid, _ in woken}, on_error=on_error, on_outcome=on_outcome)
    return woken, stale


def _say_json(
    cli: Context, results: list[tuple[str, str]], recovered: list[tuple[str, str, str]], recovered_kind: str
) -> None:
    """``--json``: one ``{session_id, result}`` per session; a recovery also names its ``outcome``."""
    cli.say(
        to_json(
            [{"session_id": sid, "result": kind} for sid, kind in results]
            + [
                {"session_id": sid, "result": shown, **({"outcome": kind} if shown == recovered_kind else {})}
                for sid, shown, kind in recovered
            ]
        )
    )


def _say_lines(
    cli: Context,
    now: str,
    results: list[tuple[str, str]],
    recovered: list[tuple[str, str, str]],
    outcomes: dict[str, Any],
    mid_turn: list[tuple[str, str]],
) -> None:
    """The result lines (:func:`~archmax.cli.render.sweep_lines`); on stderr, the sessions still mid-turn."""
    if not results and not recovered:
        cli.note(f"nothing due at {now}")
    for sid, shown in results + [(sid, shown) for sid, shown, _kind in recovered]:
        for line in sweep_lines(sid, shown, outcomes.get(sid)):
            cli.say(line)
    sweep_again = command("archmax", "sweep", *cli.context())
    for sid, expires_at in mid_turn:
        cli.note(f"running: session '{sid}' {running_line(expires_at, now, sweep_again)}")


def _mid_turn(cli: Context, now: str, workflow: str) -> list[tuple[str, str]]:
    """``(session id, lease expiry)`` of the workflow's ``running`` sessions whose lease is live at ``now``.

    Listed before the sweep runs, so a turn this sweep starts is not among them. Stderr only: the
    result lines (and ``--json``) stay what the sweep did.
    """
    if cli.json:
        return []
    leased = []
    for sid in cli.store.stale(EVERY_LEASE, workflow=workflow):  # every running session of the workflow
        expires_at = live_lease(cli.store.head(sid), now)
        if expires_at is not None:
            leased.append((sid, expires_at))
    return leased


def parse_instant(value: str) -> str:
    """``--now``: an ISO-8601 date or date-time (§5.3 instant forms), normalised to ``...mmmZ``.

    Raises:
        UsageError: anything else, durations included.
    """
    from archmax.session.until import UntilError, parse_until

    text = value.strip()
    if not text[:4].isdigit() or "-" not in text:
        raise UsageError(f"--now '{value}' is not an ISO-8601 date or date-time")
    try:
        return parse_until(text, SystemClock().now())
    except UntilError as exc:
        raise UsageError(f"--now '{value}': {exc}") from exc
