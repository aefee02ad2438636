"""The model-based schedule: hypothesis's RuleBasedStateMachine over one world (see harness.py).

Rules fire events at a few sessions through every door a host has — ``Host.send_now`` and
``Host.deliver_now`` (direct, with or without a delivery id), ``Host.accept`` (the inbox, drained
at once or later), ``Host.decide_now``, ``workflow.reply``, ``Host.sweep`` — with a fault armed
for the firing, or with a second firing interleaved at one of its writes; they redeliver earlier
events (duplicates, reordered), move the injected clock, and sweep. Each event carries a token
(``ev<n>``) the checks find in the transcript.

What a caller learns is kept in a :class:`~.invariants.Ledger`; after the schedule, the world
recovers as a host does (leases expire on the injected clock, the sweep runs, callers retry what
was cut short with the same delivery id), and every invariant of :mod:`.invariants` is checked.
A refused call (a typed error with no fault armed) is checked at once: the stored bytes are the same.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from archmax.clock import format_instant
from archmax.errors import (
    ArchmaxError,
    DuplicateDeliveryError,
    ModelError,
    StoreError,
)
from archmax.hosting.host import Accepted
from archmax.outbound.dispatch import CLAIM_TTL_S
from archmax.session.firing import Firing
from archmax.session.records import SessionStatus

from . import counters
from .harness import (
    AWS_FAULTS,
    LEASE_TTL_S,
    MODEL_FAULTS,
    OUTBOUND_FAULTS,
    STORE_FAULTS,
    Crash,
    Fault,
    Interloper,
    World,
)
from .invariants import (
    Event,
    InboxRecord,
    Ledger,
    Violation,
    check,
    check_exactly_once,
    check_files,
    check_inbox,
    check_indexes,
    check_outbox,
    check_settled,
    check_transcript,
)

SESSIONS = ("s0", "s1", "s2")
ACTS = ("done", "wait", "until", "human", "tool")
CHANNELS = ("send", "deliver", "accept")
DIRECT = ("send", "deliver", "decide", "reply")
RECOVERY_ROUNDS = 8

sessions = st.sampled_from(SESSIONS)
acts = st.sampled_from(ACTS)
firings = st.tuples(st.sampled_from(CHANNELS), sessions, acts, st.booleans(), st.booleans())
decisions = st.tuples(st.just("decide"), sessions, acts, st.sampled_from(("work", "done")))
replies = st.tuples(st.just("reply"), sessions, acts)
operations = st.one_of(firings, firings, decisions, replies, st.just(("sweep",)))


OPEN_SCENARIOS: dict[int, str] = {}
"""Issue 9 scenarios not fixed on main yet. The operation mixes that reach one are left out of the
schedules (see :func:`left_out`) with the scenario's number, and the skip test says which; delete an
entry as soon as its fix lands on main, and the mix is back in every schedule."""


def left_out(channel: str, act: str | None, with_file: bool, fault: Fault | None, racing: bool) -> int | None:
    """The open scenario that keeps this firing's fault (or interleaving) out of the schedules, else None."""
    reasons = [
        (1, racing),  # any interleaving can put a firing between an inbox drain's load and its claim
        (4, racing and channel == "sweep"),
        (2, fault is not None and act == "human"),
        # a sweep or an inbox drain may finish any queued turn; these acts finish their own
        (3, fault is not None and (channel in ("sweep", "accept") or act in ("done", "tool"))),
        (7, fault is not None and with_file and channel == "deliver"),
    ]
    return next((n for n, hit in reasons if hit and n in OPEN_SCENARIOS), None)


def faults_for(kind: str) -> st.SearchStrategy[Fault | None]:
    kinds = STORE_FAULTS + MODEL_FAULTS + OUTBOUND_FAULTS + (AWS_FAULTS if kind == "aws" else ())
    fault = st.builds(Fault, kind=st.sampled_from(kinds), at=st.integers(1, 6))
    return st.one_of(st.none(), fault, fault)


