"""Assembly: ``create_agent`` and the objects hosts call.

Rule source: BEHAVIOUR.md §3 (assembly, operations), §3.10 (``agent.sessions``); seed
"Delivering the event", "Starting versus resuming", "Files handed to a session".

Layering (issue 23): ``agent.workflow`` is a typed facade: it parses the session id once
(:func:`~archmax.session.ids.parse_session_id`), builds a firing (:mod:`archmax.session.firing`)
and calls :meth:`Agent.apply`, which passes it through the engine's one door
(:func:`archmax.engine.apply`, or a host's wrapper of it) and then runs what follows the commit
(the in-process outbox dispatch) from the record the door answers. Hosts call the same
``Agent.apply``; the engine imports nothing of this module.

Example:
    >>> agent = create_agent("workflows/support-inbox", model=ScriptedModel([...]))
    >>> outcome = agent.workflow.send("AAQk-1", "Where is my order?", trigger="email_received")
    >>> outcome.kind
    'parked'
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from archmax.clock import Clock, SystemClock
from archmax.engine import firing_rule
from archmax.engine.artifacts import ARTIFACTS, render
from archmax.engine.children import descendants, runtime_of
from archmax.engine.door import Door, apply, run_child
from archmax.engine.events import EventEmitter, EventHandler
from archmax.engine.runtime import Runtime
from archmax.engine.tools import host_tools_from
from archmax.engine.work import releases
from archmax.engine.workflow_registry import WorkflowRegistry
from archmax.errors import (
    MissingHookExecutorError,
    SessionNotResumableError,
    SessionStoreCapabilityError,
    UnknownArtifactError,
)
from archmax.inbound.quarantine import held_in_summary
from archmax.models.base import Model
from archmax.session.files import check_seed_path, encode_seed_value
from archmax.session.firing import Decide, Deliver, EngineFiring, Expire, Recover, Reply, Send, Turn
from archmax.session.ids import parent_session_id, parse_session_id
from archmax.session.paths import parse_session_path
from archmax.session.records import Checkpoint, Message
from archmax.session.results import Outcome, Resolution, SessionSummary, summary_of
from archmax.session.variables import check_host_variables
from archmax.spec import Workflow, load_workflow
from archmax.stores.base import Capability, SessionStore


class WorkflowOperations:
    """``agent.workflow``: send, deliver, reply, decide, recover, resolve_session (§3.4–§3.8).

    A typed facade: each method parses the session id (the edge's one check), builds the firing and
    passes it through the agent's door (:meth:`Agent.apply`).
    """

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    def send(
        self,
        session_id: str,
        message: str | None = None,
        *,
        trigger: str | None = None,
        variables: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        delivery_id: str | None = None,
        park_id: str | None = None,
    ) -> Outcome:
        """Apply the firing rule to one session: a new turn, a delivery, or a reply (§3.2, §3.4).

        Args:
            session_id: The explicit session id (§4.1).
            message: The user's text (required for a turn or a reply; optional for a delivery).
            trigger: Trigger id; defaults to ``manual``.
            variables: name → JSON value, seeded locked.
            files: variable name → ``FileIn`` / ``{name, content}``; placed under ``scratchpad/attachments/``.
            delivery_id: A stable id of the event (SES message id, Idempotency-Key); a session applies one id once.
            park_id: The park this firing answers (a mail's reply token names one, §5.11, issue 21 item 6);
                unless it is the session's current park, the firing is refused and nothing changes.

        Returns:
            The :class:`Outcome` (``disposition`` says what the session's state made of the firing).

        Raises:
            InvalidSessionIdError, SessionNotResumableError, InvalidVariableNameError, WorkflowDisabledError,
            EmptyMessageError, UnknownTriggerError, InvalidFilePathError, SessionStoreCapabilityError,
            DuplicateDeliveryError (the event was applied before; nothing changed), SessionNotAwaitingInputError
            (``park_id`` is not the current park; nothing changed).
        """
        firing = Send(parse_session_id(session_id), message, trigger, variables, files, delivery_id, park_id=park_id)
        return self._agent.apply(firing)  # type: ignore[return-value]  # a send always answers

    def deliver(
        self,
        session_id: str,
        *,
        trigger: str | None = None,
        variables: Mapping[str, Any] | None = None,
        message: str | None = None,
        files: Mapping[str, Any] | None = None,
        delivery_id: str | None = None,
        park_version: int | None = None,
        park_id: str | None = None,
    ) -> Outcome:
        """Resume a session parked by ``archmax_wait`` (§3.5). Any trigger id works; it is never matched.

        ``park_version``, when given, names the park this delivery is for (the version
        ``store.due_parks`` listed it at): the sweep's timers pass it, so a timer wakes only the park
        it found due.

        Raises:
            SessionNotAwaitingInputError: the session is not parked on ``input`` (also the loser of a race),
                or is no longer at ``park_version``.
            MissingDeliveryTriggerError: blank or missing trigger.
            InvalidVariableNameError: a bad variable name (source ``delivered to session '<id>'``).
            DuplicateDeliveryError: ``delivery_id`` was applied before; nothing changed.

        ``park_id``, when given, names the park this delivery answers (§5.11, ``Outcome.park_id``):
        one that is no longer the session's current park raises ``SessionNotAwaitingInputError``
        naming both parks, and nothing changes.
        """
        firing = Deliver(
            parse_session_id(session_id), trigger, variables, message, files, delivery_id, park_version, park_id
        )
        return self._agent.apply(firing)  # type: ignore[return-value]

    def reply(self, session_id: str, message: str, *, park_id: str | None = None) -> Outcome:
        """Answer a person's message at a decision park; the session stays parked (§3.6).

        Raises:
            SessionNotParkedError, EmptyMessageError; SessionNotAwaitingInputError when ``park_id``
            names a park that is no longer current (§5.11), nothing changed.
        """
        return self._agent.apply(Reply(parse_session_id(session_id), message, park_id))  # type: ignore[return-value]

    def decide(
        self, session_id: str, *, to: str | None = None, comment: str | None = None, park_id: str | None = None
    ) -> Outcome:
        """Pick one of the parked human state's transitions (§3.7).

        Raises:
            SessionNotParkedError, InvalidDecisionTargetError; SessionNotAwaitingInputError when
            ``park_id`` names a park that is no longer current (§5.11), nothing changed.
        """
        return self._agent.apply(Decide(parse_session_id(session_id), to, comment, park_id))  # type: ignore[return-value]

    def expire(self, session_id: str, *, park_version: int | None = None, now: str | None = None) -> Outcome:
        """Fire ``timeout`` into a decision park whose deadline passed (BEHAVIOUR.md §5.11; the sweep's job).

        The state's ``on_timeout`` transition is taken; without one the turn fails (§5.7) with
        ``wait timed out after <duration>``.

        Raises:
            SessionNotParkedError: not parked on ``decision``.
            SessionNotAwaitingInputError: no longer at ``park_version``, or the deadline has not passed.
        """
        return self._agent.apply(Expire(parse_session_id(session_id), park_version, now))  # type: ignore[return-value]

    def recover(self, session_id: str) -> Outcome | None:
        """Finish a turn whose process died (expired lease): take it over and continue it (§3.12).

        Returns:
            The Outcome (``recovered=True``), or ``None`` when the session is not mid-turn.

        Raises:
            InvalidSessionIdError, SessionNotResumableError (the lease is still live).
        """
        return self._agent.apply(Recover(parse_session_id(session_id)))

    def resolve_session(
        self,
        *,
        trigger: str | None = None,
        variables: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        session_path: str | None = None,
    ) -> Resolution:
        """What a firing would do, without writing anything (§3.8).

        Raises:
            InvalidSessionPathError, InvalidSessionIdError, UnknownSessionTriggerError, SessionNotResumableError.
        """
        explicit = parse_session_id(session_id) if session_id is not None else None
        return firing_rule.resolve_session(
            self._agent.runtime, trigger=trigger, variables=variables, session_id=explicit, session_path=session_path
        )


class Sessions:
    """``agent.sessions``: get, list, messages, seed, delete (§3.10)."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._store = runtime.store

    def _load(self, session_id: str) -> Checkpoint | None:
        return self._store.load(parse_session_id(session_id))

    def get(self, session_id: str) -> SessionSummary | None:
        """The summary of a session, or None when it has no checkpoint; ``quarantined`` names held mail (issue 13).

        One store read; the quarantine folder is listed only when the store cannot say that nothing
        is held (on AWS: one GetItem when the item's hint is empty, issue 10).
        """
        rec = self._load(session_id)
        if rec is None:
            return None
        summary = summary_of(rec, parent_session_id(session_id), self._rt.now())
        held = held_in_summary(self._store, session_id, rec.version)
        return summary.model_copy(update={"quarantined": held}) if held else summary

    def list(self) -> list[SessionSummary]:
        """Every session with a checkpoint, sorted by id.

        Raises:
            SessionStoreCapabilityError: the store lacks ``list``.
        """
        if not self._store.capabilities.list:
            raise SessionStoreCapabilityError("list")
        out = []
        for sid in sorted(self._store.list()):
            rec = self._store.load(sid)
            if rec is not None:
                out.append(summary_of(rec, parent_session_id(sid), self._rt.now()))
        return out

    def messages(self, session_id: str) -> builtins.list[Message]:
        """The latest committed transcript, notes included, or ``[]``."""
        rec = self._load(session_id)
        return list(rec.messages) if rec else []

    def artifact(self, session_id: str, name: str) -> str | None:
        """One artifact of a session, materialized from its latest checkpoint, on any store (§9.5).

        Artifacts are views of the checkpoint: this reads the checkpoint (one store read) and renders
        the view, so it is current even where the store keeps no artifact files (AWS).

        Args:
            session_id: The session (§4.1).
            name: ``trail``, ``variables``, ``metadata`` (JSON documents), ``trajectory`` (JSON Lines:
                one message per line, notes included) or ``graph``.

        Returns:
            The artifact's text (what ``artifacts/<name>.json`` / ``trajectory.jsonl`` holds), or
            ``None`` when the session has no checkpoint.

        Raises:
            InvalidSessionIdError: ``session_id`` is malformed.
            UnknownArtifactError: ``name`` is not one of the five.
        """
        if name not in ARTIFACTS:
            raise UnknownArtifactError(name, ARTIFACTS, session_id=session_id)
        rec = self._load(session_id)
        return render(name, rec, self._rt.workflow) if rec is not None else None

    def _refuse_live(self, session_id: str) -> None:
        rec = self._load(session_id)
        if rec is not None and firing_rule.lease_live(self._rt, rec):
            raise SessionNotResumableError(session_id, str(rec.status))

    def seed(self, session_id: str, files: Mapping[str, Any]) -> None:
        r"""Write fixture files at the paths given; seeds no variable and creates no checkpoint (§3.10).

        Args:
            session_id: The session whose folder receives the files (§4.1); it need not have a checkpoint.
            files: path → ``str`` (verbatim) | ``bytes`` (raw; needs ``upload_files``) | JSON value
                (``json.dumps(v, indent=2) + "\n"``). Paths are root-level files or under ``scratchpad/``;
                existing files are overwritten.

        Raises:
            InvalidSessionIdError: ``session_id`` is malformed.
            SessionNotResumableError: a live lease is held on the session.
            InvalidFilePathError: a path is neither a root-level file nor under ``scratchpad/`` (internal
                folders, ``..``, absolute paths); nothing is written.
            SessionStoreCapabilityError: a ``bytes`` value on a store without ``upload_files`` (names the path).
        """
        parse_session_id(session_id)
        self._refuse_live(session_id)
        texts: dict[str, str] = {}
        blobs: dict[str, bytes] = {}
        for path, value in files.items():
            check_seed_path(path, session_id=session_id)
            encoded = encode_seed_value(value)
            if isinstance(encoded, bytes):
                if not self._store.capabilities.upload_files:
                    raise SessionStoreCapabilityError("upload_files", path, session_id=session_id)
                blobs[path] = encoded
            else:
                texts[path] = encoded
        if texts:
            self._store.seed(session_id, texts)
        if blobs:
            self._store.upload_files(session_id, blobs)

    def delete(self, session_id: str) -> bool:
        """Remove a session's folder and checkpoints, and its sub-workflow children's; the id then starts over.

        Children (and theirs, down the chain) are found from the session's record, never by listing
        the store (:func:`archmax.engine.children.descendants`), and go first: a crash midway leaves
        the session, whose record still names the rest, and deleting it again finishes the job. A
        restarted session so never meets the old pair's children (§3.10, §5.10, issue 22).

        Returns:
            Whether anything existed under ``session_id`` itself.

        Raises:
            SessionStoreCapabilityError, InvalidSessionIdError.
            SessionNotResumableError: the session or one of its children is under a live lease;
                nothing is deleted.
        """
        parse_session_id(session_id)
        if not self._store.capabilities.delete:
            raise SessionStoreCapabilityError("delete", session_id=session_id)
        rec = self._load(session_id)
        chain = [*descendants(self._rt, rec), rec] if rec is not None else []
        for each in chain:
            if firing_rule.lease_live(self._rt, each):
                raise SessionNotResumableError(each.session_id, str(each.status))
        for child in chain[:-1]:
            (runtime_of(self._rt, child) or self._rt).artifacts.forget(child.session_id)
            self._store.delete(child.session_id)
        self._rt.artifacts.forget(session_id)
        return self._store.delete(session_id)


class Agent:
    """An assembled workflow runtime: ``agent.workflow``, ``agent.sessions``, ``agent.invoke``.

    Args:
        runtime: What ``create_agent`` assembled.
        door: The engine's door as this agent calls it: ``archmax.engine.apply`` (the default) or a
            wrapper of it with the same signature (a host's telemetry: ``Agent(agent.runtime,
            telemetry.door(apply))``, :class:`archmax.engine.door.Door`).
    """

    def __init__(self, runtime: Runtime, door: Door = apply) -> None:
        self.runtime = runtime
        self._door = door
        self.workflow = WorkflowOperations(self)
        self.sessions = Sessions(runtime)

    def apply(self, firing: EngineFiring) -> Outcome | None:
        """Pass one firing through the engine's door, then run its consequences from the committed record.

        The consequence is the in-process outbox dispatch (``create_agent(outbound=...)``): it sends
        what the operation's commits recorded, of every session it let go of (a caller and its child,
        §5.10), and never fails the operation (DESIGN.md §3). An operation that raises an error after
        letting a session go (a child finished, then its caller's next model call met an outage) still
        sends what it committed, then the error goes on (issue 20); a process that dies sends nothing.

        Args:
            firing: A firing of :mod:`archmax.session.firing` (``Send``, ``Turn``, ``Deliver``, ``Reply``,
                ``Decide``, ``Recover``) whose session id was parsed at the edge.

        Returns:
            The :class:`Outcome`; ``None`` for a ``Recover`` that found no dead turn.
        """
        with releases() as released:  # what an operation that raises let go of reaches this collection
            try:
                applied = self._door(self.runtime, firing)
            except Exception:  # not a BaseException: a process that dies sends nothing
                self._dispatch(list(released.values()))  # a child finished before its caller's error (issue 20)
                raise
        self._dispatch(applied.to_send())  # the caller's and its child's, when one operation wrote both
        return applied.outcome

    def _dispatch(self, records: builtins.list[Checkpoint]) -> None:
        """Send the outboxes of ``records`` in-process (``create_agent(outbound=...)``); never raises a send's error."""
        if self.runtime.outbound is None or not records:
            return
        from archmax.outbound.config import dispatch_after_operation  # mail modules load where one sends

        for record in records:
            dispatch_after_operation(self.runtime.outbound, record, self.runtime.warn)

    @property
    def spec(self) -> Workflow:
        """The validated workflow this agent was assembled with (§2, §3 "Assembly")."""
        return self.runtime.workflow

    @property
    def store(self) -> SessionStore:
        """The session store: the one given to ``create_agent``, else ``FilesystemStore("./sessions")`` (§3, §9.1)."""
        return self.runtime.store

    def invoke(
        self,
        session_id: str | None = None,
        *,
        message: str,
        trigger: str | None = None,
        variables: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        session_path: str | None = None,
    ) -> Outcome:
        """Always open a new turn (§3.9). An input park is abandoned; a decision park is re-presented.

        Raises:
            SessionNotResumableError, EmptyMessageError, UnknownTriggerError, InvalidSessionIdError,
            InvalidSessionPathError, InvalidVariableNameError.
        """
        explicit = parse_session_id(session_id) if session_id is not None else None
        return self.apply(Turn(message, explicit, trigger, variables, files, session_path))  # type: ignore[return-value]


def _model_resolver(model: Model | None, base_dir: Path | None = None) -> Callable[[str | None], Model]:
    """The model for a state's ``model:`` override (DESIGN.md §5: choosing a model is configuration).

    None → the default (``model``, else ``ARCHMAX_MODEL``); an adapter spec (``scripted:``,
    ``bedrock:``, ``openai:``) → that adapter, built once per agent, a relative ``scripted:`` path
    read from ``base_dir`` (the workflow folder); a bare model id → the default adapter, which reads
    ``request.model``.
    """
    cache: dict[str | None, Model] = {}

    def model_for(override: str | None) -> Model:
        from archmax.models import is_model_spec, model_from_config

        if override is not None and not is_model_spec(override):
            override = None  # a bare per-state id is the default adapter's business (it reads request.model)
        if override is None and model is not None:
            return model
        if override not in cache:
            cache[override] = model_from_config(override, base_dir=base_dir if override is not None else None)
        return cache[override]

    return model_for


def _outbound(outbound: Any, store: SessionStore, clock: Clock) -> Any:
    """The in-process dispatcher ``create_agent(outbound=...)`` asks for (None: from the environment)."""
    if outbound is False:
        return None
    if outbound is None and Capability.OUTBOX_STREAM in store.capabilities:
        return None  # the table's stream sends (the outbound function): nothing on the operation's path
    if outbound is None:
        from archmax.outbound.config import dispatcher_from_env

        return dispatcher_from_env(store, clock=clock)
    return outbound


def create_agent(
    workflow: str | os.PathLike[str] | Workflow,
    store: SessionStore | None = None,
    model: Model | str | None = None,
    *,
    tools: Iterable[Any] | Mapping[str, Any] | None = None,
    session_path: str | None = None,
    variables: Mapping[str, Any] | None = None,
    on_event: EventHandler | None = None,
    clock: Clock | None = None,
    lease_ttl_s: float | None = None,
    model_overrides: bool | None = None,
    hooks: Mapping[str, Callable[..., Any]] | None = None,
    hook_model: Model | None = None,
    outbound: Any = None,
    workflows: Mapping[str, str | os.PathLike[str] | Workflow] | None = None,
) -> Agent:
    """Assemble an agent for one workflow (§3).

    Args:
        workflow: A workflow folder / ``workflow.yaml`` path, or a loaded :class:`Workflow`.
        store: Where sessions live; ``None`` → ``FilesystemStore("./sessions")`` (the embedded default).
        model: The model adapter, or a spec string (``scripted:<file>``, ``bedrock:<id>``, ``openai:<model>``);
            ``None`` → the model configured by ``ARCHMAX_MODEL``, built before the first operation that
            would call it touches a session (so a missing configuration refuses the firing, writing nothing).
        tools: Host tools (callables, ``HostTool``s, or a name → callable mapping).
        session_path: The assembly's session path (§4.2 level 3).
        variables: Assembly seeds, applied locked at every turn opening.
        on_event: Subscriber for lifecycle events (§3.11).
        clock: Injected clock (default: the wall clock).
        lease_ttl_s: Lease time-to-live in seconds (default 900).
        model_overrides: Whether a state's ``model:`` picks its own model (``None``/``True``, the default).
            ``False`` sends every call to ``model`` — what a scripted test case needs to stay offline and
            deterministic (§10.4).
        hooks: Executors of the custom hook kinds the workflow declares in ``extensions.hooks``:
            kind → ``fn(ctx: HookContext, config) -> verdict`` (§2.4).
        hook_model: With ``model_overrides=False``, the model rubric hooks grade with when neither the
            rubric nor its state names one (``None`` → ``ARCHMAX_MODEL``): rubric hooks always use their
            configured models, never a case's script (§10.4). Otherwise rubrics use the agent's models.
        outbound: The dispatcher that sends each operation's outbound messages in-process after its
            commit (:class:`archmax.outbound.Dispatcher`); ``None`` builds it from the environment
            (:func:`archmax.outbound.config.dispatcher_from_env`: ``.eml`` files, SMTP, SES, EventBridge),
            except for a store that sends from its change stream (``AwsStore``: the outbound function
            sends, DESIGN.md §3), where ``None`` sends nothing in-process; ``False`` sends nothing in-process.
        workflows: Sub-workflows by slug (a folder, its ``workflow.yaml``, or a loaded :class:`Workflow`),
            for ``archmax_workflow_<slug>`` tools whose workflow is not the folder ``workflows/<slug>/``
            beside this one (§5.10). Children share this agent's store, model, tools, hooks and clock.

    Raises:
        WorkflowSpecError, ReservedToolNameError, InvalidSessionPathError, InvalidVariableNameError,
        MissingHookExecutorError (a declared custom hook kind without an executor),
        ModelConfigurationError (a model spec string or a state's ``model:`` spec that cannot be built).
    """
    spec = workflow if isinstance(workflow, Workflow) else load_workflow(Path(workflow))
    if isinstance(model, str):
        from archmax.models import model_from_config

        model = model_from_config(model, base_dir=spec.root)
    elif model is not None and not isinstance(model, Model):
        raise TypeError(f"model must be a Model (with .complete) or a spec string, not {type(model).__name__}")
    executors = dict(hooks or {})
    missing = [kind for kind in spec.hook_kinds if kind not in executors]
    if missing:
        raise MissingHookExecutorError(spec.slug, missing)
    host_tools = host_tools_from(tools)
    path = parse_session_path(session_path, "the agent's session_path") if session_path is not None else None
    check_host_variables(variables, None, source="seeded by create_agent", session_id=None)
    if store is None:
        from archmax.stores.filesystem import FilesystemStore

        store = FilesystemStore(Path("sessions"))
    clock = clock or SystemClock()
    events = EventEmitter(on_event, clock)
    ttl = 900.0 if lease_ttl_s is None else float(lease_ttl_s)

    shared = _model_resolver(model, spec.root)  # the default model is built once, for callers and children

    def make_runtime(workflow_spec: Workflow) -> Runtime:
        own = shared if workflow_spec is spec else _model_resolver(model, workflow_spec.root)

        def resolver(override: str | None) -> Model:
            from archmax.models import is_model_spec

            return shared(None) if override is None or not is_model_spec(override) else own(override)

        scripted = model_overrides is False  # one model answers every call, states' own included (§10.4)
        return Runtime(
            workflow=workflow_spec,
            store=store,
            model_for=(lambda _override: resolver(None)) if scripted else resolver,
            host_tools=host_tools,
            clock=clock,
            events=events,
            lease_ttl_s=ttl,
            hook_executors=executors,
            hook_model_for=_model_resolver(hook_model, workflow_spec.root) if scripted else resolver,
            workflows=registry,
            runner=run_child,
        )

    registry = WorkflowRegistry(make_runtime, workflows)
    runtime = make_runtime(spec)
    runtime.assembly_variables = dict(variables or {})
    runtime.session_path = path
    runtime.outbound = _outbound(outbound, store, clock)  # the caller speaks to the person; children through it
    registry.add(runtime)
    for state in spec.states.values():  # a state's own model spec fails at assembly, not mid-turn
        if state.model and model_overrides is not False:
            runtime.model_for(state.model)
    return Agent(runtime)
