r"""``archmax``: run, deliver, decide, reply, sessions, validate, test, sweep and email from a terminal.

Rule source: BEHAVIOUR.md §11 (commands, flags, exit codes, stdout/stderr), §4.2 (which session a
firing belongs to), §3 (the operations), DESIGN.md §5 (the model is configuration).

Exit codes: 0 success or a park; 1 a failed or rejected result or any other ``ArchmaxError``;
2 a usage error (bad flags, bad JSON, a non-object ``--variables``, a bad ``--file``, and
``InvalidSessionIdError``, ``InvalidSessionPathError``, ``InvalidVariableNameError``,
``EmptyMessageError`` or ``MissingDeliveryTriggerError`` from the command line).

Example:
    $ archmax run support-inbox "Where is my order?" --trigger email_received \
          --variables '{"conversation_id": "AAQk-1"}' --model scripted:model.yaml
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archmax import cli_schema, cli_views
from archmax.cli_render import command, print_outcome, session_lines, sweep_lines, to_json
from archmax.cli_workspace import (
    UsageError,
    build_model,
    find_workflow,
    model_spec,
    only_workflow,
    open_store,
    parse_files,
    parse_variables,
    resolve_workflow,
    workflows_in,
)
from archmax.clock import FakeClock, SystemClock, format_instant
from archmax.errors import (
    ArchmaxError,
    CallerError,
    DuplicateDeliveryError,
    EmptyMessageError,
    InvalidSessionIdError,
    InvalidSessionPathError,
    InvalidVariableNameError,
    MissingDeliveryTriggerError,
    ModelError,
    SessionNotAwaitingInputError,
    SessionNotParkedError,
    SessionStateError,
)
from archmax.session.records import SessionStatus
from archmax.workflow_tools import load_tools, load_workspace_tools, tool_diagnostics, tool_names

USAGE_ERRORS = (
    InvalidSessionIdError,
    InvalidSessionPathError,
    InvalidVariableNameError,
    EmptyMessageError,
    MissingDeliveryTriggerError,
)
"""Archmax errors that come from command-line input and therefore exit 2 (§11)."""

COMMANDS = (
    "run", "deliver", "decide", "reply", "sessions", "validate", "test", "sweep", "email", "serve", "invoke", "quarantine",
    "schema",
)  # fmt: skip


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one ``error:`` line and exit 2 (raised, not printed)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _common(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS on both levels lets a flag be written before or after the command.
    s = argparse.SUPPRESS
    parser.add_argument("--root", default=s, help="workspace folder holding workflows/<slug>/ (default: .)")
    parser.add_argument("--store", default=s, help="session store: a folder (default <root>/sessions) "
                        "or aws:<table>/<bucket>[/<prefix>] (prefix default: sessions, as the stack)")
    parser.add_argument("--model", default=s, help="model configuration, e.g. scripted:model.yaml, "
                        "bedrock:<model id>, openai:<model> (default: $ARCHMAX_MODEL)")
    parser.add_argument("--json", action="store_true", default=s, help="print the result as JSON")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every command (§11)."""
    parser = _Parser(prog="archmax", description="Run governed agent sessions that park and resume.")
    parser.add_argument("--version", action="version", version=f"archmax {_version()}")
    _common(parser)
    sub = parser.add_subparsers(dest="command", metavar="<command>")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _common(p)
        return p

    run = add("run", "Start a session, or continue the one this firing belongs to (--session, else the "
              "trigger's session path over --variables, else a fresh id), and send it the prompt.")
    run.add_argument("words", nargs="*", metavar="[<workflow>] <prompt...>")
    run.add_argument("--trigger", help="trigger id (default: manual)")
    run.add_argument("--session", help="explicit session id")
    run.add_argument("--session-path", dest="session_path",
                     help="dotted path to the session id inside --variables, e.g. conversation_id")
    _firing_flags(run)
    _delivery_flag(run)
    _record_flag(run)

    deliver = add("deliver", "Deliver an event into a session parked by archmax_wait.")
    deliver.add_argument("session")
    deliver.add_argument("--trigger", help="the event's trigger id (required)")
    deliver.add_argument("--message", help="text that arrived with the event")
    _firing_flags(deliver)
    _delivery_flag(deliver)
    _workflow_flag(deliver)
    _record_flag(deliver)

    decide = add("decide", "Pick a transition of the human state a session is parked at.")
    decide.add_argument("session")
    decide.add_argument("--to", help="the transition's target state")
    decide.add_argument("--comment", help="why the person chose this; kept on the session's trail and "
                        "told to the agent in the next state")
    _workflow_flag(decide)
    _record_flag(decide)

    reply = add("reply", "Send a message to a session parked at a human state (it stays parked).")
    reply.add_argument("session")
    reply.add_argument("words", nargs="*", metavar="<message...>")
    _delivery_flag(reply)
    _workflow_flag(reply)
    _record_flag(reply)

    sessions = add("sessions", "List all sessions, or show one.")
    sessions.add_argument("session", nargs="?")
    _workflow_flag(sessions)
    cli_views.add_flags(sessions)

    validate = add("validate", "Check a workflow and print its diagnostics.")
    validate.add_argument("workflow", nargs="?")

    test = add("test", "Run a workflow's test cases.")
    test.add_argument("words", nargs="*", metavar="[<workflow>] [filter]")

    sweep = add("sweep", "Wake every session whose resume_at is due (trigger 'timer'); finish turns whose process died.")
    sweep.add_argument("--now", help="the instant to sweep at (default: the clock)")
    _workflow_flag(sweep)
    _record_flag(sweep)

    email = add(
        "email",
        "Send a raw email (.eml) to the session of its conversation. A sender who is not a participant of an "
        "existing session (and carries no reply token of it) is quarantined, as on SES.",
    )
    email.add_argument("file")
    email.add_argument("--trigger", help="override the trigger (default: email_received / email_reply)")
    _workflow_flag(email)
    _record_flag(email)

    cli_schema.add_command(sub, _common)

    serve = add("serve", "Serve the Lambda handlers on 127.0.0.1 for local development (no Docker).")
    serve.add_argument("workflow", nargs="?")
    serve.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (0 picks a free one)")
    serve.add_argument("--sweep-every", type=float, default=60.0, metavar="SECONDS", help="seconds between sweeps")

    from archmax.cli_invoke import add_parser as add_invoke

    add_invoke(add)
    from archmax.cli_quarantine import add_parser as add_quarantine

    add_quarantine(add)
    return parser


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("archmax")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _firing_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variables", help="a JSON object, or @<file> holding one")
    p.add_argument("--file", action="append", dest="files", metavar="NAME=PATH",
                   help="give the session the file at PATH: it is copied to scratchpad/attachments/<file name> "
                        "and variable NAME (locked) holds that path; repeatable")


