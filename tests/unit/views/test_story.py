"""The story derived from a checkpoint (issue 15): records written before messages carried times."""

from __future__ import annotations

from archmax.session.notes import make_note
from archmax.session.records import Checkpoint, Message, PendingInput, ToolCall, TrailStep
from archmax.views.story import story_of


def _older_record() -> Checkpoint:
    """A parked-then-delivered session as an older engine stored it: no ``Message.ts``, no ``at_message``."""
    wait = ToolCall(id="call_1", name="archmax_wait", args={"reason": "the order number", "until": "1d"})
    return Checkpoint(
        session_id="old-1",
        workflow="support-inbox",
        status="awaiting_input",
        position="clarify",
        messages=[
            Message(role="user", content="Where is it?"),
            Message(role="assistant", content="Which order?", tool_calls=[wait]),
            Message(role="tool", content="Parked.", tool_call_id="call_1", name="archmax_wait", status="success"),
            *make_note("event", "[event] 'email_reply' arrived while the session waited in 'clarify'."),
            Message(role="user", content="ORD-1"),
            Message(role="assistant", content="Still looking.", tool_calls=[wait.model_copy(update={"id": "call_2"})]),
            Message(role="tool", content="Parked.", tool_call_id="call_2", name="archmax_wait", status="success"),
        ],
        trail=[
            TrailStep(to="clarify", kind="trigger", reason="email_received", ts=1_700_000_000_000),
            TrailStep(to="clarify", kind="trigger", reason="email_reply", ts=1_700_000_100_000),
        ],
        pending_input=PendingInput(
            state="clarify",
            reason="the order number",
            parked_at="2023-11-14T22:15:00.000Z",
            resume_at="2023-11-15T22:15:00.000Z",
        ),
        created_at="2023-11-14T22:13:20.000Z",
        updated_at="2023-11-14T22:15:00.000Z",
    )


def test_an_older_record_still_tells_its_story_with_the_times_it_kept():
    story = story_of(_older_record())
    kinds = [e.kind for e in story.timeline]
    assert kinds.count("park") == 2 and kinds.count("turn") + kinds.count("delivery") == 2
    assert story.timeline[-1].kind == "park" and story.timeline[-1].at == "2023-11-14T22:15:00.000Z"
    assert story.timeline[-1].resume_at == "2023-11-15T22:15:00.000Z"
    trail_times = [e.at for e in story.timeline if e.kind in ("turn", "delivery")]
    assert trail_times == ["2023-11-14T22:13:20.000Z", "2023-11-14T22:15:00.000Z"]
    assert [e.role for e in story.conversation] == ["person", "agent", "tool", "runtime", "person", "agent", "tool"]
    assert story.wait is not None and story.wait.since == "2023-11-14T22:15:00.000Z"
    assert story.states == [] and story.edges == []  # no workflow given: no graph


def test_a_note_is_one_runtime_entry_never_a_tool_call():
    story = story_of(_older_record())
    runtime = [e for e in story.conversation if e.role == "runtime"]
    assert len(runtime) == 1 and runtime[0].note == "event" and runtime[0].text.startswith("[event]")
    assert all(e.tool != "archmax_note" for e in story.conversation)
