"""What the CLI shows after an operation: the messages its commits recorded, sent where (issue 12 item 4).

One operation may commit messages for more than one session: a caller and its sub-workflow child
(BEHAVIOUR.md §5.10), whose outboxes the agent sends in-process after the operation (README
"Outbound messages"). The engine's door answers them (``Applied.to_send()``: the answered session's
record, then every other session it let go of with outbox entries); :class:`Sends` wraps the door,
as a host's telemetry does, and keeps that answer per :class:`~archmax.session.results.Outcome`, so
:func:`sent_lines` lists what the command's own operation sent, in the order it was sent.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from archmax.engine.claims import Applied
    from archmax.engine.door import Door
    from archmax.engine.runtime import Runtime
    from archmax.session.firing import EngineFiring
    from archmax.session.records import Checkpoint, OutboxEntry
    from archmax.session.results import Outcome


class Committed(NamedTuple):
    """The outbound entries one commit recorded: all :func:`sent_lines` needs of a session's record."""

    session_id: str
    created_at: str
    """The session's ``created_at`` (the store keys result records by it)."""
    entries: tuple[OutboxEntry, ...]
    """The record's outbox entries of its own version, in index order (what that commit recorded)."""


def committed(record: Checkpoint) -> Committed:
    """What ``record``'s commit recorded to send (entries of earlier versions still kept are not its own)."""
    own = tuple(e for e in record.outbox if e.version == record.version)
    return Committed(record.session_id, record.created_at, own)


class Sends:
    """What each operation of one invocation committed to send, kept per :class:`Outcome` it answered.

    ``Agent(agent.runtime, sends.door(apply))`` (the shape of :class:`archmax.engine.door.Door`,
    where a host's telemetry wraps too): every firing that answers an Outcome leaves its
    ``Applied.to_send()`` here, as :class:`Committed` records, the answered session first, then the
    other sessions the operation let go of with outbox entries in the order it first let each go
    (the agent's dispatch sends them in that order). An Outcome nobody holds any more is forgotten,
    so a long ``archmax sweep`` keeps nothing it will not print.
    """

    def __init__(self) -> None:
        # id(outcome) -> (a weak reference to it, what its operation committed): an entry leaves when
        # its Outcome dies, so a door call costs the same however many Outcomes the caller keeps (an
        # ``archmax sweep`` keeps every one it woke: scanning them all made N wakes cost N², attack32)
        self._answered: dict[int, tuple[weakref.ref[Outcome], list[Committed]]] = {}
        self.raised: list[Committed] = []
        """What the last operation that raised had committed to send (a child finished, then its caller failed)."""

    def door(self, door: Door) -> Door:
        """``door`` (the engine's :func:`~archmax.engine.door.apply`) keeping what each operation committed to send."""

        def keeping(rt: Runtime, firing: EngineFiring) -> Applied:
            from archmax.engine.work import releases

            self.raised = []  # the last operation's only
            with releases() as released:  # passed on to the agent's own collection when the door raises
                try:
                    applied = door(rt, firing)
                except Exception:
                    self.raised = [committed(r) for r in released.values()]  # sent all the same (issue 20)
                    raise
            if applied.outcome is not None:
                self._keep(applied.outcome, [committed(r) for r in applied.to_send()])
            return applied

        return keeping

    def _keep(self, outcome: Outcome, commits: list[Committed]) -> None:
        key = id(outcome)

        def forget(ref: weakref.ref[Outcome]) -> None:
            if self._answered.get(key, (None,))[0] is ref:  # not a later Outcome given the same id
                del self._answered[key]

        self._answered[key] = (weakref.ref(outcome, forget), commits)

    def of(self, outcome: Outcome) -> list[Committed]:
        """What the operation that answered ``outcome`` (this very object) committed to send; ``[]`` if none here."""
        ref, commits = self._answered.get(id(outcome), (None, []))
        return commits if ref is not None and ref() is outcome else []


def sent_lines(store: Any, commits: Iterable[Committed]) -> list[str]:
    """One line per outbound message the commits recorded: ``sent: ... -> where``, in the commits' order.

    Mail is always shown; a lifecycle event only when it went to a bus (locally it is a file beside
    the mail, a record for the host rather than a message to anyone). An entry without a result
    record (the in-process send failed, or sending is the stream's job) shows as
    ``outbox: ... (not sent yet)``.

    Args:
        store: The session store the results were recorded in (``store.outbox_result``).
        commits: :meth:`Sends.of` an Outcome: the answered session's commit first, then the other
            sessions' (a sub-workflow child's, §5.10) in the order the operation let them go.

    Raises:
        StoreError: a result record could not be read.
    """
    from archmax.outbound.dispatch import Sent, describe  # mail modules load where one sends

    lines = []
    for commit in commits:
        for entry in commit.entries:
            data = store.outbox_result(commit.session_id, entry.id, created_at=commit.created_at)
            if data is not None:
                sent = Sent.model_validate_json(data)
                if sent.kind == "email" or sent.transport != "file":
                    lines.append(describe(sent))
            elif entry.kind == "email":
                lines.append(f"outbox: mail to {', '.join(entry.to)} (not sent yet)")
    return lines
