"""Which outbound messages the commit that ends a turn records (pure: no I/O, no configuration).

Rule source: DESIGN.md §3 "The change stream" (the transactional outbox) and issue 12 items 1-3:
when a turn ends with words for the person (the question at an ``archmax_wait`` park, the handoff
message at a human state, the final answer, a failure's reason), that commit records them; every
park, completion, failure and rejection also records one lifecycle event. Sending is the
dispatcher's job (:mod:`archmax.outbound.dispatch`), after the commit, from this record.

A session "came in by email" when its variables hold what :func:`archmax.inbound.email.parse_email`
seeds: a ``from`` address and a ``message_id`` key. Its reply goes to that sender, threaded on that
message; a rejection mails nothing (its reason is the runtime's, addressed to the operator).

What the record keeps (issue 20 item 1): every entry not known settled, whatever their number. Once
the record would hold more than ``OUTBOX_KEPT`` entries, the commit asks which are settled and drops
them all, so it asks (one listing of ``outbox/``) once per ``OUTBOX_KEPT`` new entries at most, not at
every commit. "Settled" is the dispatcher's word, read through the ``settled`` callable the committer
passes: the entry's result record (sent, or failed for one that can never be sent) exists in the
store (:meth:`~archmax.stores.base.SessionStore.outbox_outcomes`). Without that callable nothing is known settled and nothing leaves: a
count never drops an unsent entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from archmax.session.records import (
    OUTBOX_KEPT,
    PARKED_STATUSES,
    Checkpoint,
    OutboxDetailType,
    OutboxEntry,
    SessionStatus,
)
from archmax.session.results import exit_of, reply_of

DETAIL_TYPES: dict[SessionStatus, OutboxDetailType] = {
    SessionStatus.AWAITING_INPUT: "Session Parked",
    SessionStatus.AWAITING_DECISION: "Session Parked",
    SessionStatus.COMPLETED: "Session Completed",
    SessionStatus.FAILED: "Session Failed",
    SessionStatus.REJECTED: "Session Rejected",
}
"""The EventBridge ``detail-type`` of each status a turn can end in."""

_RE = re.compile(r"^\s*(re|aw|sv|antw)\s*:", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


Settled = Callable[[OutboxEntry], bool]
"""``entry -> True`` when the entry's result record exists (sent, or failed for good): it may leave the record."""


def sent_path(entry: OutboxEntry) -> str:
    """Where the file-keeping stores write the record that ``entry`` was sent (:mod:`archmax.stores.outbox_files`)."""
    return f"outbox/{entry.id}.sent.json"


def failed_path(entry: OutboxEntry) -> str:
    """Where the file-keeping stores write the record that ``entry`` can never be sent (issue 20 item 5)."""
    return f"outbox/{entry.id}.failed.json"


def record_outbox(
    record: Checkpoint,
    start_messages: int,
    *,
    settled: Settled | None = None,
    words: str | None = None,
) -> list[OutboxEntry]:
    """Append the outbound messages of a turn-ending commit to ``record.outbox`` (call before committing it).

    Args:
        record: The record about to be committed as ``record.version``; changed in place. A record
            still ``running`` (a lease let go after an error) ends no turn and records nothing.
        start_messages: Transcript length when the operation started: its words are the last
            non-blank assistant text after it (``Outcome.reply``, BEHAVIOUR.md §3.11).
        settled: Tells which older entries are known sent (or failed for good); only those may leave
            the record. It is asked only when the record would hold more than ``OUTBOX_KEPT``
            entries, and then every settled entry leaves. ``None``: nothing is known settled, every
            entry stays.
        words: The words for the person when they are not this record's own (a caller answering
            through its child's decision park, issue 20 item 4); ``None`` reads them from the record.

    Returns:
        The entries recorded: an ``email`` entry (index 0) when the session came in by email and the
        turn has words for the person, then one ``event`` entry. Entries an earlier attempt at the
        same version recorded are replaced.
    """
    detail_type = DETAIL_TYPES.get(record.status)
    if detail_type is None:
        return []
    version = record.version
    text = _words(record, start_messages) if words is None else words
    entries: list[OutboxEntry] = []
    mail = _mail_fields(record)
    if mail is not None and text.strip() and record.status != SessionStatus.REJECTED:
        entries.append(OutboxEntry(version=version, index=0, kind="email", detail_type=detail_type, text=text, **mail))
    entries.append(
        OutboxEntry(
            version=version,
            index=len(entries),
            kind="event",
            detail_type=detail_type,
            text=text,
            detail=_event_detail(record, text),
        )
    )
    kept = [e for e in record.outbox if e.version != version]
    record.outbox = _prune(kept, len(entries), settled) + entries
    return entries