def _record_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", metavar="FILE", help="append every model answer of this command to a cassette; "
                   "replay it with --model scripted:FILE (one cassette per session)")


def _delivery_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delivery-id", dest="delivery_id", metavar="ID",
                   help="a stable id of this event (a message id, an Idempotency-Key): the session applies it "
                        "once; after an error, the same command with the same id finishes the turn instead "
                        "of adding the message again, and a later repeat is a duplicate (exit 0)")


def _workflow_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workflow", help="workflow slug (default: the session's own, or the only one)")


class _Cli:
    """One invocation: parsed arguments, the workspace, the store and the output streams."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(getattr(args, "root", "."))
        self.store_flag: str | None = getattr(args, "store", None)
        self.model_flag: str | None = getattr(args, "model", None)
        self.record_flag: str | None = getattr(args, "record", None)
        self.json = bool(getattr(args, "json", False))
        self.out = sys.stdout
        self.err = sys.stderr
        self._store: Any = None
        self._agent: Any = None  # the last agent built: its workflow names the triggers of a next: hint
        self.target: str | None = None  # the session the command fires into, for the hint after an error

    # ------------------------------------------------------------------ collaborators

    @property
    def store(self) -> Any:
        if self._store is None:
            self._store = open_store(self.store_flag, self.root)
        return self._store

    def context(self) -> list[str]:
        """Flags a printed follow-up command needs to reach the same workspace, store and model."""
        flags: list[str] = []
        if hasattr(self.args, "root"):
            flags += ["--root", str(self.args.root)]
        if self.store_flag is not None:
            flags += ["--store", self.store_flag]
        if self.model_flag is not None:
            flags += ["--model", self.model_flag]
        if self.record_flag is not None:
            flags += ["--record", self.record_flag]
        return flags

    def agent(self, workflow_dir: Path, clock: Any = None) -> Any:
        """An agent for one workflow with its host tools, the configured model and the store."""
        from archmax.agent import create_agent

        model = build_model(model_spec(self.model_flag), record=self.record_flag)
        self._agent = create_agent(
            workflow_dir, self.store, model, tools=load_workspace_tools(workflow_dir), clock=clock
        )
        return self._agent

    def session_workflow(self, session_id: str, missing: type[ArchmaxError] | None = None) -> Path:
        """``--workflow``, else the workflow the session's checkpoint names, else the only one.

        Args:
            session_id: The session the command acts on.
            missing: The operation's error for a session that does not exist (its message says
                so), raised before a workflow is looked for; ``None`` lets the operation decide.
        """
        flag = getattr(self.args, "workflow", None)
        if flag is not None:
            return resolve_workflow(self.root, flag)
        from archmax.session.ids import validate_session_id

        validate_session_id(session_id)
        head = self.store.head(session_id)
        if head is None and missing is not None:
            raise missing(session_id, None)  # type: ignore[call-arg]
        if head is not None:
            found = find_workflow(self.root, head.workflow)
            if found is None:
                raise UsageError(
                    f"session '{session_id}' belongs to workflow '{head.workflow}', which is not under "
                    f"'{self.root / 'workflows'}'; pass --root or --workflow"
                )
            return found
        return only_workflow(self.root, how="pass --workflow <slug>")

    # ------------------------------------------------------------------ output

    def say(self, text: str) -> None:
        print(text, file=self.out)

    def note(self, text: str) -> None:
        print(text, file=self.err)

    def outcome(self, outcome: Any) -> int:
        if self.json:
            self.say(to_json(outcome))
            return 0 if outcome.kind in ("completed", "parked") else 1
        code = print_outcome(
            outcome, self.out, self.err, self.context(), self._agent.spec if self._agent is not None else None
        )
        from archmax.cli_outbound import sent_lines

        for line in sent_lines(self.store, outcome.session_id):
            self.note(line)
        return code

    # ------------------------------------------------------------------ commands

    def cmd_run(self) -> int:
        a = self.args
        words = list(a.words)
        if words and find_workflow(self.root, words[0]) is not None:
            workflow_dir = resolve_workflow(self.root, words.pop(0))
        else:
            workflow_dir = only_workflow(
                self.root, named=words[0] if words else None, how="name it first: archmax run <workflow> <prompt...>"
            )
        variables = parse_variables(a.variables)
        files = parse_files(a.files)
        from archmax.session.variables import check_host_variables

        # What needs no session is checked before resolve_session's warnings are printed, so a bad
        # name is one error line, not a "minted a fresh id" warning for a session never created.
        check_host_variables(variables, files, source="passed to run", session_id=a.session)
        agent = self.agent(workflow_dir)
        resolved = agent.workflow.resolve_session(
            trigger=a.trigger, variables=variables, session_id=a.session, session_path=a.session_path
        )
        if not self.json:
            for warning in resolved.warnings:
                self.note(f"warning: {warning}")
        message = " ".join(words) or None
        self.target = resolved.session_id
        try:
            outcome = agent.workflow.send(
                resolved.session_id, message, trigger=a.trigger, variables=variables, files=files,
                delivery_id=a.delivery_id,
            )
        except DuplicateDeliveryError as exc:
            return self.duplicate(exc)
        return self.outcome(outcome)

    def cmd_deliver(self) -> int:
        a = self.args
        variables = parse_variables(a.variables)
        files = parse_files(a.files)
        self.target = a.session
        agent = self.agent(self.session_workflow(a.session, SessionNotAwaitingInputError))
        try:
            outcome = agent.workflow.deliver(
                a.session, trigger=a.trigger, variables=variables, message=a.message, files=files,
                delivery_id=a.delivery_id,
            )
        except DuplicateDeliveryError as exc:
            return self.duplicate(exc)
        return self.outcome(outcome)

    def cmd_decide(self) -> int:
        a = self.args
        agent = self.agent(self.session_workflow(a.session, SessionNotParkedError))
        return self.outcome(agent.workflow.decide(a.session, to=a.to, comment=a.comment))

    def cmd_reply(self) -> int:
        a = self.args
        self.target = a.session
        agent = self.agent(self.session_workflow(a.session, SessionNotParkedError))
        message = " ".join(a.words)
        if a.delivery_id is None or not self._reply_by_firing(a.session, a.delivery_id):
            return self.outcome(agent.workflow.reply(a.session, message))
        try:  # the firing rule answers a decision park (§3.2) and applies the id once, as reply cannot
            return self.outcome(agent.workflow.send(a.session, message, delivery_id=a.delivery_id))
        except DuplicateDeliveryError as exc:
            return self.duplicate(exc)

    def _reply_by_firing(self, session_id: str, delivery_id: str) -> bool:
        """Whether ``reply --delivery-id`` goes through ``send`` rather than ``reply``.

        It does when the session is parked at a human state, or when its last applied event is this id
        (a retry finishing the turn that id started); otherwise ``reply`` gives its own refusal.
        """
        head = self.store.head(session_id)
        if head is None or head.status == SessionStatus.AWAITING_DECISION:
            return head is not None
        if head.status != SessionStatus.RUNNING:
            return False
        rec = self.store.load(session_id)
        return rec is not None and bool(rec.delivery_ids) and rec.delivery_ids[-1] == delivery_id

    def turn_stopped(self, session_id: str) -> bool:
        """Whether the session is ``running`` with no live lease: a turn stopped part-way (the sweep finishes it).

        Raises:
            StoreError: the head could not be read.
        """
        head = self.store.head(session_id)
        return (
            head is not None
            and head.status == SessionStatus.RUNNING
            and not (head.lease is not None and head.lease.live_at(SystemClock().now()))
        )

    def not_found(self, session_id: str) -> int:
        """Say that ``session_id`` has no checkpoint in this store (the documented error shape under ``--json``); 1."""
        message = f"session '{session_id}' does not exist in this store (archmax sessions lists them)"
        if self.json:  # named as the resolve function names a 404
            self.say(to_json({"error": "NotFound", "message": message, "session_id": session_id, "exit": 1}))
        self.note(f"error: {message}")
        return 1

    def duplicate(self, exc: DuplicateDeliveryError) -> int:
        """A repeated ``--delivery-id``: the event was applied the first time, so this is success."""
        if self.json:
            self.say(to_json({"duplicate": True, "session_id": exc.session_id, "message": str(exc)}))
        else:
            self.note(f"duplicate: {exc}")
        return 0

    def hint_after(self, exc: ArchmaxError) -> str | None:
        """The ``next:`` line after an error that left the target session ``running`` mid-turn, or None.

        A model error (an outage: a turn a retry can cure) and a refusal because the session is
        ``running`` with no live lease both mean a turn stopped part-way: ``archmax sweep`` finishes it
        (§3.12 recovery), and so does the same command with the same ``--delivery-id`` (the id's dead
        turn is continued, not repeated). Rule source: user-test finding 3.
        """
        command_name = self.args.command
        if command_name not in ("run", "deliver", "reply", "decide"):
            return None
        refused = isinstance(exc, SessionStateError) and getattr(exc, "status", None) == "running"
        if not (isinstance(exc, ModelError) or refused):
            return None
        session_id = getattr(exc, "session_id", None) or self.target
        if session_id is None:
            return None
        try:
            if not self.turn_stopped(session_id):
                return None  # not running, or another process is in the turn: it parks or finishes on its own
        except ArchmaxError:
            return None
        sweep = command("archmax", "sweep", *self.context())
        given = getattr(self.args, "delivery_id", None)
        if given is not None and not refused:
            return (f"next: once the model answers, repeat this command (same --delivery-id {given}) or run "
                    f"{sweep}: either finishes the turn of session '{session_id}', which is 'running'")
        if refused:
            return (f"next: session '{session_id}' is 'running' with a turn that stopped part-way: {sweep} "
                    "finishes it (so does the command that started it, repeated with the same --delivery-id)")
        again = (
            "; repeating this command would add the message again (pass --delivery-id to make a retry safe)"
            if command_name in ("run", "reply")
            else ""
        )
        return f"next: once the model answers, {sweep} finishes the turn of session '{session_id}', which is 'running'{again}"

    def cmd_sessions(self) -> int:
        from archmax.session.ids import parent_session_id, validate_session_id
        from archmax.session.results import summary_of

        a = self.args
        cli_views.check_flags(a, UsageError)
        if a.session is not None:
            validate_session_id(a.session)
            record = self.store.load(a.session)
            if record is None:
                return self.not_found(a.session)
            if cli_views.wants_view(a):
                return cli_views.show(self, record, self._spec(record.workflow, {}))
            from archmax.inbound.quarantine import held_in_summary

            held = held_in_summary(self.store, a.session, record.version)
            summary = summary_of(record, parent_session_id(a.session))
            pairs = [(record, summary.model_copy(update={"quarantined": held}) if held else summary)]
        else:
            if not self.store.capabilities.list:
                from archmax.errors import SessionStoreCapabilityError

                raise SessionStoreCapabilityError("list")
            slug = None
            if a.workflow is not None:
                slug = resolve_workflow(self.root, a.workflow).name
            pairs = []
            for sid in self.store.list():
                record = self.store.load(sid)
                if record is not None and (slug is None or record.workflow == slug) and cli_views.keep(record, a.status):
                    pairs.append((record, summary_of(record, parent_session_id(sid))))
        if self.json:
            summaries = [s for _r, s in pairs]
            self.say(to_json(summaries[0] if a.session is not None else summaries))
            return 0
        if not pairs:
            self.note("no sessions")
        specs: dict[str, Any] = {}
        for record, summary in pairs:
            for line in session_lines(summary, record, self._spec(record.workflow, specs), one=a.session is not None):
                self.say(line)
        return 0

    def _spec(self, slug: str, cache: dict[str, Any]) -> Any:
        """The workflow a session names, for the decision context; None when it cannot be loaded."""
        if slug not in cache:
            from archmax.spec import load_workflow

            found = find_workflow(self.root, slug)
            try:
                cache[slug] = load_workflow(found) if found is not None else None
            except ArchmaxError:
                cache[slug] = None
        return cache[slug]

    def cmd_validate(self) -> int:
        from archmax.errors import WorkflowSpecError
        from archmax.spec import load_workflow, validate_workflow

        workflow_dir = resolve_workflow(self.root, self.args.workflow)
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
        if self.json:
            self.say(to_json({
                "ok": ok,
                "diagnostics": [{"path": d.path, "message": d.message, "severity": d.severity} for d in diagnostics],
            }))
        else:
            for d in diagnostics:
                self.say(str(d) if d.severity == "error" else f"{d} (warning)")
            if ok:
                self.note(f"ok: workflow '{workflow_dir.name}' is valid")
        return 0 if ok else 1

    def cmd_sweep(self) -> int:
        from archmax.hosting.sweep import ERROR, RECOVERED, SKIPPED, recover_stale, sweep, sweep_failed

        a = self.args
        now = _instant(a.now) if a.now is not None else format_instant(SystemClock().now())
        if a.workflow is not None:
            targets = [resolve_workflow(self.root, a.workflow)]
        else:
            targets = list(workflows_in(self.root).values())
            if not targets:
                only_workflow(self.root)  # raises the usage error naming the missing workflows
        results: list[tuple[str, str]] = []
        stale: list[tuple[str, str]] = []  # dead turns continued (DESIGN.md §3 "Inbox")
        outcomes: dict[str, Any] = {}  # session id -> the Outcome its wake or recovery returned

        def on_outcome(sid: str, outcome: Any) -> None:
            outcomes[sid] = outcome

        def on_error(sid: str, exc: Exception) -> None:
            self.note(f"error: session '{sid}': {exc}")

        for workflow_dir in targets:
            if not self.store.due(now, workflow=workflow_dir.name) and not self.store.stale(
                now, workflow=workflow_dir.name
            ):
                continue  # nothing due, no dead turn: no model needed
            clock = FakeClock(now) if a.now is not None else None
            agent = self.agent(workflow_dir, clock=clock)
            woken = sweep(agent, now, on_error=on_error, on_outcome=on_outcome)
            results += woken
            stale += recover_stale(
                agent, now, exclude={sid for sid, _ in woken}, on_error=on_error, on_outcome=on_outcome
            )
        recovered = [(sid, kind if kind in (SKIPPED, ERROR) else RECOVERED, kind) for sid, kind in stale]
        if self.json:
            self.say(to_json(
                [{"session_id": sid, "result": kind} for sid, kind in results]
                + [
                    {"session_id": sid, "result": shown, **({"outcome": kind} if shown == RECOVERED else {})}
                    for sid, shown, kind in recovered
                ]
            ))
        else:
            if not results and not recovered:
                self.note(f"nothing due at {now}")
            for sid, shown in results + [(sid, shown) for sid, shown, _kind in recovered]:
                for line in sweep_lines(sid, shown, outcomes.get(sid)):
                    self.say(line)
        return 1 if sweep_failed(results + stale) else 0

    def cmd_schema(self) -> int:
        return cli_schema.run(self)

    def cmd_serve(self) -> int:
        from archmax.serve import main_loop, serve

        workflow_dir = resolve_workflow(self.root, self.args.workflow) if self.args.workflow else only_workflow(self.root)
        if self.store_flag is not None and self.store_flag.startswith("aws:"):
            raise UsageError("serve uses SESSIONS_TABLE / SESSIONS_BUCKET from the environment for the AWS store")
        store_dir = Path(self.store_flag) if self.store_flag else self.root / "sessions"
        model = build_model(model_spec(self.model_flag))
        main_loop(serve(workflow_dir, root=store_dir, port=self.args.port, sweep_interval_s=self.args.sweep_every, model=model))
        return 0

    def cmd_quarantine(self) -> int:
        from archmax.cli_quarantine import run

        return run(self)

    def cmd_invoke(self) -> int:
        from archmax.cli_invoke import run

        return run(self.args, self.out)

    def cmd_test(self) -> int:
        words = list(self.args.words)
        if len(words) > 2:
            raise UsageError("test takes at most a workflow and a filter")
        workflow_dir: Path | None = None
        if words and (len(words) == 2 or find_workflow(self.root, words[0]) is not None):
            workflow_dir = resolve_workflow(self.root, words.pop(0))
        # one word that is no workflow is a filter only in a one-workflow workspace: otherwise it was
        # meant as the workflow, and is reported as not found (user-test finding 10)
        workflow_dir = workflow_dir or only_workflow(
            self.root, named=words[0] if words else None, how="name it first: archmax test <workflow> [filter]"
        )
        case_filter = words[0] if words else None
        try:
            from archmax.cases import format_results, results_to_json, run_tests
        except ImportError as exc:
            self.note(f"error: archmax test: the case runner is not available: {exc}")
            return 1
        spec = model_spec(self.model_flag)
        result = run_tests(
            workflow_dir,
            filter=case_filter,
            store=self.store if self.store_flag is not None else None,
            tools=load_workspace_tools(workflow_dir),
            model=build_model(spec) if spec is not None else None,
        )
        if self.json:
            self.say(to_json(results_to_json(result)))
        else:
            self.say(format_results(result))
        return int(result.get("exit_code", 1))

    def cmd_email(self) -> int:
        from archmax.inbound.email import parse_email

        a = self.args
        try:
            raw = Path(a.file).read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read '{a.file}': {exc.strerror or exc}") from exc
        firing = parse_email(raw, trigger=a.trigger)
        from archmax.outbound.config import reply_threader

        firing = reply_threader(self.store)(firing, ())  # a reply to what we sent: its session
        workflow_dir = resolve_workflow(self.root, a.workflow, how="pass --workflow <slug>")
        agent = self.agent(workflow_dir)
        resolved = agent.workflow.resolve_session(trigger=firing.trigger, variables=firing.variables)
        if not self.json:
            for warning in [*firing.warnings, *resolved.warnings]:
                self.note(f"warning: {warning}")
            self.note(
                f"email: {firing.variables.get('subject')!r} from {firing.variables.get('from')} "
                f"-> session '{resolved.session_id}' ({firing.trigger}: {resolved.disposition})"
            )
        sid = resolved.session_id
        if self._quarantined(sid, firing, raw):
            return 0  # held, as the SES path holds it: an operator decides
        try:
            outcome = agent.workflow.send(
                sid,
                firing.message,
                trigger=firing.trigger,
                variables=firing.variables,
                files=dict(firing.files) or None,
                delivery_id=firing.delivery_id,
            )
        except DuplicateDeliveryError as exc:
            self.note(f"duplicate: {exc}")  # the event was applied the first time: success
            return 0
        except CallerError:
            raise  # refused: nothing was applied and the sender is admitted to nothing
        except ArchmaxError:
            # A model or store failure after the claim: the mail is in the session (the sweep finishes
            # its turn), so its sender is a participant, and a retry of the same file is admitted.
            self._admit_sender(sid, firing, if_claimed=True)
            raise
        self._admit_sender(sid, firing)
        return self.outcome(outcome)

    def _admit_sender(self, session_id: str, firing: Any, *, if_claimed: bool = False) -> None:
        """Note the sender of a mail the session applied as a participant (``if_claimed``: only if it has a checkpoint)."""
        from archmax.inbound.mail_auth import record_participant

        try:
            if not if_claimed or self.store.head(session_id) is not None:
                record_participant(self.store, session_id, firing.variables.get("from"))
        except ArchmaxError as exc:  # the store is failing too: the next mail from this sender is held for review
            self.note(f"warning: sender not noted as a participant of session '{session_id}': {exc}")

    def _quarantined(self, session_id: str, firing: Any, raw: bytes) -> bool:
        """Hold a mail whose sender may not speak into the existing session (issue 13 item 1's participant rule).

        A local file has no receipt verdicts, so the authentication policy is not checked here (the
        operator vouches for the file); the participant rule is, as on SES. Held mail is listed and
        released with ``archmax quarantine``.
        """
        import hashlib
        import os

        from archmax.inbound.mail_auth import speaker_refusal
        from archmax.inbound.quarantine import QuarantinedMail, hold
        from archmax.outbound.config import token_session_from_env

        if self.store.head(session_id) is None:
            return False  # a new conversation: its sender becomes the first participant
        read_token = token_session_from_env(os.environ)
        token_sid = read_token(firing.variables.get("to") or []) if read_token else None
        reason = speaker_refusal(self.store, session_id, firing.variables.get("from"), token_session_id=token_sid)
        if reason is None:
            return False
        held = QuarantinedMail.of(  # the file's hash: a safe file name, the same for the same file
            firing, session_id=session_id, delivery_id=hashlib.sha256(raw).hexdigest()[:32], reason=reason,
            at=format_instant(SystemClock().now()),
        )  # fmt: skip
        hold(self.store, held, raw)
        if self.json:
            self.say(to_json({"session_id": session_id, "quarantined": reason, "delivery_id": held.delivery_id}))
        else:
            self.note(f"quarantined: {reason}")
            release = command("archmax", "quarantine", "release", session_id, held.delivery_id, *self.context())
            self.note(f"next: {release}")
        return True


def _instant(value: str) -> str:
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
        flags = [word for word in extra if word.startswith("-")]
        if flags or not isinstance(getattr(args, "words", None), list):
            raise UsageError(f"unrecognized arguments: {' '.join(flags or extra)}")
        args.words = [*args.words, *extra]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``archmax`` command and return its exit code (§11).

    Args:
        argv: The arguments after the program name; ``None`` reads ``sys.argv[1:]``.

    Returns:
        0 for success or a park; 1 for a failed/rejected result or an ``ArchmaxError``; 2 for a usage error.
    """
    as_json = "--json" in (sys.argv[1:] if argv is None else argv)
    cli: _Cli | None = None
    try:
        args = _parse(argv)
        if args.command is None:
            raise UsageError(f"choose a command: {', '.join(COMMANDS)} (archmax -h for help)")
        cli = _Cli(args)
        return getattr(cli, f"cmd_{args.command}")()
    except SystemExit as exc:  # -h/--help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except UsageError as exc:
        return _error(exc, 2, as_json)
    except USAGE_ERRORS as exc:
        return _error(exc, 2, as_json)
    except BrokenPipeError:  # `archmax sessions | head`: the reader left; no traceback for that
        _silence_stdout()
        return 1
    except ArchmaxError as exc:
        code = _error(exc, 1, as_json)
        hint = cli.hint_after(exc) if cli is not None and not as_json else None
        if hint:
            print(hint, file=sys.stderr)
        return code


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's final flush meets no closed pipe."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout with no file descriptor (captured by a test): nothing to flush
        pass


def _error(exc: Exception, code: int, as_json: bool) -> int:
    """``error: <message>`` on stderr; under ``--json`` also ``{error, message, session_id?, exit}`` on stdout."""
    if as_json:
        body = {"error": type(exc).__name__, "message": str(exc), "exit": code}
        session_id = getattr(exc, "session_id", None)
        if session_id is not None:
            body["session_id"] = session_id
        print(to_json(body))
    print(f"error: {exc}", file=sys.stderr)
    return code

if __name__ == "__main__":
    sys.exit(main())
