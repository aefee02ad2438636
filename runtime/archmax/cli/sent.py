"""What the CLI shows after an operation: the messages its commit recorded, sent where (issue 12 item 4)."""

from __future__ import annotations

from typing import Any

from archmax.outbound.dispatch import Sent, describe


def sent_lines(store: Any, session_id: str) -> list[str]:
    """One line per outbound message the session's latest commit recorded: ``sent: ... -> where``.

    Mail is always shown; a lifecycle event only when it went to a bus (locally it is a file beside
    the mail, a record for the host rather than a message to anyone). An entry without a result
    record (the in-process send failed, or sending is the stream's job) shows as
    ``outbox: ... (not sent yet)``.
    """
    record = store.load(session_id)
    if record is None:
        return []
    lines = []
    for entry in record.outbox:
        if entry.version != record.version:
            continue
        data = store.outbox_result(session_id, entry.id, created_at=record.created_at)
        if data is not None:
            sent = Sent.model_validate_json(data)
            if sent.kind == "email" or sent.transport != "file":
                lines.append(describe(sent))
        elif entry.kind == "email":
            lines.append(f"outbox: mail to {', '.join(entry.to)} (not sent yet)")
    return lines
