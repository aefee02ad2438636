"""Claims and the shared tail: the one place an operation takes a session and ends its work on it.

Rule source: BEHAVIOUR.md §3.12 (lease, one writer per session), §9.3 (commits), §9.5 (artifacts,
file placement), §3.11 (the Outcome); issue 9 (a firing's files ride its claim).

Every firing kind builds its :class:`~archmax.engine.work.Work` here (:func:`open_work`, which
hands it the inbox writes that ride its commits), claims through here, and runs its body under
:func:`guarded`, which writes the artifacts and builds the :class:`Applied` result. The turn loop
commits through the same ``Work`` (step boundaries); nothing else writes a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from archmax.engine.placement import Placement, discard_files
from archmax.engine.runtime import Runtime
from archmax.engine.subworkflows import delegation_view
from archmax.engine.work import Work
from archmax.errors import CommitConflictError
from archmax.session.records import PARKED_STATUSES, Checkpoint, Message, SessionStatus
from archmax.session.results import Outcome, exit_of, reply_of, variables_view

INTERRUPTED = "interrupted: the process running this turn stopped before this call returned"


class Applied(NamedTuple):
    """What the door answers: the :class:`Outcome`, and the record its last commit left.

    ``record`` is what consequences read after the door returns (the outbox a host sends); both are
    ``None`` when a ``recover`` found no dead turn.
    """

    outcome: Outcome | None
    record: Checkpoint | None
    others: tuple[Checkpoint, ...] = ()
    """The other sessions the operation let go of with outbox entries (a caller's child, or the caller
    of a child's firing), each as last committed: their outboxes are the consequences' too (§5.10)."""

    def to_send(self) -> list[Checkpoint]:
        """``record`` (when committed) and ``others``: every record whose outbox the operation committed."""
        return [r for r in (self.record, *self.others) if r is not None]


def open_work(
    rt: Runtime,
    record: Checkpoint,
    version: int,
    *,
    warnings: Iterable[str] = (),
) -> Work:
    """The :class:`Work` of one operation on ``record`` (at ``version``)."""
    return Work(rt.store, rt.clock, rt.lease_ttl_s, record, version, warnings=list(warnings))


def claim(work: Work) -> None:
    """Take the session's lease with a commit conditional on the version read (§3.12).

    Raises:
        CommitConflictError: another writer committed since the load.
    """
    work.claim()


def claim_with_files(rt: Runtime, work: Work, placement: Placement) -> None:
    """Claim the session with a commit that carries the firing's placed files (issue 9, §9.5).

    When the claim does not land (a conflict, or a store error that left the session's head
    where it was), the files this firing created are removed (best-effort) and the error
    re-raised, so the session is left as it was. A claim that landed although its answer was
    lost keeps them: the committed record names them.

    Raises:
        CommitConflictError: another writer won.
        StoreError: the claim failed.
    """
    try:
        work.claim()
    except Exception as exc:
        if placement.created and (isinstance(exc, CommitConflictError) or not _claim_landed(rt, work)):
            discard_files(rt.store, work.record.session_id, _unclaimed(rt, work, placement.created))
        raise


def _unclaimed(rt: Runtime, work: Work, created: tuple[str, ...]) -> list[str]:
    """The created files no committed record names: the ones a lost claim may take back.

    The writer that won may be this very firing applied by another process (the same delivery id,
    a sweep racing a wake), which reused these files (same name, same bytes) in the claim that
    beat this one: its record names them, so they stay. An unreadable session keeps them all.
    """
    try:
        current = rt.store.load(work.record.session_id)
    except Exception:  # noqa: BLE001 - the store is unreachable: keep the files (an orphan is harmless)
        return []
    named = {v.value for v in current.variables.values() if isinstance(v.value, str)} if current else set()
    return [path for path in created if path not in named]


def _claim_landed(rt: Runtime, work: Work) -> bool:
    """Whether a claim that raised is committed after all (the head shows this claim's lease); True when unsure."""
    try:
        head = rt.store.head(work.record.session_id)
    except Exception:  # noqa: BLE001 - the store is unreachable: keep the files (an orphan is harmless)
        return True
    return (
        head is not None
        and head.version == work.version + 1
        and head.lease is not None
        and head.lease.owner == work.owner
    )


def claim_park(rt: Runtime, work: Work, lost: Callable[[Checkpoint | None], Exception | None]) -> None:
    """Claim a parked session; ``lost(current)`` names the refusal the loser of a race gets (§3.5–§3.7).

    ``lost`` returns ``None`` when the current record still shows the park (the conflict is re-raised).
    """
    try:
        work.claim()
    except CommitConflictError:
        refusal = lost(rt.store.load(work.record.session_id))
        if refusal is None:
            raise
        raise refusal from None


def guarded(rt: Runtime, work: Work, body: Callable[[], None], disposition: str) -> Applied:
    """Run ``body`` under the lease, bring the artifacts up to date and build the result.

    On an unexpected error the lease is let go (so the session can be taken over at once) and the
    error re-raised, unless a lease commit of a child this operation waited on failed without saying
    whether it applied: then the caller keeps its lease until it runs out, so it is never left
    unleased while its child may still be leased, and the sweep takes the pair over together
    (issue 22). Artifacts are written only while this writer's record is still the session's:
    after losing the session to another writer (§3.12: it stops without writing) they are not.
    """
    try:
        body()
    except BaseException as exc:
        if isinstance(exc, CommitConflictError):
            raise  # another writer owns the session now: a stale record must not overwrite its artifacts
        still_ours = not work.holds_lease
        if work.holds_lease and not work.lease_in_doubt:
            try:
                work.release()
                still_ours = True
            except Exception:  # noqa: BLE001 - taken over meanwhile, or the store is down: re-raise the cause
                still_ours = False
        if still_ours:
            rt.artifacts.write(work.record, work.start_version)
        raise
    rt.artifacts.write(work.record, work.start_version)
    return Applied(build_outcome(work, disposition), work.record)


def title_warning(rt: Runtime, work: Work, text: str) -> None:
    """A host write the session's variables could not take as given: in ``Outcome.warnings`` and as an event."""
    work.warnings.append(text)
    rt.warn(work.record, "variables", text)


def answer_interrupted_calls(rec: Checkpoint) -> None:
    """On a takeover, answer every tool call that has no result with the ``interrupted`` error (§3.12)."""
    answered = {m.tool_call_id for m in rec.messages if m.role == "tool"}
    for message in list(rec.messages):
        for call in message.tool_calls:
            if call.id not in answered:
                rec.messages.append(
                    Message(role="tool", content=INTERRUPTED, tool_call_id=call.id, name=call.name, status="error")
                )


def build_outcome(work: Work, disposition: str) -> Outcome:
    """The :class:`Outcome` of an operation (§3.11)."""
    rec = work.record
    parked = rec.status in PARKED_STATUSES
    pending = (rec.pending_input or rec.pending_decision) if parked else None
    return Outcome(
        kind="parked" if parked else rec.status.value,  # type: ignore[arg-type]
        disposition=disposition,  # type: ignore[arg-type]
        session_id=rec.session_id,
        status=rec.status,
        state=pending.state if pending else rec.position,
        parked_channel=rec.channel if parked else None,
        pending=pending,
        reply=reply_of(rec.messages, work.start_messages),
        rejected=rec.rejected if rec.status == SessionStatus.REJECTED else None,
        exit=exit_of(rec),
        messages=list(rec.messages),
        trail=list(rec.trail),
        variables=variables_view(rec),
        usage=work.usage,
        recovered=work.recovered,
        warnings=list(work.warnings),
        delegation=delegation_view(rec),
        park_id=rec.park_id if parked else None,
    )
