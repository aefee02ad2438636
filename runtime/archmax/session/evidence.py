"""A transcript as grader evidence: what ``grade`` judges and rubric hooks grade.

Rule source: BEHAVIOUR.md §7 (in grader evidence a note appears as ``[runtime:<kind>] <text>``),
§2.4 (a rubric hook grades the evidence), §10.2 (``grade``).
"""

from __future__ import annotations

import json

from archmax.session.notes import runtime_note_kind
from archmax.session.records import Message

__all__ = ["evidence"]


def evidence(messages: list[Message]) -> str:
    """The transcript as grader evidence: one line per message, notes as ``[runtime:<kind>] <text>``.

    A note's call half is skipped (its result carries the text); tool calls are listed as
    ``name(args)``, tool results as ``[tool:<name> <status>] <text>``.
    """
    lines: list[str] = []
    for m in messages:
        kind = runtime_note_kind(m)
        if kind is not None:
            if m.role == "tool":
                lines.append(f"[runtime:{kind}] {m.content}")
            continue
        if m.role == "user":
            lines.append(f"[user] {m.content}")
        elif m.role == "assistant":
            if m.content.strip():
                lines.append(f"[assistant] {m.content}")
            for call in m.tool_calls:
                lines.append(
                    f"[assistant calls] {call.name}({json.dumps(call.args, ensure_ascii=False, sort_keys=True)})"
                )
        else:
            lines.append(f"[tool:{m.name} {m.status}] {m.content}")
    return "\n".join(lines)
