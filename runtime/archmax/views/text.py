"""The story as terminal text: ``archmax sessions <id> --log``.

Rule source: issue 15 item 2 (state changes, parks, deliveries, the conversation with runtime
notes rendered as events, ISO-8601 times), BEHAVIOUR.md §7 (notes are not tool calls), issue 25
items 6 and 7 (held mail and a stopped turn are part of the story; lines in time order). One
chronological log: timeline entries and conversation lines interleaved in time order (the story's
``seq``).
"""

from __future__ import annotations

import json
from typing import Any

from archmax.views.story import ConversationEntry, Story, TimelineEntry, compact

_WIDTH = 11  # the longest entry kind, "sub-workflow", minus one: kinds pad to line up


def entry_text(entry: TimelineEntry) -> str:
    """One timeline entry as a phrase, without its time (``park input in 'clarify': <reason> (due …)``)."""
    k = entry.kind
    if k in ("turn", "delivery", "advance", "decision", "reset", "on_error"):
        return _move_text(entry)
    if k in ("sub-workflow", "hook"):
        return _call_text(entry)
    if k == "park":
        return _park_text(entry)
    if k in ("quarantined", "released"):
        return _mail_text(entry)
    return _end_text(entry)


def _move_text(entry: TimelineEntry) -> str:
    """A turn opened, a delivery, or a move: advance, decision, reset, error routing."""
    k, state = entry.kind, entry.state
    if k == "turn":
        return f"turn opened in '{state}' by trigger '{entry.trigger}'"
    if k == "delivery":
        return f"delivery '{entry.trigger}' resumed '{state}'"
    if k == "advance":
        return f"advanced to '{state}': {entry.reason}"
    if k == "decision":
        return f"a person decided → '{state}'" + (f": {entry.comment}" if entry.comment else " (no comment)")
    if k == "reset":
        return f"reset to '{state}': {entry.reason}"
    return f"error routed to '{state}': {entry.reason}"


def _call_text(entry: TimelineEntry) -> str:
    """A sub-workflow's call, or a hook and its verdict."""
    if entry.kind == "sub-workflow":
        return f"sub-workflow '{entry.trigger}' → {entry.reason or 'called'} (in '{entry.state}')"
    why = f": {entry.reason}" if entry.reason else ""
    return f"{entry.phase or ''} hook of '{entry.state}': {entry.verdict}{why}".lstrip()


def _park_text(entry: TimelineEntry) -> str:
    if entry.channel == "decision":
        return f"parked for a decision at '{entry.state}'"
    due = f" (resume_at {entry.resume_at})" if entry.resume_at else ""
    return f"parked for input in '{entry.state}': {entry.reason}{due}"


def _mail_text(entry: TimelineEntry) -> str:
    sender = entry.sender or "an unknown sender"
    if entry.kind == "quarantined":
        return f"mail {entry.delivery_id} from {sender} held in quarantine: {entry.reason}"
    return f"mail {entry.delivery_id} from {sender} released from quarantine"


def _end_text(entry: TimelineEntry) -> str:
    """A raise, or how the story ends: failed, rejected, a stopped turn, completed."""
    k, state = entry.kind, entry.state
    if k == "raised":
        return f"raised {entry.code}: {entry.reason}"
    if k == "failed":
        return f"failed: {entry.code} — {entry.reason}"
    if k == "rejected":
        return f"rejected: {entry.reason}"
    if k == "stopped":
        return f"the turn stopped part-way in '{state}': " + (
            f"failure not yet routed: {entry.reason}" if entry.reason else STOPPED_WITHOUT_ERROR
        )
    return f"completed in '{state}'"


STOPPED_WITHOUT_ERROR = (
    "no commit since this one and no lease; a model or store outage leaves no error in the session "
    "(the command or host log that ran the turn has it); the sweep finishes the turn"
)
"""What a stopped turn's entry says when the record holds no failure (issue 25 item 6)."""


def _indented(text: str, prefix: str) -> list[str]:
    lines = text.strip("\n").splitlines() or [""]
    return [prefix + lines[0]] + [" " * len(prefix) + line for line in lines[1:]]


