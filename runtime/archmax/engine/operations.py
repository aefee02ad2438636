"""The firing operations: send, deliver, reply, decide, invoke, resolve_session.

Rule source: BEHAVIOUR.md §3 (operations, validation order, lease), §4.2 (id precedence),
§8 (turn boundary), §9.5 (artifacts, file placement); seed "Delivering the event",
"Starting versus resuming".

Every operation validates (1) the id, (2) the session's state, (3) the other arguments, before
it writes anything; then it claims the session with a conditional commit that takes the lease.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from archmax.engine import subworkflows
from archmax.engine.artifacts import ArtifactWriter
from archmax.engine.deliveries import refuse_duplicate, remember_delivery
from archmax.engine.loop import TurnLoop
from archmax.engine.placement import Placement, discard_files, place_firing_files, prepare_files, session_file_exists
from archmax.engine.runtime import Runtime
from archmax.engine.work import Work
from archmax.errors import (
    CommitConflictError,
    EmptyMessageError,
    InvalidDecisionTargetError,
    MissingDeliveryTriggerError,
    SessionNotAwaitingInputError,
    SessionNotParkedError,
    SessionNotResumableError,
    UnknownSessionTriggerError,
    UnknownTriggerError,
    WorkflowDisabledError,
)
from archmax.outbound.config import dispatch_after_operation
from archmax.session.ids import mint_session_id, validate_session_id
from archmax.session.notes import decision_note_text, event_note_text, make_note
from archmax.session.paths import SessionPath, parse_session_path, resolve_session_id
from archmax.session.records import (
    PARKED_STATUSES,
    Checkpoint,
    Message,
    SessionStatus,
    is_finished,
)
from archmax.session.results import Outcome, Resolution, exit_of, reply_of, variables_view
from archmax.session.variables import check_host_variables, seed_host_variables, set_trigger_variable
from archmax.spec import check_value_type
from archmax.stores.base import load_if

Disposition = Literal["turn", "resume", "reply"]
INTERRUPTED = "interrupted: the process running this turn stopped before this call returned"


class Operations:
    """The operations of one assembled agent (``agent.workflow`` and ``agent.invoke`` delegate here)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.artifacts = ArtifactWriter(rt.store, rt.workflow, rt.warn)
        self._snapshots: set[str] = set()  # spec hashes this agent has written to _specs/ (§9.4)

    # ------------------------------------------------------------------ classification

    def lease_live(self, rec: Checkpoint) -> bool:
        """A lease is live while ``expires_at > now`` (§3.12)."""
        return rec.lease is not None and rec.lease.live_at(self.rt.now())

    def parked_channel(self, rec: Checkpoint | None) -> str | None:
        """The channel a session is parked on, or None: status ``awaiting_*``, a record, no live lease (§3.1)."""
        if rec is None or self.lease_live(rec):
            return None
        if rec.status == SessionStatus.AWAITING_INPUT and rec.pending_input is not None:
            return "input"
        if rec.status == SessionStatus.AWAITING_DECISION and rec.pending_decision is not None:
            return "decision"
        return None

    def classify(self, session_id: str, rec: Checkpoint | None) -> tuple[Disposition, bool]:
        """The firing rule (§3.2): ``(disposition, recovered)``.

        Raises:
            SessionNotResumableError: the session is mid-turn under a live lease.
        """
        if rec is None or is_finished(rec.status):
            return "turn", False
        channel = self.parked_channel(rec)
        if channel == "input":
            return "resume", False
        if channel == "decision":
            return "reply", False
        if self.lease_live(rec):
            raise SessionNotResumableError(session_id, str(rec.status))
        return "turn", True  # running (or parked mid-handoff) with an expired lease: take it over

    def preflight_model(self, state: str | None) -> None:
        """Build the model a call in ``state`` would use, before the session is claimed.

        A missing configuration then refuses the firing and writes nothing (BEHAVIOUR.md conventions:
        a raising call leaves every stored record as it was; DESIGN.md §5 model configuration).

        Args:
            state: The slug the turn will run in; ``None``, an undeclared slug or a state without
                ``model:`` uses the agent's default model.

        Raises:
            ModelConfigurationError: the state's ``model`` (or the default) is not configured.
            ModelScriptError: a ``scripted:`` model names a file holding an invalid script.
        """
        states = self.rt.workflow.states
        self.rt.model_for(states[state].model if state in states else None)

    def load(self, session_id: str) -> Checkpoint | None:
        """The latest committed checkpoint of a session, or ``None`` when it has none (§9.1).

        Raises:
            InvalidSessionIdError: ``session_id`` breaks §4.1; checked before the store is read (§3.3).
        """
        validate_session_id(session_id)
        return self.rt.store.load(session_id)

    # ------------------------------------------------------------------ ids (§4.2)

    def resolve_id(
        self,
        *,
        session_id: str | None,
        session_path: str | None,
        trigger: str,
        variables: Mapping[str, Any] | None,
    ) -> tuple[str, bool, list[str]]:
        """Pick the session id by precedence: explicit id, firing path, assembly path, trigger path, minted.

        Returns:
            ``(session_id, minted, warnings)``.

        Raises:
            InvalidSessionPathError: a malformed caller path (even beside an explicit id).
            InvalidSessionIdError: an explicit or resolved id fails §4.1.
        """
        firing_path = (
            parse_session_path(session_path, "the firing's session_path")
            if session_path is not None
            else None
        )
        if session_id is not None:
            return validate_session_id(session_id), False, []
        path: SessionPath | None = firing_path or self.rt.session_path
        if path is None:
            ref = self.rt.workflow.triggers().get(trigger)
            if ref is not None and ref.decl.session:
                path = parse_session_path(ref.decl.session, f"states.{ref.state}.triggers.{trigger}.session")
        if path is None:
            return mint_session_id(), True, []
        resolved = resolve_session_id(path, variables or {})
        if resolved is None:
            minted = mint_session_id()
            warning = (
                f"session path '{path.text}' did not resolve for this firing: it runs as its own session "
                f"'{minted}', and no later firing can continue it"
            )
            return minted, True, [warning]
        return validate_session_id(resolved), False, []

    # ------------------------------------------------------------------ resolve_session (§3.8)

    def resolve_session(
        self,
        *,
        trigger: str | None = None,
        variables: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        session_path: str | None = None,
    ) -> Resolution:
        """Classify a firing without writing anything (§3.8)."""
        trig = trigger or "manual"
        sid, minted, warnings = self.resolve_id(
            session_id=session_id, session_path=session_path, trigger=trig, variables=variables
        )
        rec = self.rt.store.load(sid)
        disposition, recovered = self.classify(sid, rec)
        if disposition == "turn":
            if rec is None and not self.rt.workflow.is_declared(trig):
                raise UnknownSessionTriggerError(trig, self.rt.workflow.declared_triggers(), session_id=sid)
            return Resolution(
                session_id=sid,
                disposition="turn",
                start_state=self._start_position(rec, trig),
                minted=minted,
                recovered=recovered,
                warnings=warnings,
            )
        park = rec.pending_input if disposition == "resume" else rec.pending_decision  # type: ignore[union-attr]
        return Resolution(
            session_id=sid, disposition=disposition, state=park.state, minted=minted, warnings=warnings
        )

    def _start_position(self, rec: Checkpoint | None, trigger: str) -> str | None:
        if rec is not None and rec.position in self.rt.workflow.states:
            return rec.position
        return self.rt.workflow.entry_state_for(trigger)

    # ------------------------------------------------------------------ send (§3.4)

    def send(
        self,
        session_id: str,
        message: str | None = None,
        *,
        trigger: str | None = None,
        variables: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        warnings: list[str] | None = None,
        delivery_id: str | None = None,
    ) -> Outcome:
        """Apply the firing rule (§3.2) to an explicit id."""
        rec = self.load(session_id)
        if self._died_applying(rec, delivery_id):
            return self._continue_dead_turn(rec)  # type: ignore[arg-type]  # its claim carried its files
        refuse_duplicate(self.rt.store, rec, delivery_id, session_id)
        disposition, recovered = self.classify(session_id, rec)
        source = f"sent to session '{session_id}'"
        check_host_variables(variables, files, source=source, session_id=session_id)
        if disposition == "reply":
            if not (message or "").strip():
                raise EmptyMessageError(session_id)
            dropped = [
                f"'{name}' was not applied: the session is parked at a human state, where a message is only answered"
                for name, given in (("trigger", trigger), ("variables", variables), ("files", files))
                if given
            ]
            return self.reply(
                session_id,
                message or "",
                _rec=rec,
                _warnings=(warnings or []) + dropped,
                _delivery_id=delivery_id,
            )
        prepared = prepare_files(self.rt.store, session_id, files)
        if disposition == "resume":
            text = message if (message or "").strip() else None
            given = trigger.strip() if isinstance(trigger, str) else trigger
            return self._deliver(
                rec, given or "manual", variables, text, prepared, "deliver", warnings or [], delivery_id
            )
        if self.rt.workflow.disabled:
            raise WorkflowDisabledError(self.rt.workflow.slug, session_id=session_id)
        if not (message or "").strip():
            raise EmptyMessageError(session_id)
        trig = trigger or "manual"
        if not self.rt.workflow.is_declared(trig):
            raise UnknownTriggerError(trig, self.rt.workflow.declared_triggers(), session_id=session_id)
        return self._open_turn(
            session_id,
            rec,
            message or "",
            trig,
            variables,
            prepared,
            recovered,
            warnings or [],
            delivery_id=delivery_id,
        )

    # ------------------------------------------------------------------ invoke (§3.9)

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
        """Always open a new turn (§3.9); the id comes from §4.2 when not given."""
        trig = trigger or "manual"
        sid, _, warnings = self.resolve_id(
            session_id=session_id, session_path=session_path, trigger=trig, variables=variables
        )
        rec = self.rt.store.load(sid)
        if rec is not None and self.lease_live(rec):
            raise SessionNotResumableError(sid, str(rec.status))
        recovered = rec is not None and rec.status == SessionStatus.RUNNING
        check_host_variables(variables, files, source=f"sent to session '{sid}'", session_id=sid)
        if not (message or "").strip():
            raise EmptyMessageError(sid)
        if not self.rt.workflow.is_declared(trig):
            raise UnknownTriggerError(trig, self.rt.workflow.declared_triggers(), session_id=sid)
        prepared = prepare_files(self.rt.store, sid, files)
        return self._open_turn(
            sid, rec, message, trig, variables, prepared, recovered, warnings, allow_disabled=True
        )

    # ------------------------------------------------------------------ a redriven event whose turn died

    def _died_applying(self, rec: Checkpoint | None, delivery_id: str | None) -> bool:
        """Whether ``delivery_id`` is the last event the session applied and the turn it started died.

        "Died" means still ``running`` with an expired lease (§3.12): redriving that event must finish its
        turn, not be dropped as a duplicate.
        """
        return (
            rec is not None
            and delivery_id is not None
            and bool(rec.delivery_ids)
            and rec.delivery_ids[-1] == delivery_id
            and rec.status == SessionStatus.RUNNING
            and not self.lease_live(rec)
        )

    def recover(self, session_id: str) -> Outcome | None:
        """Finish a turn whose process died: take over an expired lease and continue from the checkpoint.

        A ``running`` session whose lease expired (or is missing) is taken over (§3.12: unanswered tool
        calls get the ``interrupted`` result, a ``lease`` warning is emitted) and its turn continues where
        it stopped, with nothing added. This is what a host's sweep calls for stale sessions (DESIGN.md §3).

        Returns:
            The :class:`Outcome` (``recovered=True``), or ``None`` when the session is not mid-turn.

        Raises:
            InvalidSessionIdError: a bad id.
            SessionNotResumableError: the lease is still live, or another process recovered it first.
        """
        rec = self.load(session_id)
        if rec is None or rec.status != SessionStatus.RUNNING:
            return None
        if self.lease_live(rec):
            raise SessionNotResumableError(session_id, str(rec.status))
        return self._continue_dead_turn(rec)

    def _continue_dead_turn(self, rec: Checkpoint) -> Outcome:
        """Take the session over (§3.12) and continue the turn from its last checkpoint, adding nothing.

        The claim that started the dead turn carried the firing's placed files and its trigger's
        ``requires`` verdict (issue 9: a firing's files are part of the firing), so nothing of the
        firing is applied again here.
        """
        rt = self.rt
        record = rec  # a load is the caller's own object (SessionStore.load): no copy
        work = Work(rt.store, rt.clock, rt.lease_ttl_s, record, rec.version)
        answer_interrupted_calls(record)
        work.recovered = True
        self.preflight_model(record.position)
        work.claim()
        rt.warn(
            record,
            "lease",
            f"session '{rec.session_id}' was taken over after its lease expired; continuing the turn its last "
            "event started",
        )

        def body() -> None:
            TurnLoop(rt, work).run()

        return self._guarded(work, body, "turn")

    def _claim_with_files(self, work: Work, placement: Placement) -> None:
        """Claim the session with a commit that carries the firing's placed files (issue 9, §9.5).

        When the claim does not land (a conflict, or a store error that left the session's head
        where it was), the files this firing created are removed (best-effort) and the error
        re-raised, so the session is left as it was. A claim that landed although its answer was
        lost keeps them: the committed record names them.

        Raises:
            CommitConflictError: another writer committed first.
            StoreError: the claim failed.
        """
        try:
            work.claim()
        except Exception as exc:
            if placement.created and (isinstance(exc, CommitConflictError) or not self._claim_landed(work)):
                discard_files(self.rt.store, work.record.session_id, self._unclaimed(work, placement.created))
            raise

    def _unclaimed(self, work: Work, created: tuple[str, ...]) -> list[str]:
        """The created files no committed record names: the ones a lost claim may take back.

        The writer that won may be this very firing applied by another process (the same delivery id,
        a sweep racing a wake), which reused these files (same name, same bytes) in the claim that
        beat this one: its record names them, so they stay. An unreadable session keeps them all.
        """
        try:
            current = self.rt.store.load(work.record.session_id)
        except Exception:  # noqa: BLE001 - the store is unreachable: keep the files (an orphan is harmless)
            return []
        named = {v.value for v in current.variables.values() if isinstance(v.value, str)} if current else set()
        return [path for path in created if path not in named]

    def _claim_landed(self, work: Work) -> bool:
        """Whether a claim that raised is committed after all (the head shows this claim's lease); True when unsure."""
        try:
            head = self.rt.store.head(work.record.session_id)
        except Exception:  # noqa: BLE001 - the store is unreachable: keep the files (an orphan is harmless)
            return True
        return (
            head is not None
            and head.version == work.version + 1
            and head.lease is not None
            and head.lease.owner == work.owner
        )

    # ------------------------------------------------------------------ turn opening (§8)

    def _open_turn(
        self,
        session_id: str,
        rec: Checkpoint | None,
        message: str,
        trigger: str,
        variables: Mapping[str, Any] | None,
        prepared: list,
        recovered: bool,
        warnings: list[str],
        *,
        allow_disabled: bool = False,
        delivery_id: str | None = None,
    ) -> Outcome:
        rt, wf = self.rt, self.rt.workflow
        now = rt.now()
        if rec is None:
            record = Checkpoint(session_id=session_id, workflow=wf.slug, created_at=now, updated_at=now)
            version = 0
        else:
            record = rec  # a load is the caller's own object (SessionStore.load): no copy
            version = rec.version
        work = Work(rt.store, rt.clock, rt.lease_ttl_s, record, version, warnings=list(warnings))
        abandoned_input = record.pending_input is not None and record.status == SessionStatus.AWAITING_INPUT
        if recovered:
            answer_interrupted_calls(record)
            work.recovered = True
        # The opening (§8 steps 1-5), the message and the firing's delivery id go into the one conditional
        # commit that claims the session, so a crash can never keep the id without the message.
        title_notes = self._open_record(record, message, trigger, variables)
        remember_delivery(rt.store, record, delivery_id)
        self.preflight_model(record.position)
        # Every refusal has run: the firing's files are placed now and their variables (§8 step 4: before
        # the assembly seeds, so a seed of the same name wins) and the trigger's verdict (§8 steps 2, 6)
        # ride the claim, so a claimed turn always has its files, and one whose process dies is continued
        # by `recover` with them (issue 9: a firing's files are part of the firing).
        placement = place_firing_files(rt.store, session_id, prepared, reuse=delivery_id is not None)
        file_vars = {k: v for k, v in placement.paths.items() if k not in rt.assembly_variables}
        title_notes += seed_host_variables(record.variables, file_vars)  # file variables are host writes (§6)
        try:
            refusal = self._refusal(record, trigger, variables, placement.paths, allow_disabled)
        except Exception:
            discard_files(rt.store, session_id, placement.created)
            raise
        if refusal is not None:
            record.status = SessionStatus.REJECTED
            record.rejected = refusal
        self._claim_with_files(work, placement)  # CommitConflictError when another writer won
        for text in warnings:  # e.g. the minted-id warning of §4.2: in `warnings` and as an event
            rt.warn(record, "session", text)
        if recovered:
            rt.warn(record, "lease", f"session '{session_id}' was taken over after its lease expired")
        if abandoned_input:
            rt.warn(record, "park", f"session '{session_id}' abandoned its input park: a new turn was opened")
        for text in title_notes:
            self._title_warning(work, text)

        def body() -> None:
            self._snapshot_spec(record)
            if refusal is not None:  # committed rejected by the claim: no model call (§8 step 6)
                work.release()
                return
            TurnLoop(rt, work).run()

        return self._guarded(work, body, "turn")

    def _open_record(
        self, rec: Checkpoint, message: str, trigger: str, variables: Mapping[str, Any] | None
    ) -> list[str]:
        """Apply a turn opening (§8 steps 1, 3, 4 without files, 5) and the message; returns title warnings."""
        wf = self.rt.workflow
        rec.trigger = trigger  # 1. the trigger
        if rec.entry_state is None or rec.position not in wf.states:  # 3. the position
            rec.position = wf.entry_state_for(trigger)
        if rec.entry_state is None:
            rec.entry_state = rec.position
        self.rt.trail(rec, "trigger", rec.position, trigger)
        notes = seed_host_variables(rec.variables, self.rt.assembly_variables)  # 4. seeds, variables, trigger
        notes += seed_host_variables(rec.variables, dict(variables or {}))
        set_trigger_variable(rec.variables, trigger)
        rec.pending_failure = None  # 5. the turn's own mechanics
        rec.pending_rejection = rec.delegation = None  # a new turn abandons a sub-workflow call in flight
        rec.raised = None
        rec.rejected = None
        rec.hook_iterations = {}
        rec.before_done = []
        rec.park_counts = {}
        rec.pending_input = None
        rec.pending_decision = None
        rec.park_phase = None
        rec.reply_only = False
        rec.state_turns = 0
        rec.status = SessionStatus.RUNNING
        rec.turn_open_state = rec.position
        rec.moved_since_open = False
        rec.messages.append(Message(role="user", content=message))
        return notes

    def _snapshot_spec(self, rec: Checkpoint) -> None:
        """Write ``_specs/<hash>.json`` when the session's recorded hash differs (§9.4); never fails the turn."""
        wf = self.rt.workflow
        if rec.spec_hash == wf.spec_hash:
            return
        if wf.spec_hash not in self._snapshots:  # create-only: once this agent wrote it, it exists
            try:
                self.rt.store.put_spec(wf.spec_hash, wf.spec)
                self._snapshots.add(wf.spec_hash)
            except Exception as exc:  # a snapshot is a record, never a reason to fail the turn
                self.rt.warn(rec, "spec_snapshot", f"could not write _specs/{wf.spec_hash}.json: {exc}")
        rec.spec_hash = wf.spec_hash

    def _title_warning(self, work: Work, text: str) -> None:
        work.warnings.append(text)
        self.rt.warn(work.record, "variables", text)

    def _refusal(
        self,
        rec: Checkpoint,
        trigger: str,
        variables: Mapping[str, Any] | None,
        placed: Mapping[str, str],
        allow_disabled: bool,
    ) -> str | None:
        """Why a turn opening is rejected (a disabled workflow under invoke, §3.9; unmet ``requires``, §8 step 6), or None.

        ``placed``: the firing's placed files (variable → path), already in the store.

        Raises:
            StoreError: a ``file``-typed requirement could not be read.
        """
        wf = self.rt.workflow
        if wf.disabled and allow_disabled:
            return f"Refusing to start: workflow '{wf.slug}' is disabled."
        missing = self._unmet_requires(rec, trigger, variables, dict(placed))
        if not missing:
            return None
        names = ", ".join(f"'{n}'" for n in missing)
        return f"Refusing to start: trigger '{trigger}' requires {names}, which this firing does not supply."

    def _unmet_requires(
        self, rec: Checkpoint, trigger: str, variables: Mapping[str, Any] | None, placed: dict
    ) -> list[str]:
        decl = self.rt.workflow.trigger_decl(trigger)
        if decl is None or not decl.requires:
            return []
        supplied = {**placed, **self.rt.assembly_variables, **dict(variables or {})}

        def exists(path: str) -> bool:
            return session_file_exists(self.rt.store, rec.session_id, path)

        return [
            spec.name
            for spec in decl.requires
            if spec.name not in supplied
            or not check_value_type(supplied[spec.name], spec.type, file_exists=exists)
        ]

    # ------------------------------------------------------------------ deliver (§3.5)

    def deliver(
        self,
        session_id: str,
        *,
        trigger: str | None,
        variables: Mapping[str, Any] | None = None,
        message: str | None = None,
        files: Mapping[str, Any] | None = None,
        delivery_id: str | None = None,
        park_version: int | None = None,
    ) -> Outcome:
        """Resume an ``input`` park with a trigger id, variables and an optional message (§3.5).

        ``park_version`` names the park this delivery is for (a timer names the park it found due,
        ``SessionStore.due_parks``): a session at any other version is refused, so a sweep working
        from an older listing never wakes a later park (issue 9).
        """
        if delivery_id is None:
            # A double-fired timer is refused from the cheap head alone, without reading the checkpoint;
            # otherwise the head and the checkpoint come from one store read (load_if).
            resumable = (SessionStatus.AWAITING_INPUT, SessionStatus.RUNNING)
            validate_session_id(session_id)
            head, rec = load_if(self.rt.store, session_id, lambda h: h.status in resumable)
            if rec is None:
                raise SessionNotAwaitingInputError(session_id, str(head.status) if head else None)
            refuse_other_park(session_id, head.version, str(head.status), park_version)
        else:
            rec = self.load(session_id)
        if self._died_applying(rec, delivery_id):
            return self._continue_dead_turn(rec)  # type: ignore[arg-type]  # its claim carried its files
        refuse_duplicate(self.rt.store, rec, delivery_id, session_id)
        if self.parked_channel(rec) != "input":
            raise SessionNotAwaitingInputError(session_id, str(rec.status) if rec else None)
        refuse_other_park(session_id, rec.version, str(rec.status), park_version)  # type: ignore[union-attr]
        if not isinstance(trigger, str) or not trigger.strip():
            raise MissingDeliveryTriggerError(session_id)
        check_host_variables(
            variables, files, source=f"delivered to session '{session_id}'", session_id=session_id
        )
        prepared = prepare_files(self.rt.store, session_id, files)
        text = message if (message or "").strip() else None
        return self._deliver(rec, trigger.strip(), variables, text, prepared, "deliver", [], delivery_id)

    def _deliver(
        self,
        rec: Checkpoint | None,
        trigger: str,
        variables: Mapping[str, Any] | None,
        message: str | None,
        prepared: list,
        disposition: str,
        warnings: list[str],
        delivery_id: str | None = None,
    ) -> Outcome:
        assert rec is not None and rec.pending_input is not None
        if rec.delegation is not None:  # the park belongs to a delegated child: forward it (§3.5, §5.10)
            return subworkflows.forward_delivery(
                self, rec, trigger, variables, message, prepared, disposition, warnings, delivery_id
            )
        rt = self.rt
        record = rec  # a load is the caller's own object (SessionStore.load): no copy
        work = Work(rt.store, rt.clock, rt.lease_ttl_s, record, rec.version, warnings=list(warnings))
        state = record.pending_input.state
        values = dict(variables or {})
        title_notes = seed_host_variables(record.variables, values)
        set_trigger_variable(record.variables, trigger)
        record.trigger = trigger
        record.messages.extend(
            make_note("event", event_note_text(trigger, state, values, message is not None))
        )
        if message is not None:
            record.messages.append(Message(role="user", content=message))
        rt.trail(record, "trigger", state, trigger)
        record.pending_input = None
        record.park_phase = None
        record.pending_failure = record.pending_rejection = None
        record.status = SessionStatus.RUNNING
        remember_delivery(rt.store, record, delivery_id)
        self.preflight_model(state)
        # Every refusal has run: the files are placed now and the claim carries their variables (issue 9).
        placement = place_firing_files(rt.store, record.session_id, prepared, reuse=delivery_id is not None)
        file_notes = seed_host_variables(record.variables, placement.paths)  # file variables are host writes (§6)
        try:
            self._claim_with_files(work, placement)  # atomic: of two racing deliveries exactly one commits this version
        except CommitConflictError:
            now = rt.store.load(rec.session_id)
            # The winner may have been this very event (a client retrying a slow request, a wake racing a
            # sweep): it was applied, and the answer says so, as it would have one moment later.
            refuse_duplicate(rt.store, now, delivery_id, rec.session_id)
            raise SessionNotAwaitingInputError(
                rec.session_id, str(now.status) if now else None, "another event resumed it first", lost_race=True
            ) from None

        def body() -> None:
            for text in title_notes:
                self._title_warning(work, text)
            if message is not None:
                rt.events.emit(record, "park_message", state=state, direction="inbound", text=message)
            rt.events.emit(record, "delivered", state=state, trigger=trigger, to=state)
            for text in file_notes:
                self._title_warning(work, text)
            TurnLoop(rt, work).run()

        return self._guarded(work, body, disposition)

    # ------------------------------------------------------------------ reply (§3.6)

    def reply(
        self,
        session_id: str,
        message: str,
        *,
        _rec: Checkpoint | None = None,
        _warnings: list[str] | None = None,
        _delivery_id: str | None = None,
    ) -> Outcome:
        """Answer a person's message at a decision park; the session stays parked (§3.6)."""
        rec = _rec if _rec is not None else self.load(session_id)
        if self.parked_channel(rec) != "decision":
            raise SessionNotParkedError(session_id, str(rec.status) if rec else None)
        if not isinstance(message, str) or not message.strip():
            raise EmptyMessageError(session_id)
        if rec.delegation is not None:  # type: ignore[union-attr]  # the child's decision: forward (§5.10)
            return subworkflows.forward_reply(self, rec, message, list(_warnings or []), _delivery_id)  # type: ignore[arg-type]
        rt = self.rt
        record = rec  # type: ignore[assignment]  # a load is the caller's own object (SessionStore.load)
        work = Work(rt.store, rt.clock, rt.lease_ttl_s, record, rec.version, warnings=list(_warnings or []))  # type: ignore[union-attr]
        record.reply_only = True
        record.messages.append(Message(role="user", content=message))
        remember_delivery(rt.store, record, _delivery_id)
        self.preflight_model(record.pending_decision.state)  # type: ignore[union-attr]
        self._claim_decision_park(work)
        state = record.pending_decision.state  # type: ignore[union-attr]

        def body() -> None:
            rt.events.emit(record, "park_message", state=state, direction="inbound", text=message)
            loop = TurnLoop(rt, work)
            response = loop._call_model(handoff="reply")
            if response is not None:
                loop._record_handoff_answer(response, announce=False)
                if (response.text or "").strip():
                    rt.events.emit(
                        record, "park_message", state=state, direction="outbound", text=response.text
                    )
            record.reply_only = False
            record.park_phase = "suspend"
            work.release()

        return self._guarded(work, body, "reply")

    # ------------------------------------------------------------------ decide (§3.7)

    def decide(self, session_id: str, *, to: str | None, comment: str | None = None) -> Outcome:
        """A person picks one of the parked human state's edges (§3.7)."""
        rec = self.load(session_id)
        if self.parked_channel(rec) != "decision":
            raise SessionNotParkedError(session_id, str(rec.status) if rec else None)
        if rec.delegation is not None:  # type: ignore[union-attr]  # the child's decision: forward (§5.10)
            return subworkflows.forward_decision(self, rec, to, comment)  # type: ignore[arg-type]
        pending = rec.pending_decision  # type: ignore[union-attr]
        valid = [t.to for t in pending.transitions if t.to != pending.state]
        target = to.strip() if isinstance(to, str) else ""
        if not target or target not in valid:
            raise InvalidDecisionTargetError(target or None, valid, session_id=session_id)
        note_comment = comment.strip() if isinstance(comment, str) and comment.strip() else None
        rt = self.rt
        record = rec  # type: ignore[assignment]  # a load is the caller's own object (SessionStore.load)
        work = Work(rt.store, rt.clock, rt.lease_ttl_s, record, rec.version)  # type: ignore[union-attr]
        edge_type = next((t.type for t in pending.transitions if t.to == target), None)
        rt.trail(record, "human", target, note_comment)
        record.messages.extend(
            make_note("decision", decision_note_text(pending.state, target, edge_type, note_comment))
        )
        record.position = target
        record.moved_since_open = True
        record.before_done = [s for s in record.before_done if s != target]  # its before hooks run again (§2.4)
        record.pending_decision = None
        record.park_phase = None
        record.pending_failure = record.pending_rejection = None
        record.state_turns = 0
        record.status = SessionStatus.RUNNING
        self.preflight_model(target)
        self._claim_decision_park(work)

        def body() -> None:
            rt.events.emit(record, "decided", state=pending.state, to=target)
            work.commit()
            loop = TurnLoop(rt, work)
            loop.handoff_directive = "routed"
            loop.run()

        return self._guarded(work, body, "decide")

    def _claim_decision_park(self, work: Work) -> None:
        """Claim a decision park; the loser of a race learns the session is no longer parked (§3.6, §3.7)."""
        try:
            work.claim()
        except CommitConflictError:
            now = self.rt.store.load(work.record.session_id)
            if self.parked_channel(now) != "decision":
                raise SessionNotParkedError(
                    work.record.session_id, str(now.status) if now else None, lost_race=True
                ) from None
            raise

    # ------------------------------------------------------------------ shared tail

    def _guarded(self, work: Work, body, disposition: str) -> Outcome:
        """Run ``body`` under the lease, bring the artifacts up to date and build the Outcome.

        On an unexpected error the lease is let go (so the session can be taken over at once) and the
        error re-raised. Artifacts are written only while this writer's record is still the session's:
        after losing the session to another writer (§3.12: it stops without writing) they are not.
        """
        try:
            body()
        except BaseException as exc:
            if isinstance(exc, CommitConflictError):
                raise  # another writer owns the session now: a stale record must not overwrite its artifacts
            still_ours = not work.holds_lease
            if work.holds_lease:
                try:
                    work.release()
                    still_ours = True
                except Exception:  # noqa: BLE001 - taken over meanwhile, or the store is down: re-raise the cause
                    still_ours = False
            if still_ours:
                self.artifacts.write(work.record, work.start_version)
            raise
        self.artifacts.write(work.record, work.start_version)
        dispatch_after_operation(self.rt.outbound, work.record, self.rt.warn)
        return build_outcome(work, disposition)


