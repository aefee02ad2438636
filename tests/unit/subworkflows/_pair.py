"""A caller and its child, set up through the public API only, for the issue-22 regression tests.

The caller ``desk`` offers the child ``check`` as ``archmax_workflow_check`` in its state ``work``, so
the first call from session ``p1`` creates the child ``p1~work:check:1`` (§5.10). Both are real
workflow folders under ``tmp_path/workflows/``. :class:`PairModel` answers every call from the
transcript alone (caller or child, told apart by the session id), so a test can race, crash and
recover the pair in any order without a script running out of step. Stores: every kind of
``reliability.regress_env`` (memory, filesystem, AwsStore on moto).

Rule source: BEHAVIOUR.md §5.10, §3.5, §3.12, §9.3; issue 22.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from archmax.models.base import ModelRequest, ModelResponse
from archmax.models.bedrock import to_converse
from archmax.models.openai import to_chat, wire_id
from archmax.session.notes import runtime_note_kind
from archmax.session.records import Message, SessionStatus, ToolCall

CALLER = "p1"
CHILD = "p1~work:check:1"
LEASE_TTL_S = 60.0
"""A short engine lease, so a long child turn outlives it within a few model calls."""

DESK = {
    "title": "Desk",
    "states": {
        "work": {
            "triggers": {"manual": None},
            "tools": {"allow": ["archmax_workflow_check"]},
            "transitions": [{"to": "done", "description": "Answered."}],
        },
        "done": None,
    },
}
CHECK = {
    "title": "Check",
    "states": {
        "look": {
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "A person checks it."}],
        },
        "review": {"type": "human", "transitions": [{"to": "approved", "description": "Approved."}]},
        "approved": None,
    },
}
TOKEN = re.compile(r"<<[A-Za-z0-9-]+>>")
PARK_TEXT = "Which colour?"
CALLER_DONE = "Caller done."


def workspace(tmp_path: Path) -> tuple[Path, Path]:
    """Write ``workflows/desk`` and ``workflows/check`` side by side; returns their folders."""
    folders = []
    for slug, doc in (("desk", DESK), ("check", CHECK)):
        folder = tmp_path / "workflows" / slug
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workflow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        folders.append(folder)
    return folders[0], folders[1]


def _answered_since_instruction(messages: list[Message]) -> tuple[Message | None, list[Message]]:
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    answers = [
        m for m in messages[last + 1 :] if m.role == "assistant" and runtime_note_kind(m) is None and not m.handoff
    ]
    return (messages[last] if last >= 0 else None), answers


class PairModel:
    """Answers the caller and the child from their transcripts (deterministic, no script order).

    * caller: a fresh user message gets ``archmax_workflow_check {}``; anything after that, the final
      answer :data:`CALLER_DONE`;
    * child, first message: ``child_mode`` ``"wait"`` says :data:`PARK_TEXT` and calls ``archmax_wait``
      (so the park message is text beside the call, §5.2); ``"human"`` advances to ``review``;
      ``"long"`` sets a variable ``long_steps`` times (one model call each), then answers;
    * child, a delivered message: ``act:wait`` in it waits again; otherwise the final answer names
      the message's tokens (``<<A>>``), which the checks look for.

    ``on_call(request, n)`` runs before answering call ``n`` (1-based): a test moves the clock or
    lands another firing there. Every request is kept in ``requests``.
    """

    def __init__(
        self,
        child_mode: str = "wait",
        *,
        long_steps: int = 6,
        on_call: Callable[[ModelRequest, int], None] | None = None,
    ) -> None:
        self.child_mode = child_mode
        self.long_steps = long_steps
        self.on_call = on_call
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.on_call is not None:
            self.on_call(request, len(self.requests))
        n = len(self.requests)
        if request.handoff:
            return ModelResponse(text="Please decide." if "~" in request.session_id else "I will wait.")
        last, answers = _answered_since_instruction(request.messages)
        if "~" not in request.session_id:
            if answers:
                return ModelResponse(text=CALLER_DONE)
            return ModelResponse(tool_calls=[ToolCall(id=f"w{n}", name="archmax_workflow_check", args={})])
        opening = last is not None and last.content.startswith("Sub-workflow call")
        text = last.content if last is not None else ""
        if opening and self.child_mode == "long" and len(answers) < self.long_steps:
            call = ToolCall(id=f"v{n}", name="archmax_set_variables", args={"variables": {"step": len(answers) + 1}})
            return ModelResponse(tool_calls=[call])
        if answers:
            return ModelResponse(text=f"Child got {' '.join(TOKEN.findall(text)) or 'nothing'}.")
        if (opening and self.child_mode == "wait") or "act:wait" in text:
            call = ToolCall(id=f"c{n}", name="archmax_wait", args={"reason": "a colour"})
            return ModelResponse(text=PARK_TEXT, tool_calls=[call])
        if opening and self.child_mode == "human":
            call = ToolCall(id=f"c{n}", name="archmax_advance", args={"to": "review", "reason": "check it"})
            return ModelResponse(tool_calls=[call])
        return ModelResponse(text=f"Child got {' '.join(TOKEN.findall(text)) or 'nothing'}.")


class CommitThen:
    """A store whose first commit matching ``where`` lands, then ``meanwhile`` runs (once), then it returns.

    It puts another firing exactly between two writes of an operation: "right after A's claim of the
    caller, B is delivered". Everything else passes straight through to the real store.
    """

    def __init__(self, inner: Any, where: Callable[[str, Any], bool], meanwhile: Callable[[], Any]) -> None:
        self._inner = inner
        self._where = where
        self._meanwhile: Callable[[], Any] | None = meanwhile
        self.capabilities = inner.capabilities
        self.outcome: Any = None

    def commit(self, session_id: str, record: Any, *args: Any, **kwargs: Any) -> Any:
        result = self._inner.commit(session_id, record, *args, **kwargs)
        if self._meanwhile is not None and self._where(session_id, record):
            meanwhile, self._meanwhile = self._meanwhile, None
            try:
                self.outcome = meanwhile()
            except Exception as exc:  # noqa: BLE001 - the other firing's answer is the test's to read
                self.outcome = exc
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def is_claim_of(session_id: str) -> Callable[[str, Any], bool]:
    """``where`` for :class:`CommitThen`: the commit that claims ``session_id`` (status ``running``)."""
    return lambda sid, record: sid == session_id and record.status == SessionStatus.RUNNING


def tokens_in(store: Any, session_id: str) -> list[str]:
    """The ``<<X>>`` tokens of the session's user messages, in order (where deliveries land)."""
    rec = store.load(session_id)
    if rec is None:
        return []
    return [t for m in rec.messages if m.role == "user" for t in TOKEN.findall(m.content)]