def said_lines(entry: ConversationEntry) -> list[str]:
    """One conversation entry as log lines: words in full, a tool call folded to one line."""
    if entry.role == "person":
        return _indented(entry.text, "person: ")
    if entry.role == "agent":
        return _indented(entry.text, "agent (park message): " if entry.handoff else "agent: ")
    if entry.role == "runtime":
        return [f"runtime event ({entry.note}): {compact(entry.text, 240)}"]
    status = f" [{entry.status}]" if entry.status and entry.status != "success" else ""
    result = f" → {compact(entry.result, 120)}" if entry.result else ""
    return [f"tool {entry.tool}({compact(entry.args or {}, 120)}){status}{result}"]


def headline(story: Story) -> list[str]:
    """The answer to "what is it waiting for": status, then the wait or the exit."""
    lines = [f"session '{story.session_id}'  workflow {story.workflow}  {story.status} ({story.classification})"]
    w = story.wait
    if w is not None and w.channel == "input":
        due = f"; resume_at {w.resume_at}" if w.resume_at else ""
        lines.append(f"waiting since {w.since} for input in '{w.state}': {w.reason}{due}")
    elif w is not None:
        choices = ", ".join(t["to"] for t in w.transitions)
        lines.append(f"waiting since {w.since} for a person's decision at '{w.state}' (choices: {choices})")
    elif story.exit is not None:
        detail = (
            f": {story.exit.code} — {story.exit.reason}"
            if story.exit.code
            else (f": {story.exit.reason}" if story.exit.reason else "")
        )
        lines.append(f"{story.exit.status} at {story.exit.at} in '{story.position}'{detail}")
    elif story.running is not None and story.running.stopped:
        lines.append(
            f"running in '{story.position}', but its turn stopped part-way after the last commit "
            f"{story.updated_at}: nothing holds it; the sweep finishes the turn"
        )
    elif story.running is not None:
        lines.append(
            f"running in '{story.position}': a turn holds it until {story.running.lease_until} "
            f"(lease {story.running.lease_owner}; last commit {story.updated_at}); if that turn's "
            "process died, the sweep can take the session over from then on"
        )
    else:
        lines.append(f"running in '{story.position}' (last commit {story.updated_at})")
    if story.path:
        lines.append("path: " + " → ".join(story.path))
    held = [m for m in story.held if m.released_at is None]
    if held:
        lines.append(f"held mail: {len(held)} in quarantine (archmax quarantine list {story.session_id})")
        for m in held:
            lines.append(
                f"  {m.delivery_id} from {m.sender or 'an unknown sender'} since {m.quarantined_at}: {m.reason}"
            )
    return lines


def usage_line(story: Story) -> str | None:
    """Tokens and the estimated cost, or ``None`` when nothing was spent."""
    u = story.usage
    if u is None:
        return None
    cost = f", about ${u.cost_usd:.4f} (estimate)" if u.cost_usd is not None else ", cost unknown for this model"
    cache = (
        f", cache {u.cache_read_tokens} read / {u.cache_creation_tokens} written"
        if (u.cache_read_tokens or u.cache_creation_tokens)
        else ""
    )
    return f"usage: {u.input_tokens} input / {u.output_tokens} output tokens{cache}{cost}"


def log_lines(story: Story) -> list[str]:
    """The whole ``--log``: headline, the chronological log, variables and usage."""
    lines = headline(story)
    lines.append("")
    items: list[Any] = sorted([*story.timeline, *story.conversation], key=lambda e: e.seq)
    for item in items:
        at = item.at or "-" * 24
        if isinstance(item, TimelineEntry):
            lines.append(f"{at}  {item.kind.upper():<{_WIDTH + 1}} {entry_text(item)}")
        else:
            lines += _indented("\n".join(said_lines(item)), f"{at}  {'':<{_WIDTH + 1}}   ")
    if story.variables:
        lines.append("")
        lines.append("variables:")
        for name, var in story.variables.items():
            lock = " (locked)" if var.get("locked") else ""
            lines.append(f"  {name}{lock} = {compact(json.dumps(var.get('value'), ensure_ascii=False, default=str))}")
    usage = usage_line(story)
    if usage:
        lines.append(usage)
    return lines