def answer_interrupted_calls(rec: Checkpoint) -> None:
    """On a takeover, answer every tool call that has no result with the ``interrupted`` error (§3.12)."""
    answered = {m.tool_call_id for m in rec.messages if m.role == "tool"}
    for message in list(rec.messages):
        for call in message.tool_calls:
            if call.id not in answered:
                rec.messages.append(
                    Message(
                        role="tool", content=INTERRUPTED, tool_call_id=call.id, name=call.name, status="error"
                    )
                )


def refuse_other_park(session_id: str, version: int, status: str, park_version: int | None) -> None:
    """Refuse a delivery naming a park (``park_version``) that is not the session's current version.

    The claim that follows is conditional on the version read, so a park made after the check is
    refused too (``SessionNotAwaitingInputError`` from the lost claim).

    Raises:
        SessionNotAwaitingInputError: the named park was resumed (or changed) since it was found.
    """
    if park_version is not None and version != park_version:
        raise SessionNotAwaitingInputError(
            session_id, status, f"this delivery is for the park at version {park_version}; the session is at {version}"
        )


def build_outcome(work: Work, disposition: str) -> Outcome:
    """The :class:`Outcome` of an operation (§3.11)."""
    rec = work.record
    parked = rec.status in PARKED_STATUSES
    pending = (rec.pending_input or rec.pending_decision) if parked else None
    reply = reply_of(rec.messages, work.start_messages)
    return Outcome(
        kind="parked" if parked else rec.status.value,  # type: ignore[arg-type]
        disposition=disposition,  # type: ignore[arg-type]
        session_id=rec.session_id,
        status=rec.status,
        state=pending.state if pending else rec.position,
        parked_channel=rec.channel if parked else None,
        pending=pending,
        reply=reply,
        rejected=rec.rejected if rec.status == SessionStatus.REJECTED else None,
        exit=exit_of(rec),
        messages=list(rec.messages),
        trail=list(rec.trail),
        variables=variables_view(rec),
        usage=work.usage,
        recovered=work.recovered,
        warnings=list(work.warnings),
        delegation=subworkflows.delegation_view(rec),
    )