def unleased_running(store: Any, *session_ids: str) -> list[str]:
    """Sessions left ``running`` with no lease at all: nobody is working on them and nothing marks them."""
    out = []
    for sid in session_ids:
        rec = store.load(sid)
        if rec is not None and rec.status == SessionStatus.RUNNING and rec.lease is None:
            out.append(sid)
    return out


# ---------------------------------------------------------------------- tool-call order, per wire format


def order_problems(messages: list[Message]) -> list[str]:
    """The stored transcript's rule: each assistant message's tool calls are answered by the tool
    messages directly after it, in order, and no tool message stands anywhere else."""
    problems: list[str] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role == "assistant" and m.tool_calls:
            ids = [c.id for c in m.tool_calls]
            got = [x.tool_call_id for x in messages[i + 1 : i + 1 + len(ids)] if x.role == "tool"]
            if got != ids:
                problems.append(f"message {i} calls {ids}, the next messages answer {got}")
            i += 1 + len(ids)
            continue
        if m.role == "tool":
            problems.append(f"tool message {i} answers no call right before it")
        i += 1
    return problems


def openai_order_problems(kwargs: dict[str, Any]) -> list[str]:
    """OpenAI chat completions: an assistant message with ``tool_calls`` must be followed by one
    ``tool`` message per call id before any other message."""
    messages = kwargs["messages"]
    problems: list[str] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            got = [x.get("tool_call_id") for x in messages[i + 1 : i + 1 + len(ids)] if x["role"] == "tool"]
            if sorted(got) != sorted(ids):
                problems.append(f"openai message {i} calls {ids}, answered next by {got}")
            i += 1 + len(ids)
            continue
        if m["role"] == "tool":
            problems.append(f"openai tool message {i} answers no call right before it")
        i += 1
    return problems


def converse_order_problems(kwargs: dict[str, Any]) -> list[str]:
    """Bedrock Converse: turns alternate, and an assistant turn's ``toolUse`` ids are answered by the
    ``toolResult`` blocks of the very next (user) turn; no ``toolResult`` answers anything else."""
    turns = kwargs["messages"]
    problems: list[str] = []
    for i, turn in enumerate(turns):
        if i and turns[i - 1]["role"] == turn["role"]:
            problems.append(f"converse turns {i - 1} and {i} are both {turn['role']}")
        asked = [b["toolUse"]["toolUseId"] for b in turn["content"] if "toolUse" in b]
        results = [b["toolResult"]["toolUseId"] for b in turn["content"] if "toolResult" in b]
        before = [b["toolUse"]["toolUseId"] for b in turns[i - 1]["content"] if "toolUse" in b] if i else []
        if results and sorted(results) != sorted(before):
            problems.append(f"converse turn {i} answers {results}, the turn before asked {before}")
        if asked:
            nxt = turns[i + 1]["content"] if i + 1 < len(turns) else None
            answered = [b["toolResult"]["toolUseId"] for b in nxt if "toolResult" in b] if nxt else None
            if nxt is not None and sorted(answered or []) != sorted(asked):
                problems.append(f"converse turn {i} asks {asked}, the next turn answers {answered}")
    return problems


def request_order_problems(request: ModelRequest) -> list[str]:
    """Every adapter's view of one request: the engine's messages (what ``ScriptedModel`` reads), the
    OpenAI chat request and the Bedrock Converse request built from it."""
    return (
        [f"request: {p}" for p in order_problems(list(request.messages))]
        + openai_order_problems(to_chat(request, "gpt-test"))
        + converse_order_problems(to_converse(request, "amazon.nova-lite-v1:0", max_tokens=256))
    )


__all__ = [
    "CALLER",
    "CALLER_DONE",
    "CHILD",
    "LEASE_TTL_S",
    "PARK_TEXT",
    "CommitThen",
    "PairModel",
    "converse_order_problems",
    "is_claim_of",
    "openai_order_problems",
    "order_problems",
    "request_order_problems",
    "tokens_in",
    "unleased_running",
    "wire_id",
    "workspace",
]