def step(fn: Any) -> Any:
    """A rule body that marks the schedule failed when it raises, so teardown does not mask the cause."""

    @functools.wraps(fn)
    def wrapper(self: Schedule, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except BaseException:
            self._failed = True
            raise

    return wrapper


class Schedule(RuleBasedStateMachine):
    """One schedule on one store kind (subclasses set ``kind``): rules drive a :class:`Driver`."""

    kind = "memory"
    protocol_only = False
    """Run the store behind a wrapper with exactly the store protocol's members (issue 23)."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="archmax-reliability-")) if self.kind == "filesystem" else None
        table = counters.for_store(self.kind + ("-protocol-only" if self.protocol_only else ""))
        world = World(self.kind, table, tmp=self.tmp, protocol_only=self.protocol_only)
        self.driver = Driver(world, Ledger(), table)
        self._failed = False

    # ------------------------------------------------------------------ rules

    @initialize(opening=st.lists(st.tuples(st.sampled_from(("send", "accept")), acts), min_size=3, max_size=3))
    @step
    def open_sessions(self, opening: list[tuple[str, str]]) -> None:
        """Every session starts with a turn of its own (it parks, waits on a timer, or completes)."""
        for sid, (channel, act) in zip(SESSIONS, opening, strict=True):
            self.driver.run((channel, sid, act, True, False), None)

    @rule(op=operations, fault=st.data())
    @step
    def fire(self, op: tuple, fault: st.DataObject) -> None:
        """One firing, perhaps with a fault armed."""
        self.driver.run(op, fault.draw(faults_for(self.kind), label="fault"))

    @rule(first=operations, second=operations, same_session=st.booleans(), at=st.integers(1, 5))
    @step
    def race(self, first: tuple, second: tuple, same_session: bool, at: int) -> None:
        """Two firings interleaved: ``second`` lands whole just before ``first``'s ``at``-th write.

        Mostly on one session (that is where a race can lose an event); a sweep races everything.
        """
        if same_session and len(first) > 1 and len(second) > 1:
            second = (second[0], first[1], *second[2:])
        scenario = left_out(first[0], None, False, None, racing=True)
        if scenario is not None:
            self.driver.counters.left_out(scenario)
            return
        self.driver.run(first, None, Interloper(at, lambda: self.driver.run(second, None, nested=True)))

    @rule(pick=st.integers(0, 1000), channel=st.sampled_from(CHANNELS), fault=st.data())
    @step
    def redeliver(self, pick: int, channel: str, fault: st.DataObject) -> None:
        """An earlier event with a delivery id comes again, perhaps by another door (a duplicate)."""
        with_ids = [e for e in self.driver.ledger.events.values() if e.delivery_id and e.channel in CHANNELS]
        if not with_ids:
            return
        event = with_ids[pick % len(with_ids)]
        self.driver.call(event, channel, fault.draw(faults_for(self.kind), label="fault"), None)

    @rule(seconds=st.sampled_from((1, 30, 301, 3700)))
    @step
    def advance(self, seconds: int) -> None:
        """Time passes on the injected clock (301 s makes an ``until: 5m`` park due)."""
        self.driver.world.advance(seconds)

    @rule(fault=st.data())
    @step
    def expire_and_sweep(self, fault: st.DataObject) -> None:
        """Every lease expires, then the sweep runs (perhaps itself cut short)."""
        self.driver.world.advance(LEASE_TTL_S + 1)
        self.driver.run(("sweep",), fault.draw(faults_for(self.kind), label="fault"))

    @rule(picks=st.lists(st.tuples(sessions, st.integers(0, 2)), min_size=1, max_size=3), fault=st.data())
    @step
    def stream(self, picks: list[tuple[str, int]], fault: st.DataObject) -> None:
        """AWS: the outbound function gets a batch of stream records (recent versions, redelivered or late)."""
        if self.kind != "aws":
            return
        self.driver.stream(picks, fault.draw(faults_for(self.kind), label="fault"))

    def teardown(self) -> None:
        try:
            if not self._failed:
                self.driver.recover_and_check()
        finally:
            self.driver.world.close()
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)
            counters.dump()


class Driver:
    """Fires events at one world and keeps the ledger; recovers the world and checks it.

    The schedule (and the SIGKILL test, on storage a killed process left behind) drive it.
    """

    def __init__(self, world: World, ledger: Ledger, table: Any) -> None:
        self.world = world
        self.ledger = ledger
        self.counters = table
        self.counters.add("schedules")

    # ------------------------------------------------------------------ firing

    def run(self, op: tuple, fault: Fault | None, inter: Interloper | None = None, nested: bool = False) -> None:
        self.counters.add("steps")
        if op[0] == "sweep":
            fault = self._unless_left_out("sweep", None, False, fault)
            self._guard(lambda: self.world.host.sweep(), fault, inter, nested)
            return
        if op[0] == "decide":
            _, sid, act, to = op
            event = self.ledger.new(sid, "decide", None, act)
            event.target = to
        elif op[0] == "reply":
            _, sid, act = op
            event = self.ledger.new(sid, "reply", None, act)
        else:
            channel, sid, act, with_id, with_file = op
            event = self.ledger.new(sid, channel, None, act)
            if with_id:
                event.delivery_id = f"d-{event.n}"
            if with_file and channel in ("deliver", "accept"):
                event.file_var, event.file_text = f"f{event.n}", f"file of {event.token}\n"
        if not nested:
            self._narrowed(event, fault)
        self.call(event, event.channel, fault, inter, nested)

    def stream(self, picks: list[tuple[str, int]], fault: Fault | None) -> None:
        """Hand the outbound function the records of ``(session, versions back from its head)`` (AWS)."""
        self.counters.add("steps")
        positions = []
        for sid, back in picks:
            head = self.world.raw_store.head(sid)
            if head is not None and head.version - back >= 1:
                positions.append((sid, head.version - back))
        if positions:
            self._guard(lambda: self.world.stream(positions), fault, None, False)

    def _unless_left_out(self, channel: str, act: str | None, with_file: bool, fault: Fault | None) -> Fault | None:
        """``fault``, or None when the mix reaches an open scenario (the firing then runs unfaulted)."""
        scenario = left_out(channel, act, with_file, fault, racing=False)
        if scenario is None:
            return fault
        self.counters.left_out(scenario)
        return None

    def _narrowed(self, event: Event, fault: Fault | None) -> None:
        """While scenarios 2, 3 or 7 are open, a faulted firing asks only to park, and carries no file."""
        if fault is None:
            return
        if event.act in ("done", "tool", "human") and left_out(event.channel, event.act, False, fault, False):
            self.counters.left_out(left_out(event.channel, event.act, False, fault, False))
            event.act = "until" if event.act == "tool" else "wait"
        if event.file_var and left_out(event.channel, event.act, True, fault, False):
            self.counters.left_out(left_out(event.channel, event.act, True, fault, False))
            event.file_var = event.file_text = None

    def _guard(self, call: Any, fault: Fault | None, inter: Interloper | None, nested: bool) -> Any:
        """Run ``call`` as one process would: a crash restarts the process."""
        if nested:
            return call()
        self.world.faults.arm(fault, inter)
        try:
            return call()
        except Crash:
            self.world.faults.disarm()
            self.world.restart()
            return None
        except ArchmaxError:
            return None
        finally:
            self.world.faults.disarm()

    def call(
        self, event: Event, channel: str, fault: Fault | None, inter: Interloper | None, nested: bool = False
    ) -> None:
        """Fire ``event`` through ``channel``; record what its caller learned."""
        world = self.world
        if not nested:
            fault = self._unless_left_out(channel, event.act, event.file_var is not None, fault)
        first_try, event.tries = event.tries == 0, event.tries + 1
        event.via_inbox = event.via_inbox or channel == "accept"
        before = world.snapshot() if (channel in DIRECT and fault is None and inter is None and not nested) else None
        if not nested:
            world.faults.arm(fault, inter)
        try:
            answer = self._door(event, channel)
        except Crash:
            world.faults.disarm()
            world.restart()
            self._cut_short(event)
            return
        except DuplicateDeliveryError:
            event.status = "applied"  # applied before: exactly what a redelivery must answer
            return
        except (StoreError, ModelError):
            self._cut_short(event)
            return
        except ArchmaxError as exc:
            if event.status != "applied" and not event.via_inbox:
                event.status = "refused"  # (an inboxed copy is the inbox's to apply: checked there)
            if before is not None:
                after = world.snapshot()
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                self._check(
                    not changed,
                    f"{channel} of {event.token} was refused ({type(exc).__name__}) "
                    f"but changed stored bytes: {changed[:5]}",
                )
            return
        finally:
            if not nested:
                world.faults.disarm()
        event.status = "applied"
        if isinstance(answer, Accepted):
            self.ledger.inboxed.append(InboxRecord(event, first_try and not answer.duplicate, answer.delivery_id))

    @staticmethod
    def _cut_short(event: Event) -> None:
        """An attempt died or failed part-way: it may have applied the event, or not.

        ``applied`` stays applied and ``doubt`` stays in doubt (until the caller retries). A ``refused``
        event fired again (a redelivery, perhaps by another door, of an id that was never applied) may
        have been applied by this attempt: its outcome is now unknown to its caller, so it is in doubt.
        """
        if event.status == "refused":
            event.status = "doubt"

    def _door(self, event: Event, channel: str) -> Any:
        world, sid = self.world, event.session_id
        message = f"{event.token} act:{event.act}"
        files = {event.file_var: {"name": f"{event.token}.txt", "content": event.file_text}} if event.file_var else None
        if channel == "send":
            return world.host.send_now(sid, message, delivery_id=event.delivery_id, files=files)
        if channel == "deliver":
            return world.host.deliver_now(
                sid, trigger="ping", message=message, delivery_id=event.delivery_id, files=files
            )
        if channel == "accept":
            return world.host.accept(
                Firing(trigger="manual", message=message, delivery_id=event.delivery_id, files=files or {}),
                session_id=sid,
            )
        if channel == "decide":
            return world.host.decide_now(sid, to=event.target, comment=message)
        return world.agent.workflow.reply(sid, message)

    def _check(self, condition: bool, text: str) -> None:
        try:
            check(condition, text)
        except Violation as exc:
            self.counters.violation(str(exc))
            raise

    # ------------------------------------------------------------------ recovery and the checks

    def _recover(self) -> None:
        """What a host does after the schedule: leases expire, the sweep runs, callers retry with their ids."""
        world = self.world
        world.faults.disarm()
        world.restart()
        for _ in range(RECOVERY_ROUNDS):
            world.advance(LEASE_TTL_S + 1)
            world.host.sweep()
            for event in list(self.ledger.events.values()):
                if event.status == "doubt" and event.delivery_id:
                    self.call(event, event.channel, None, None)
            running = [
                sid for sid in world.raw_store.list() if world.raw_store.head(sid).status == SessionStatus.RUNNING
            ]
            doubts = [e for e in self.ledger.events.values() if e.status == "doubt" and e.delivery_id]
            if not running and not world.raw_inbox.sessions_with_pending() and not doubts:
                return
        self.counters.add("recoveries", 0)

    def _send_what_is_left(self) -> None:
        """Issue 20: claims of dead senders expire, then the sweep (and on AWS every stream record, twice) sends."""
        world = self.world
        world.advance(CLAIM_TTL_S + 1)
        world.host.sweep()
        if world.kind == "aws":  # every version committed so far, the sweep's own wakes included
            heads = [world.raw_store.head(sid) for sid in world.raw_store.list()]
            positions = [(h.session_id, v) for h in heads for v in range(1, h.version + 1)]
            for _ in range(2):  # the stream's own delivery, then a redelivered batch
                world.stream(positions)

    def recover_and_check(self) -> None:
        world = self.world
        try:
            self._recover()
            self.counters.add("recoveries")
            records = {}
            for sid in world.raw_store.list():
                try:
                    records[sid] = world.raw_store.load(sid)
                except StoreError as exc:
                    raise Violation(f"{sid} is unreadable after recovery: {exc}") from exc
            now = world.now()
            later = format_instant(world.clock.now() + timedelta(days=1))
            check_settled(records, now)
            for rec in records.values():
                check_transcript(rec)
            check_inbox(self.ledger, world.raw_inbox, records)
            check_exactly_once(self.ledger, records)
            check_files(self.ledger, world.raw_store, records)
            check_indexes(world.agent, world.raw_store, records, [now, later])
            self._send_what_is_left()
            committed, recorded = set(world.faults.committed), set()
            born = {}
            for sid in world.raw_store.list():
                rec = world.raw_store.load(sid)
                born[sid] = rec.created_at
                committed.update(f"{sid}/{e.id}" for e in rec.outbox)
            for sid in {key.rsplit("/", 1)[0] for key in committed} & set(born):
                ids = [key.rsplit("/", 1)[1] for key in committed if key.rsplit("/", 1)[0] == sid]
                outcomes = world.raw_store.outbox_outcomes(sid, ids, created_at=born[sid])
                recorded.update(f"{sid}/{entry_id}" for entry_id, outcome in outcomes.items() if outcome == "sent")
            check_outbox(committed, world.sink.sent, world.faults.unrecorded, recorded)
        except Violation as exc:
            self.counters.violation(str(exc))
            raise
