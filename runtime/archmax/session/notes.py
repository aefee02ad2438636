"""Runtime notes: the runtime speaking to a session as machine output.

Rule source: BEHAVIOUR.md §7 (shape, marker, kinds and texts); seed "Delivering the event" (a
note is a synthetic ``archmax_note`` tool call and its result, because every position a note
lands in accepts a tool result). Hosts read the marker, never a role or a ``[`` prefix.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, Literal, get_args

from archmax.session.records import Message, ToolCall

NOTE_TOOL = "archmax_note"
NoteKind = Literal["decision", "event", "error", "after", "sub-workflow"]
NOTE_KINDS: frozenset[str] = frozenset(get_args(NoteKind))


def make_note(kind: str, text: str) -> tuple[Message, Message]:
    """Build one runtime note: the call/result pair appended to the transcript together (§7).

    Args:
        kind: One of ``decision``, ``event``, ``error``, ``after``, ``sub-workflow``.
        text: The note's text (see the ``*_note_text`` builders).

    Returns:
        ``(call, result)``: an assistant message with empty content and exactly one tool call
        ``{id: "note_<uuid4 hex>", name: "archmax_note", args: {"note": kind}}``, then a tool
        message answering that id with ``text`` and status ``success``. Both carry
        ``archmax = {"note": kind}``.

    Raises:
        ValueError: ``kind`` is not a note kind.
    """
    if kind not in NOTE_KINDS:
        raise ValueError(f"unknown runtime note kind {kind!r}; expected one of {sorted(NOTE_KINDS)}")
    call_id = f"note_{uuid.uuid4().hex}"
    call = Message(
        role="assistant",
        content="",
        tool_calls=[ToolCall(id=call_id, name=NOTE_TOOL, args={"note": kind})],
        archmax={"note": kind},
    )
    result = Message(
        role="tool",
        content=text,
        tool_call_id=call_id,
        name=NOTE_TOOL,
        status="success",
        archmax={"note": kind},
    )
    return call, result


def runtime_note_kind(message: Any) -> str | None:
    """The note kind carried by ``message``'s marker, or ``None`` when it has none (§7).

    The marker is read from ``archmax`` or from ``additional_kwargs["archmax"]`` (where
    provider adapters keep it), on a :class:`Message`, any object with those attributes, or a
    plain dict. Roles and ``[`` prefixes are never read: a user message starting ``[event]`` is
    not a note.
    """
    for marker in (_field(message, "archmax"), _field(_field(message, "additional_kwargs"), "archmax")):
        if isinstance(marker, Mapping) and isinstance(marker.get("note"), str):
            return marker["note"]
    return None


def is_runtime_note(message: Any) -> bool:
    """True iff ``message`` carries the runtime-note marker in either place (§7)."""
    return runtime_note_kind(message) is not None


def _field(source: Any, name: str) -> Any:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def decision_note_text(from_state: str, to: str, type_: str | None, comment: str | None) -> str:
    """``[decision]`` text: a person chose an edge at a human state (§7, §3.7).

    The type part is omitted when ``type_`` is absent or ``none``; without a (non-blank) comment
    the first sentence ends ``checkpoint.``.
    """
    chose = f"{type_} → '{to}'" if type_ and type_ != "none" else f"'{to}'"
    head = f"[decision] A person chose {chose} at the '{from_state}' checkpoint"
    head = f"{head}: {_sentence(comment)}" if comment and comment.strip() else f"{head}."
    return f"{head} The session is already in '{to}'; do that state's work."


def event_note_text(trigger: str, state: str, variables: Mapping[str, Any], has_message: bool) -> str:
    """``[event]`` text: a delivery arrived at an ``input`` park (§7, §3.5).

    Args:
        trigger: The delivered trigger id.
        state: The parked state.
        variables: The delivered variables, in delivery order; listed as ``k=<compact JSON>``.
        has_message: Whether a person's message follows the note.
    """
    text = f"[event] '{trigger}' arrived while the session waited in '{state}'"
    if variables:
        listed = ", ".join(f"{name}={_compact(value)}" for name, value in variables.items())
        text += f": {listed} (also readable as session variables)."
    else:
        text += "."
    text += f" You are still in '{state}'; continue from here."
    if has_message:
        text += " A message from a person follows this note."
    return text


def error_note_text(from_state: str, reason: str, to: str) -> str:
    """``[error]`` text: a turn failure routed by ``on_error`` (§7, §5.7)."""
    return f"[error] The '{from_state}' state failed: {_sentence(reason)} Routing to the '{to}' error handler."


def after_note_text(state: str, reason: str) -> str:
    """``[after]`` text: a terminal state's completion check asked for a correction (§7, §5.8)."""
    return (
        f"[after] The '{state}' completion check did not pass: {_sentence(reason)} "
        "Revise your work and give a corrected final response."
    )


def subworkflow_note_text(slug: str, text: str) -> str:
    """``[sub-workflow: <slug>]`` text: a child session finished with this result (§7, §5.10)."""
    return f"[sub-workflow: {slug}] {text}"


def _sentence(text: str | None) -> str:
    # The fixed text closes with '.', so a reason that already ends a sentence is not doubled.
    text = (text or "").strip()
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
