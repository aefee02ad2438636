"""The prompt the model reads: a static system prefix and a per-call state block.

Rule source: BEHAVIOUR.md §8 (reset instruction), §5.5 (handoff directives), seed "Waiting is not
finishing". The static prefix is the same on every call of a workflow, so providers can cache it.
"""

from __future__ import annotations

from archmax.session.records import Checkpoint

RESET_INSTRUCTION = (
    "This turn opened in a terminal state the conversation moved into earlier. Before answering a "
    "follow-up that needs any earlier state's work, call archmax_reset to return to the state the "
    "conversation began in; do not answer it in place."
)

_STATIC_RULES = """\
You are an agent running inside a governed workflow. You work in one state at a time; the state \
block below says which state you are in, what it asks of you and where you may go next.

Rules:
- Move between states only with archmax_advance, naming one of the listed transitions and a reason.
- When you cannot finish without an answer from outside (a customer's reply, a webhook, a later \
time), ask for it and call archmax_wait with a reason naming what you are waiting for (and an optional \
`until`: a duration such as 30m, 2h or 1d, or an ISO-8601 instant). The call is what waits: a \
question without archmax_wait ends the conversation. When the event arrives you continue in the same state.
- If the work cannot be done, call archmax_raise with a short code and a reason, alone in its message.
- A follow-up that the current state cannot serve needs archmax_reset first, which returns you to \
the state the conversation began in, keeping the transcript, variables and files. Never call \
archmax_reset while you are in the state the conversation began in.
- Messages from the archmax_note tool are the runtime speaking (machine output), not a person.
- When your work in this turn is done, answer with plain text and no tool calls."""

_HANDOFF_DIRECTIVES = {
    "introduce": "The session is now parked at the human checkpoint '{state}'. Write one short message "
    "introducing this checkpoint to the person who will decide: what happened and what they must choose. "
    "Do not call tools.",
    "routed": "A decision routed the session into another human checkpoint, '{state}', and it is now parked "
    "there. Write one short message explaining that to the person and what they must decide now. Do not call tools.",
    "wait": "The session is now parked in '{state}', waiting for: {reason}. Write one short message "
    "telling the person what the session is waiting for. Do not call tools.",
    "reply": "The session is parked at the human checkpoint '{state}'. A person wrote the last message. "
    "Answer it where the session stands; you cannot move the session. Do not call tools.",
}


def static_prompt(workflow_title: str | None, workflow_instructions: str | None) -> str:
    """The cacheable system prefix: the workflow's own instructions, then the house rules."""
    parts = []
    if workflow_title:
        parts.append(f"Workflow: {workflow_title}")
    if workflow_instructions:
        parts.append(workflow_instructions.strip())
    parts.append(_STATIC_RULES)
    return "\n\n".join(parts)


def shows_reset_instruction(record: Checkpoint, terminal: bool) -> bool:
    """True while the turn opened in a terminal state other than the entry state and has not moved (§8)."""
    return (
        terminal
        and record.turn_open_state is not None
        and record.turn_open_state != record.entry_state
        and record.turn_open_state == record.position
        and not record.moved_since_open
    )


def state_block(
    *,
    slug: str,
    title: str | None,
    instructions: str | None,
    transitions: list[tuple[str, str]],
    reset_instruction: bool,
    handoff: str | None = None,
    reason: str | None = None,
) -> str:
    """The per-call block: the active state, its instructions and edges, and the directive of a handoff.

    Args:
        slug: The position (the active state's slug).
        title: The state's title, shown after the slug; ``None`` or empty omits it.
        instructions: The state's instructions; omitted when empty and on a ``reply`` handoff (§2.1:
            a human state's instructions are not shown on reply-only calls).
        transitions: ``(to, description)`` pairs in spec order; empty means a terminal state.
        reset_instruction: Whether to carry :data:`RESET_INSTRUCTION` (§8).
        handoff: One of ``introduce|routed|wait|reply`` on a handoff call (§5.5), else None.
        reason: The wait reason, for the ``wait`` directive.

    Returns:
        The block as newline-joined lines, starting ``Current state: '<slug>'``.
    """
    lines = [f"Current state: '{slug}'" + (f" — {title}" if title else "")]
    if instructions and handoff != "reply":
        lines += ["", "Instructions:", instructions.strip()]
    if transitions:
        lines += ["", "Transitions (archmax_advance to):"] + [f"- '{to}': {desc}" for to, desc in transitions]
    else:
        lines += ["", "This is a terminal state: it has no outgoing transitions."]
    if reset_instruction:
        lines += ["", RESET_INSTRUCTION]
    if handoff:
        lines += ["", _HANDOFF_DIRECTIVES[handoff].format(state=slug, reason=reason or "")]
    return "\n".join(lines)