def _prune(kept: list[OutboxEntry], adding: int, settled: Settled | None) -> list[OutboxEntry]:
    """``kept`` less every settled entry, once the record would hold more than ``OUTBOX_KEPT`` (issue 20 item 1).

    Dropping all of them, not just the oldest beyond the count, is what keeps the question rare: the
    next one comes only after ``OUTBOX_KEPT`` more entries, so a sender that keeps up costs the
    committer one listing per few turns and the record stays small (issue 24).
    """
    if settled is None or len(kept) + adding <= OUTBOX_KEPT:
        return kept
    return [entry for entry in kept if not settled(entry)]


def _words(record: Checkpoint, start_messages: int) -> str:
    """The operation's words for the person; for a failure, the reason it raised with."""
    if record.status == SessionStatus.FAILED and record.raised is not None:
        return record.raised.reason
    return reply_of(record.messages, start_messages)


def _value(record: Checkpoint, name: str) -> Any:
    variable = record.variables.get(name)
    return variable.value if variable is not None else None


def _mail_fields(record: Checkpoint) -> dict[str, Any] | None:
    """The reply's addressing and threading, from the email variables; ``None`` when not an email session."""
    sender = _value(record, "from")
    if not isinstance(sender, str) or "@" not in sender or "message_id" not in record.variables:
        return None
    message_id = _value(record, "message_id")
    message_id = message_id if isinstance(message_id, str) and message_id else None
    to = [a for a in _value(record, "to") or [] if isinstance(a, str) and "@" in a]
    return {
        "to": [sender],
        "inbox": to[0] if to else None,
        "subject": _reply_subject(_value(record, "subject")),
        "in_reply_to": message_id,
        "references": _references(record, message_id),
        "park_version": _park_version(record),
    }


def _park_version(record: Checkpoint) -> int | None:
    """The park the mail asks its question at (its ``parked_version``, stamped by this commit), or ``None``."""
    park = (record.pending_input or record.pending_decision) if record.status in PARKED_STATUSES else None
    return park.parked_version if park is not None else None


def _references(record: Checkpoint, message_id: str | None) -> list[str]:
    """The reply's ``References``: the thread's root first, then the message it answers last."""
    references = [r for r in _value(record, "references") or [] if isinstance(r, str) and r]
    root = _value(record, "conversation_id")  # the thread's first Message-ID, when the client dropped it
    if isinstance(root, str) and "@" in root and root not in references:
        references.insert(0, root)
    for parent in (_value(record, "in_reply_to"), message_id):  # a client that kept no References
        if isinstance(parent, str) and parent and parent not in references:
            references.append(parent)
    return references


def _reply_subject(subject: Any) -> str:
    """``Re: <subject>`` (once), on one line; ``Re: your message`` for a mail that had none."""
    subject = _CONTROL.sub(" ", subject).strip() if isinstance(subject, str) else ""  # never a header break
    if not _RE.match(subject):
        subject = f"Re: {subject}" if subject else "Re: your message"
    return subject


def _event_detail(record: Checkpoint, text: str) -> dict[str, Any]:
    """The lifecycle event's ``detail``: session id, workflow, state, channel, reason, resume_at, text, exit."""
    parked = record.status in PARKED_STATUSES
    pending = (record.pending_input or record.pending_decision) if parked else None
    reason: str | None = None
    if record.status == SessionStatus.AWAITING_INPUT and record.pending_input is not None:
        reason = record.pending_input.reason
    elif record.status == SessionStatus.FAILED and record.raised is not None:
        reason = record.raised.reason
    elif record.status == SessionStatus.REJECTED:
        reason = record.rejected
    exit_ = exit_of(record)
    return {
        "session_id": record.session_id,
        "workflow": record.workflow,
        "status": str(record.status),
        "state": pending.state if pending is not None else record.position,
        "channel": record.channel if parked else None,
        "reason": reason,
        "resume_at": record.resume_at if parked else None,
        "text": text,
        "exit": exit_.model_dump(exclude_none=True) if exit_ is not None else None,
        "version": record.version,
        "park_id": record.park_id if parked else None,
    }
