"""The host: inbox-then-wake for firings, direct deliveries, and the sweep.

Rule source: DESIGN.md §3 "Inbox" and §4 (hosting); issue 4 items 2–3 and "Done when".
What the Lambda handlers and ``archmax serve`` share:

* :meth:`Host.accept` — a firing from an email or webhook is validated, written to the inbox
  keyed by its delivery id (a duplicate is a no-op), then the session is woken;
* :meth:`Host.drain` — the drain-lease holder applies pending items in arrival order and lets go
  only when nothing new arrived (one conditional write);
* :meth:`Host.deliver_now`, :meth:`Host.send_now` — direct firings (deliver handler, timers, the CLI)
  are never inboxed; one whose delivery id waits in the inbox is refused as queued, so it never
  overtakes the firings that arrived before it (issue 22);
* :meth:`Host.sweep` — due parks get ``timer``; sessions with waiting items are re-driven (a turn
  whose process died is then taken over once its lease expired); then every other turn whose
  lease expired (a direct delivery or timer, never inboxed) is continued with ``recover``.

Exactly-once: an item is marked done only after its send returned; a crash in between is
recovered because the session refuses the redelivered id (``DuplicateDeliveryError``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from archmax.clock import Clock, format_instant
from archmax.engine.placement import prepare_files
from archmax.errors import (
    ArchmaxError,
    DeliveryQueuedError,
    DuplicateDeliveryError,
    EmptyMessageError,
    MissingDeliveryTriggerError,
    OtherWorkflowSessionError,
    SessionNotResumableError,
    UnknownSessionTriggerError,
    UnknownTriggerError,
    WorkflowDisabledError,
    is_retryable,
)
from archmax.hosting.host_sweep import sweep_host
from archmax.hosting.inbox_base import Inbox, InboxCapability, InboxItem, ItemKind, queue_id
from archmax.hosting.reports import Accepted, Disposition, Redrive, SweepReport
from archmax.session.firing import Deliver, Firing, Send
from archmax.session.ids import parent_session_id, parse_session_id, validate_delivery_id
from archmax.session.results import Outcome
from archmax.session.variables import check_host_variables

if TYPE_CHECKING:
    from archmax.agent import Agent
    from archmax.hosting.timers import TimerHandOff
    from archmax.outbound.dispatch import Dispatcher

log = logging.getLogger("archmax.hosting")

DrainResult = Outcome | ArchmaxError


def _left_pending(exc: ArchmaxError) -> bool:
    """Whether a drained item's error leaves it pending for a later drain rather than ``failed``.

    "Not now" (:func:`archmax.errors.is_retryable`), or "not this host's": the session belongs to
    another workflow (``OtherWorkflowSessionError``), whose own host drains the queue (two ``archmax
    serve`` on one workspace share its ``.inbox``; attack32). Marking it failed would lose that
    host's event; the drain stops there instead, as for a retryable error.
    """
    return is_retryable(exc) or isinstance(exc, OtherWorkflowSessionError)


class Host:
    """Puts firings in the inbox and drains them into an agent's sessions.

    Args:
        agent: An assembled agent (``create_agent``).
        inbox: Where firings wait (:class:`~archmax.hosting.inbox.MemoryInbox`, ``FilesystemInbox``, ``DynamoInbox``).
        waker: Called with a session id after a firing is inboxed (Lambda: an asynchronous self-invoke);
            default: drain that session now, in this call.
        clock: For ``arrived_at`` and the drain lease (default: the agent's clock).
        lease_ttl_s: Seconds a drain lease lives without renewal (default 900, the engine's lease).
        on_due: Told ``(session_id, resume_at)`` before the sweep wakes a due park (telemetry's timer lateness).
        sweep_outbound: Builds the sender the sweep sends unsent outbox entries with (issue 20 item 2).
        timers: Where the sweep hands due timers (default: fired in this process; issue 24 goal 3).

    Example:
        >>> host = Host(agent, MemoryInbox())  # doctest: +SKIP
        >>> host.accept(Firing(trigger="email_received", message="Hi", variables={"conversation_id": "c-1"}))  # doctest: +SKIP
        Accepted(session_id='c-1', delivery_id='...', disposition='turn', duplicate=False, warnings=[])
    """

    def __init__(
        self,
        agent: Agent,
        inbox: Inbox,
        *,
        waker: Callable[[str], None] | None = None,
        clock: Clock | None = None,
        lease_ttl_s: float = 900,
        on_due: Callable[[str, str], None] | None = None,
        sweep_outbound: Callable[[], Dispatcher | None] | None = None,
        timers: TimerHandOff | None = None,
    ) -> None:
        self.agent = agent
        self.inbox = inbox
        self.clock = clock or agent.runtime.clock
        self.lease_ttl_s = float(lease_ttl_s)
        self._waker = waker or self._drain_now
        self.on_due = on_due
        """Told ``(session_id, resume_at)`` before the sweep wakes a due park (telemetry's timer lateness)."""
        self.sweep_outbound = sweep_outbound
        """Builds the sender the sweep sends unsent outbox entries with, on first use (AWS: the stream's
        backstop, SES and EventBridge); ``None``: the agent's in-process dispatcher (issue 20 item 2)."""
        self.timers = timers
        """Where the sweep hands due timers (issue 24 goal 3): ``None`` fires them here, one after
        another (:class:`~archmax.hosting.timers.InProcess`); on AWS the timer queue (``SqsTimers``)."""

    def _now(self) -> str:
        return format_instant(self.clock.now())

    def _drain_now(self, session_id: str) -> None:
        self.drain(session_id)

    def _wake(self, session_id: str) -> None:
        try:
            self._waker(session_id)
        except ArchmaxError as exc:  # the item is durably inboxed: the sweep re-drives it
            log.warning("waking session %r failed; the sweep will re-drive it: %s", session_id, exc)

    # ------------------------------------------------------------------ accept

    def accept(
        self,
        firing: Firing,
        *,
        session_id: str | None = None,
        session_path: str | None = None,
        kind: ItemKind = "send",
    ) -> Accepted:
        """Validate a firing, put it in the inbox, wake its session (DESIGN.md §3 "Inbox", §4 send).

        The id comes from ``agent.workflow.resolve_session`` (explicit ``session_id``, else
        ``firing.session_id``, else ``session_path``, else the trigger's ``session:`` path, else minted).
        Everything a send would refuse that can be checked now is checked before anything is written:
        variable and file names, file contents the store cannot hold, the delivery id; and, when the
        firing would open a turn now, a disabled workflow, a blank message and an undeclared trigger
        (a blank message also for a reply).

        Args:
            firing: The firing (trigger, variables, files, message, optional delivery_id).
            session_id: An explicit id (wins over ``firing.session_id``).
            session_path: A firing session path (§4.3).
            kind: ``send`` (the firing rule) or ``deliver`` (only into an input park).

        Returns:
            :class:`Accepted`; ``duplicate=True`` when the delivery id was inboxed before (a no-op).

        Raises:
            InvalidSessionIdError, InvalidSessionPathError, UnknownSessionTriggerError, UnknownTriggerError,
            InvalidVariableNameError, InvalidFilePathError, SessionStoreCapabilityError, InvalidDeliveryIdError,
            EmptyMessageError, WorkflowDisabledError, MissingDeliveryTriggerError, StoreError (the inbox).
        """
        explicit = session_id if session_id is not None else firing.session_id
        # Classified on what the store reads now (on AWS one GetItem, far cheaper than a condition
        # check on the session item inside the put's transaction, which DynamoDB bills as a write of
        # the whole item and which failed whenever another container had moved the session: issue 24).
        sid, disposition, warnings, minted = self._resolve(firing, explicit, session_path, kind)
        self._check(firing, sid, disposition, kind)
        delivery_id = validate_delivery_id(firing.delivery_id or f"archmax-{uuid.uuid4()}", session_id=sid)
        queue = queue_id(sid)  # a caller and its children share one queue: one arrival order (§5.10)
        item = InboxItem(
            session_id=queue,
            delivery_id=delivery_id,
            arrived_at=self._now(),
            kind=kind,
            firing=firing.model_copy(update={"session_id": sid, "delivery_id": delivery_id}),
        )
        created = self.inbox.put(item, new_session=minted)
        self._wake(queue)
        return Accepted(
            session_id=sid,
            delivery_id=delivery_id,
            disposition=disposition,
            duplicate=not created,
            warnings=warnings,
        )

    def _resolve(
        self, firing: Firing, explicit: str | None, session_path: str | None, kind: ItemKind
    ) -> tuple[str, Disposition, list[str], bool]:
        """``(session id, disposition, warnings, minted)`` from ``resolve_session`` (mid-turn is ``queued``)."""
        try:
            resolution = self.agent.workflow.resolve_session(
                trigger=firing.trigger,
                variables=firing.variables,
                session_id=explicit,
                session_path=session_path,
            )
            return resolution.session_id, resolution.disposition, list(resolution.warnings), resolution.minted
        except SessionNotResumableError as exc:  # mid-turn: exactly what the inbox is for
            return str(exc.session_id), "queued", [], False
        except UnknownSessionTriggerError as exc:
            if kind != "deliver":
                raise
            # a delivery's trigger is never matched (§3.5); the drain refuses it if the session is not parked
            return str(exc.session_id), "turn", [], False

    def _check(self, firing: Firing, sid: str, disposition: Disposition, kind: ItemKind) -> None:
        spec = self.agent.spec
        verb = "delivered to" if kind == "deliver" else "sent to"
        check_host_variables(firing.variables, firing.files, source=f"{verb} session '{sid}'", session_id=sid)
        prepare_files(self.agent.store, sid, firing.files)  # names and capability; writes nothing
        blank = not (firing.message or "").strip()
        if kind == "deliver":
            if not (firing.trigger or "").strip():
                raise MissingDeliveryTriggerError(sid)
            return
        if disposition == "reply" and blank:
            raise EmptyMessageError(sid)
        if disposition == "turn":
            if spec.disabled:
                raise WorkflowDisabledError(spec.slug, session_id=sid)
            if blank:
                raise EmptyMessageError(sid)
            trigger = firing.trigger or "manual"
            if not spec.is_declared(trigger):
                raise UnknownTriggerError(trigger, spec.declared_triggers(), session_id=sid)

    # ------------------------------------------------------------------ drain

    def drain(self, session_id: str) -> list[DrainResult]:
        """Apply the session's pending items in arrival order while holding its drain lease.

        Each item goes through the agent's door as a ``Send`` (kind ``deliver``: a ``Deliver``) with its
        delivery id. ``DuplicateDeliveryError`` → marked done (applied before). An error
        :func:`archmax.errors.is_retryable` calls "not now" — ``SessionNotResumableError`` (mid-turn
        elsewhere), ``StoreError`` or ``ModelError`` (an outage mid-turn), or a park race lost to
        another event (``lost_race``) → left pending, draining stops; the sweep re-drives it and the
        event is applied after the turn that beat it (nothing lost). A session of another workflow
        (``OtherWorkflowSessionError``: two hosts share the inbox) → left pending for its own host,
        draining stops (attack32). Any other refusal → marked ``failed`` with the error text, not retried.
        When nothing is left, the lease is released only if no item arrived since the counter was
        read; otherwise the drain goes round again. On an inbox that declares
        ``InboxCapability.SESSION_LEASE_DRAIN`` (``DynamoInbox``) no drain lease is taken: the
        session's own lease keeps a second drainer out, each item is marked after its operation
        returned, and the drain goes round until a read finds nothing (:meth:`_drain_unleased`, issue 24).

        Args:
            session_id: The queue to drain: :func:`~archmax.hosting.inbox_base.queue_id` of the
                sessions whose firings wait in it (a caller's chain shares one; issue 22).

        Returns:
            One entry per item tried, in order: the :class:`Outcome`, or the error it raised
            (``DuplicateDeliveryError`` included). ``[]`` when another drainer holds the lease (or,
            without a drain lease, when nothing waits).

        Raises:
            InvalidSessionIdError; an ArchmaxError of the inbox (``StoreError``), after the drain lease
            was let go (best effort). Anything that is not an ArchmaxError (a crash) propagates and
            leaves the item pending and the drain lease to expire.
        """
        session_id = parse_session_id(session_id)
        owner = f"drain-{uuid.uuid4().hex}"
        if InboxCapability.SESSION_LEASE_DRAIN in self.inbox.capabilities:
            return self._drain_unleased(session_id, owner)
        try:
            return self._drain_leased(session_id, owner)
        except ArchmaxError:
            self._let_go(session_id, owner)
            raise

    def _drain_leased(self, session_id: str, owner: str) -> list[DrainResult]:
        """:meth:`drain` under the drain lease ``owner`` takes (the plain inboxes)."""
        results: list[DrainResult] = []
        while self._acquire(session_id, owner):
            just_acquired, blocked = True, False
            while not blocked:
                seen, items = self.inbox.arrivals_and_pending(session_id)
                if not items:
                    break
                for item in items:
                    # renew before every item but the first after acquiring: a drain longer than one
                    # ttl keeps its lease
                    if not just_acquired and not self._acquire(session_id, owner):
                        return results  # the lease expired and another drainer took it over
                    just_acquired = False
                    result = self._apply(item)
                    results.append(result)
                    if isinstance(result, ArchmaxError) and _left_pending(result):
                        blocked = True
                        seen = self.inbox.arrivals(session_id)  # stop here: what waits is the sweep's
                        break
            if self._release(session_id, owner, seen):
                return results
            # a firing arrived after the counter was read (or the lease was lost): go round again
        return results

    def _acquire(self, session_id: str, owner: str) -> bool:
        """Take or renew the drain lease; a lost answer is asked again once, under the same owner.

        A ``try_acquire`` that was applied but whose answer was lost would otherwise leave the lease
        with an owner nobody runs until it expires, stalling every later wake's drain (issue 22).
        The same owner renewing is idempotent, so asking again tells whether it holds the lease.
        """
        try:
            return self.inbox.try_acquire(session_id, owner, self._now(), self.lease_ttl_s)
        except ArchmaxError as exc:
            if not is_retryable(exc):
                raise
            log.warning("drain lease of session %r: no answer (%s); asking again", session_id, exc)
            return self.inbox.try_acquire(session_id, owner, self._now(), self.lease_ttl_s)

    def _release(self, session_id: str, owner: str, seen: int) -> bool:
        """Let the drain lease go; a failed call is asked again once (as :meth:`_acquire` asks).

        A ``release`` that failed unapplied would otherwise leave the lease with an owner nobody runs
        until it expires, so the next firing's wake could not drain it (issue 22). Asking again is
        safe: one that was applied answers ``False`` the second time, and the drain goes round once
        more (it takes the free lease, finds nothing, and lets go).
        """
        try:
            return self.inbox.release(session_id, owner, seen)
        except ArchmaxError as exc:
            if not is_retryable(exc):
                raise
            log.warning("drain lease of session %r: release failed (%s); asking again", session_id, exc)
            return self.inbox.release(session_id, owner, seen)

    def _let_go(self, session_id: str, owner: str) -> None:
        """Best effort, after an inbox or store error ended a drain: let go of the drain lease if ``owner`` holds it.

        Otherwise the lease keeps an owner nobody runs until it expires (900 s), and the next
        firing's wake cannot drain (issue 22). What is still pending stays for that wake or the
        sweep (an applied item is then answered ``DuplicateDeliveryError`` and marked done). An
        inbox that still does not answer leaves the lease to expire, as before.
        """
        try:
            self.inbox.release(session_id, owner, self.inbox.arrivals(session_id))
        except ArchmaxError as exc:
            log.warning("drain lease of session %r: could not let it go after a failed drain: %s", session_id, exc)

    def _drain_unleased(self, session_id: str, owner: str) -> list[DrainResult]:
        """:meth:`drain` without a drain lease: the session's own lease keeps a second drainer out (issue 24).

        A round is one strongly consistent ``drain_view`` (counter, drain lease, pending items). Each
        item is applied through the agent's door (its claim is the session's lease: one plain
        conditional write) and then marked with its own UpdateItem, as the plain drain marks; the
        drain goes round until a view finds nothing. Nothing rides the operation's commits: a
        DynamoDB transaction bills every item in it twice, and the session item (~3 KB) is the big
        one (issue 24: 35.8 → 29.3 write units per webhook cycle, for one more UpdateItem and one
        more Query).

        Why nothing is lost without the arrivals check that used to ride the turn's last commit:

        * An item put after this drainer's last view is drained by the item's own drainer:
          :meth:`accept` always wakes one after the put, and that drainer's view (strongly
          consistent) sees the item. This drainer's operations let the session's lease go in the
          commit that ends each turn, before :meth:`_run` returns, so before the mark and the final
          view; the item's drainer therefore finds the session free of *this* drainer. It may lose
          the claim to a third drainer, which then applies the item (the same argument, one level
          on), or answer a duplicate (applied by the third: marked done).
        * An item put before this drainer's last view is in that view (``ConsistentRead``) and is
          applied by this round. So an item whose own drainer stopped because this drainer's turn
          held the session (``SessionNotResumableError``, retryable) is seen here: that refusal
          came after the put and before this turn's commit, which precedes the last view.
        * An item applied but not marked (the process died between the commit that ended its turn
          and the mark; or the mark failed) is still pending. Its re-drive (the next wake, or the
          sweep's) answers ``DuplicateDeliveryError``: the claim that applied it committed its
          delivery id in the record (the newest 200, ``DELIVERY_IDS_KEPT``; an id leaving that
          window is written as a marker file *before* the commit that drops it, so no id is ever
          forgotten: ``archmax.engine.deliveries``), and the door refuses a duplicate before
          classifying the firing. It is then marked done and nothing is applied twice. (One whose
          turn died *before* its ending commit is continued instead: ``died_applying``.)
        * A duplicate answered while a turn holds the session is most likely the firing that turn
          applies: it is left for that turn's drainer to mark (a crash: the sweep's re-drive), and
          this drainer stops, as on any retryable refusal.

        A drain lease a plain drainer holds (``try_acquire``) is respected. Items of one queue are
        tried in arrival order and a drainer stops at the first it may not apply now, so a second
        drainer never overtakes the first's item.
        """
        results: list[DrainResult] = []
        while True:
            view = self.inbox.drain_view(session_id)
            if view.held_by_other(owner, self._now()) or not view.items:
                return results
            for item in view.items:
                result = self._run(item)
                if isinstance(result, DuplicateDeliveryError) and self._mid_turn(item.session_id):
                    results.append(result)
                    return results  # the turn applying it runs now: its drainer marks it, a crash the sweep's
                results.append(self._settle(item, result))
                if isinstance(result, ArchmaxError) and _left_pending(result):
                    return results  # not now: the turn holding the session goes round as it ends, else the sweep
            # go round: read again what arrived meanwhile

    def _apply(self, item: InboxItem) -> DrainResult:
        # A warm store's remembered view is checked by the operation's claim, and whatever it answered
        # without writing is answered again on a fresh read: the engine's door does it (issue 24).
        return self._settle(item, self._run(item))

    def _run(self, item: InboxItem) -> Outcome | ArchmaxError:
        """Apply one item through the agent's door: the Outcome, or the ArchmaxError it raised."""
        f = item.firing
        # the session it is for: the queue's root or one of its children (an item put before queues
        # were per chain has no other id than its own queue's)
        sid = parse_session_id(f.session_id or item.session_id)
        firing: Send | Deliver
        if item.kind == "deliver":
            firing = Deliver(
                sid, f.trigger, f.variables or None, f.message, f.files or None, item.delivery_id, park_id=f.park_id
            )
        else:
            firing = Send(
                sid, f.message, f.trigger, f.variables or None, f.files or None, item.delivery_id, park_id=f.park_id
            )
        try:
            return self.agent.apply(firing)  # type: ignore[return-value]  # these always answer
        except ArchmaxError as exc:
            return exc

    def _settle(self, item: InboxItem, result: Outcome | ArchmaxError) -> DrainResult:
        """Mark the item as ``result`` says: done, failed, or (retryable) left pending."""
        sid = item.session_id
        if isinstance(result, DuplicateDeliveryError):  # the item says why nothing was applied (a reused key)
            self.inbox.mark(sid, item.delivery_id, "done", f"{type(result).__name__}: {result}")
        elif isinstance(result, ArchmaxError):
            if not _left_pending(result):  # not now (another writer, an outage, a lost race), or not ours: pending
                self.inbox.mark(sid, item.delivery_id, "failed", f"{type(result).__name__}: {result}")
        else:
            self.inbox.mark(sid, item.delivery_id, "done")
        return result

    def _mid_turn(self, session_id: str) -> bool:
        """Whether a turn holds the session's lease now (one read of its head): a duplicate may be its firing."""
        head = self.agent.store.head(session_id)
        return head is not None and head.lease is not None and head.lease.live_at(self._now())

    # ------------------------------------------------------------------ direct delivery

    def deliver_now(
        self,
        session_id: str,
        *,
        trigger: str | None,
        variables: Mapping[str, Any] | None = None,
        message: str | None = None,
        delivery_id: str | None = None,
        files: Mapping[str, Any] | None = None,
        park_id: str | None = None,
    ) -> Outcome:
        """Deliver into a session parked awaiting input, never through the inbox (deliver handler, timers).

        When the delivery returns and items wait in the session's inbox, the session is woken.

        Raises:
            DeliveryQueuedError: ``delivery_id`` waits in the session's inbox (see :meth:`_refuse_queued`).
            SessionNotAwaitingInputError (also every loser of a race), MissingDeliveryTriggerError,
            InvalidVariableNameError, DuplicateDeliveryError, and every other typed refusal — unchanged.
        """
        return self._direct(
            session_id,
            delivery_id,
            lambda: self.agent.workflow.deliver(
                session_id,
                trigger=trigger,
                variables=variables,
                message=message,
                files=files,
                delivery_id=delivery_id,
                park_id=park_id,
            ),
        )

    def send_now(
        self,
        session_id: str,
        message: str | None,
        *,
        trigger: str | None = None,
        variables: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        delivery_id: str | None = None,
        park_id: str | None = None,
    ) -> Outcome:
        """``agent.workflow.send`` at a hosted session, never through the inbox (the CLI's run, email, reply).

        The firing rule applies as in ``send`` (a new turn, or a reply at a park). Like
        :meth:`deliver_now` it wakes the session afterwards when items wait in its inbox.

        Args:
            session_id: The session (validated by ``send``).
            message: The message text (``None``: the trigger's own).
            trigger: As ``agent.workflow.send`` takes it.
            variables: As ``agent.workflow.send`` takes them.
            files: As ``agent.workflow.send`` takes them.
            delivery_id: The firing's idempotency key; one waiting in the inbox is refused.
            park_id: The park this answers, as ``agent.workflow.send`` takes it.

        Returns:
            The send's :class:`Outcome`.

        Raises:
            DeliveryQueuedError: ``delivery_id`` waits in the session's inbox (see :meth:`_refuse_queued`).
            Every refusal ``agent.workflow.send`` raises, unchanged.
        """
        return self._direct(
            session_id,
            delivery_id,
            lambda: self.agent.workflow.send(
                session_id,
                message,
                trigger=trigger,
                variables=variables,
                files=files,
                delivery_id=delivery_id,
                park_id=park_id,
            ),
        )

    def _direct(self, session_id: str, delivery_id: str | None, apply: Callable[[], Outcome]) -> Outcome:
        """A direct door: refuse a queued delivery id, apply the firing, then wake what waits in the inbox."""
        self._refuse_queued(session_id, delivery_id)
        outcome = apply()
        self._wake_if_pending(session_id)
        return outcome

    def _refuse_queued(self, session_id: str, delivery_id: str | None) -> None:
        """Refuse a direct firing whose delivery id waits in the inbox: the drain applies it in its place.

        A caller that re-sends an accepted id through a direct door (a retry by another route) would
        otherwise have it applied ahead of the firings that arrived in the inbox before it (DESIGN.md
        §3 "Inbox": drained in arrival order; issue 22). The refusal changes nothing (it does not
        drain: the wake that accepted the item, or the sweep, does); once the item is applied a retry
        answers ``DuplicateDeliveryError``, and an item the drain refused (``failed``, never applied)
        lets the firing through for its own answer. One inbox read, only for a firing that carries a
        delivery id; the ids are validated before they become keys or paths. A caller and its child
        apply events as one pair, whichever id a firing names (BEHAVIOUR.md §5.10), so the pair's
        one queue is read (:meth:`_queues`; one more read per id only for a child's firing).

        Raises:
            DeliveryQueuedError (naming the session whose inbox holds it), InvalidSessionIdError,
            InvalidDeliveryIdError, StoreError.
        """
        if delivery_id is None:
            return
        session_id = parse_session_id(session_id)
        delivery_id = validate_delivery_id(delivery_id, session_id=session_id)
        for queue in self._queues(session_id):
            item = self.inbox.get(queue, delivery_id)
            if item is not None and item.status == "pending":
                raise DeliveryQueuedError(queue, delivery_id)

    @staticmethod
    def _queues(session_id: str) -> list[str]:
        """Where a firing at ``session_id`` may wait, without a read.

        Its chain's queue (:func:`queue_id`), then the id itself and each ancestor it names (items
        put before queues were per chain).
        """
        queues = [queue_id(session_id)]
        queue: str | None = session_id
        while queue is not None:
            if queue not in queues:
                queues.append(queue)
            queue = parent_session_id(queue)
        return queues

    def decide_now(
        self, session_id: str, *, to: str | None, comment: str | None = None, park_id: str | None = None
    ) -> Outcome:
        """A person's decision at a human park, never through the inbox (the decisions route).

        Like :meth:`deliver_now`, it wakes the session afterwards when items wait in its inbox, so
        messages that arrived during the decision's turn are applied now rather than at the next sweep.

        Raises:
            SessionNotParkedError (also every loser of a race), InvalidDecisionTargetError — unchanged.
        """
        return self._direct(  # a decision carries no delivery id: nothing to refuse as queued
            session_id, None, lambda: self.agent.workflow.decide(session_id, to=to, comment=comment, park_id=park_id)
        )

    def _wake_if_pending(self, session_id: str) -> None:
        """Wake the session when items wait in its inbox: best effort, after the work was applied.

        An inbox failure here must not report the applied delivery as failed; the sweep re-drives.
        """
        queue = queue_id(session_id)
        try:
            waiting = bool(self.inbox.pending(queue))
        except ArchmaxError:
            log.warning("could not check the inbox of session %r after a direct firing", session_id, exc_info=True)
            return
        if waiting:
            self._wake(queue)

    # ------------------------------------------------------------------ sweep

    def sweep(self, now: str | None = None) -> SweepReport:
        """Send the outbox, wake due parks, re-drive inbox items, finish dead turns (DESIGN.md §3, §4 timer).

        0. Outbox: every outbox entry committed before this sweep and not sent yet (SMTP was down,
           the process died right after its commit, its stream record ran out of retries) is sent,
           a finished session's too (:func:`archmax.hosting.sweep.send_outbox`, issue 20 item 2).
           It runs first, so the entries the sweep's own turns commit are left to the sender that
           serves every commit (the outbound function on AWS, the in-process outbound elsewhere),
           or to the next sweep, never raced for here (issue 24).
        1. Due parks: :func:`archmax.hosting.sweep.sweep` finds them and hands each its timer
           (``timer`` with ``{"now": now}``) to ``timers``: fired here, or queued for the wake
           function on AWS (issue 24 goal 3).
        2. Re-drive: each session in ``inbox.sessions_with_pending()`` is drained; a session whose
           engine lease expired mid-turn is then taken over by the send (``recovered``).
        3. Stale turns: every other ``running`` session of the workflow whose lease expired or is
           missing (``store.stale(now)``; a turn a direct delivery or a timer started, so nothing
           waits in the inbox to re-drive it) is continued by ``agent.workflow.recover``
           (:func:`archmax.hosting.sweep.recover_stale`). Sessions steps 1 and 2 drove are left to
           the next sweep; racing sweeps recover a session once, the others report ``skipped``.
        4. Oldest park: the workflow's park made longest ago and its age (``report.oldest_park``,
           ``oldest_park_age_s``; BEHAVIOUR.md §5.11), one ``store.oldest_park`` call (no scan).

        Args:
            now: Instant ``YYYY-MM-DDTHH:MM:SS.mmmZ``; ``None`` reads the host's clock.

        Raises:
            StoreError: the store or inbox failed while listing.
        """
        return sweep_host(self, now if now is not None else self._now())


__all__ = ["Accepted", "DrainResult", "Host", "Redrive", "SweepReport"]
