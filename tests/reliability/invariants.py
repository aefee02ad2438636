"""The invariants every schedule must keep, checked on what the stores hold after recovery.

Each check raises :class:`Violation` (an AssertionError) naming the session and what broke; the
schedule counts it before hypothesis shrinks it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from archmax.hosting.inbox_base import queue_id
from archmax.session.notes import runtime_note_kind
from archmax.session.records import Checkpoint, Message, SessionStatus
from archmax.stores.base import head_of

from .model import FINAL, is_instruction, is_model_answer

TOKEN = re.compile(r"\bev(\d+)\b")


class Violation(AssertionError):
    """An invariant broke."""


def check(condition: bool, text: str) -> None:
    if not condition:
        raise Violation(text)


@dataclass
class Event:
    """One firing the schedule made, and what its caller learned.

    ``status``: ``applied`` (an Outcome, or a duplicate of an applied id), ``refused`` (a typed
    refusal: nothing applied), ``doubt`` (a fault cut the call short: applied at most once, and
    exactly once when it carries a delivery id and its caller retried).
    """

    n: int
    session_id: str
    channel: str
    delivery_id: str | None
    act: str
    status: str = "doubt"
    file_var: str | None = None
    file_text: str | None = None
    target: str | None = None
    """A decision's edge."""
    tries: int = 0
    via_inbox: bool = False
    """A copy went to the inbox (perhaps: a put cut short may have landed)."""

    @property
    def token(self) -> str:
        return f"ev{self.n}"


@dataclass
class InboxRecord:
    """An item the schedule put in the inbox (``fresh``: its event was not applied or in doubt before)."""

    event: Event
    fresh: bool
    delivery_id: str
    """The item's key: the event's delivery id, or the one ``Host.accept`` minted."""


@dataclass
class Ledger:
    """Everything a schedule did, for the checks."""

    events: dict[int, Event] = field(default_factory=dict)
    inboxed: list[InboxRecord] = field(default_factory=list)

    def new(self, session_id: str, channel: str, delivery_id: str | None, act: str) -> Event:
        event = Event(len(self.events) + 1, session_id, channel, delivery_id, act)
        self.events[event.n] = event
        return event


def applied_tokens(messages: Iterable[Message]) -> list[int]:
    """Event numbers in the order their instructions appear in the transcript."""
    return [int(m) for msg in messages if is_instruction(msg) for m in TOKEN.findall(msg.content)]


def check_exactly_once(ledger: Ledger, records: dict[str, Checkpoint]) -> None:
    """Each applied event once; each refused one never; each in-doubt one at most once."""
    seen: Counter[int] = Counter()
    for rec in records.values():
        seen.update(applied_tokens(rec.messages))
    for event in ledger.events.values():
        count = seen[event.n]
        where = f"event {event.token} ({event.channel}, delivery id {event.delivery_id!r}) on {event.session_id}"
        if event.status == "applied":
            check(count == 1, f"{where} was accepted but applied {count} times")
        elif event.status == "refused":
            check(count == 0, f"{where} was refused but applied {count} times")
        else:
            check(count <= 1, f"{where} (outcome unknown to its caller) applied {count} times")


def check_inbox(ledger: Ledger, inbox: Any, records: dict[str, Checkpoint]) -> None:
    """No inboxed event is pending or failed after recovery; fresh ones applied once, in arrival order."""
    by_session: dict[str, list[tuple[int, int]]] = {}
    for record in ledger.inboxed:
        event = record.event
        item = inbox.get(queue_id(event.session_id), record.delivery_id)
        where = f"inbox item {record.delivery_id!r} ({event.token}) of {event.session_id}"
        check(item is not None, f"{where} was accepted but is not in the inbox")
        check(item.status != "pending", f"{where} is still pending after recovery: lost")
        check(item.status != "failed", f"{where} was accepted but marked failed: {item.error}")
        rec = records.get(event.session_id)
        tokens = applied_tokens(rec.messages) if rec else []
        # A caller parked through its child forwards the event to the child, and one addressed to a child
        # reaches the pair through its caller (§5.10): the caller and its children count together.
        root = event.session_id.split("~", 1)[0]
        family = [
            n
            for sid, r in records.items()
            if sid != event.session_id and sid.split("~", 1)[0] == root
            for n in applied_tokens(r.messages)
        ]
        count = tokens.count(event.n) + family.count(event.n)
        check(count == 1, f"{where} is done but its event was applied {count} times")
        if record.fresh and event.n in tokens:  # arrival order within the session's own transcript
            by_session.setdefault(event.session_id, []).append((item.seq, tokens.index(event.n)))
    for sid, pairs in by_session.items():
        positions = [pos for _seq, pos in sorted(pairs)]
        check(positions == sorted(positions), f"inbox events of {sid} applied out of arrival order: {sorted(pairs)}")


def check_transcript(rec: Checkpoint) -> None:
    """Tool calls answered right after their message; one outcome per instruction; timers wake their park."""
    sid, msgs = rec.session_id, rec.messages
    i = 0
    while i < len(msgs):
        message = msgs[i]
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            answers = [m.tool_call_id for m in msgs[i + 1 : i + 1 + len(ids)] if m.role == "tool"]
            check(answers == ids, f"{sid}: tool calls {ids} at message {i} are answered by {answers} right after")
            i += 1 + len(ids)
            continue
        check(message.role != "tool", f"{sid}: tool message {i} answers no call right before it")
        i += 1
    finals = 0
    timer_armed = False
    for index, message in enumerate(msgs):
        if is_instruction(message):
            if runtime_note_kind(message) == "event" and "'timer' arrived" in message.content:
                check(timer_armed, f"{sid}: a timer woke a park that had no until (message {index})")
            finals, timer_armed = 0, False
        elif is_model_answer(message) and not message.tool_calls and message.content == FINAL:
            finals += 1
            check(finals == 1, f"{sid}: the final answer to one event was produced twice (message {index})")
        elif message.role == "tool" and message.name == "archmax_wait" and message.status == "success":
            call = _call_of(msgs, message.tool_call_id)
            timer_armed = call is not None and bool(call.args.get("until"))


def _call_of(msgs: list[Message], call_id: str | None) -> Any:
    for m in msgs:
        for call in m.tool_calls:
            if call.id == call_id:
                return call
    return None


def reply_tokens(msgs: list[Message]) -> set[int]:
    """Events applied as replies at a decision park (§3.6: their files are dropped, by rule)."""
    out: set[int] = set()
    at_decision = False
    for message in msgs:
        if message.role == "tool" and message.name == "archmax_advance" and message.status == "success":
            call = _call_of(msgs, message.tool_call_id)
            at_decision = call is not None and call.args.get("to") == "review"
        elif runtime_note_kind(message) == "decision":
            at_decision = False
        elif message.role == "user" and at_decision:
            out.update(int(m) for m in TOKEN.findall(message.content))
    return out


def check_files(ledger: Ledger, store: Any, records: dict[str, Checkpoint]) -> None:
    """Every event applied as a turn or a delivery has its file: a session variable naming the placed bytes."""
    for event in ledger.events.values():
        if event.file_var is None:
            continue
        rec = records.get(event.session_id)
        applied = rec is not None and event.n in applied_tokens(rec.messages)
        if not applied or event.n in reply_tokens(rec.messages):
            continue
        var = rec.variables.get(event.file_var)
        check(var is not None, f"{event.token} was applied to {event.session_id} without its file variable")
        data = store.get(event.session_id, var.value)
        check(
            data == event.file_text.encode(),
            f"{event.token}: file {var.value!r} of {event.session_id} holds {data!r}",
        )


def check_settled(records: dict[str, Checkpoint], now: str) -> None:
    """No session left running (or holding a live lease) after recovery."""
    for sid, rec in records.items():
        check(rec.status != SessionStatus.RUNNING, f"{sid} is still running after recovery")
        check(rec.lease is None or not rec.lease.live_at(now), f"{sid} still holds a live lease after recovery")


def check_indexes(agent: Any, store: Any, records: dict[str, Checkpoint], instants: list[str]) -> None:
    """Heads, summaries, list, due and stale agree with the checkpoints."""
    listed = store.list()
    check(sorted(listed) == sorted(records), f"list() gives {sorted(listed)}, checkpoints exist for {sorted(records)}")
    for sid, rec in records.items():
        head = store.head(sid)
        check(head == head_of(rec), f"{sid}: head {head} disagrees with checkpoint v{rec.version}")
        summary = agent.sessions.get(sid)
        check(summary is not None and summary.status == rec.status, f"{sid}: summary {summary} vs status {rec.status}")
    for now in instants:
        due = {sid for sid, _ in store.due(now)}
        want_due = {
            sid
            for sid, rec in records.items()
            if rec.status == SessionStatus.AWAITING_INPUT and rec.resume_at is not None and rec.resume_at <= now
        }
        check(due == want_due, f"due({now}) = {sorted(due)}, checkpoints say {sorted(want_due)}")
        stale = set(store.stale(now))
        want_stale = {
            sid
            for sid, rec in records.items()
            if rec.status == SessionStatus.RUNNING
            and (rec.lease.expires_at <= now if rec.lease else rec.updated_at <= now)
        }
        check(stale == want_stale, f"stale({now}) = {sorted(stale)}, checkpoints say {sorted(want_stale)}")


def check_outbox(committed: set[str], sent: list[str], unrecorded: set[str], recorded: set[str]) -> None:
    """Every committed outbox entry sent exactly once (issue 20), whatever crashed, failed or raced.

    Keys are ``<session>/<entry id>``. ``committed``: entries of the commits this process saw apply,
    and every entry the final records hold; ``sent``: the provider's takings in this process;
    ``recorded``: entries whose sent record is stored (a process that was killed sent those). An
    entry whose sent record a fault cut (``unrecorded``) may go out twice, the documented window,
    never more.
    """
    counts = Counter(sent)
    for key in sorted(committed):
        check(counts[key] >= 1 or key in recorded, f"outbox entry {key} was committed but never sent")
    for key, count in sorted(counts.items()):
        allowed = 2 if key in unrecorded else 1
        check(count <= allowed, f"outbox entry {key} was sent {count} times (at most {allowed})")


# --------------------------------------------------------------------------- caller and child (issue 22)


def order_problems(messages: list[Message]) -> list[str]:
    """The stored transcript's rule: each assistant message's tool calls are answered by the tool
    messages directly after it, in order, and no tool message stands anywhere else (§5, §7)."""
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
    """OpenAI chat completions (``to_chat``): an assistant message with ``tool_calls`` is followed by one
    ``tool`` message per call id before any other message; no ``tool`` message stands elsewhere."""
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
    """Bedrock Converse (``to_converse``): turns alternate, and an assistant turn's ``toolUse`` ids are
    answered by the ``toolResult`` blocks of the very next turn; no ``toolResult`` answers anything else."""
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
        if asked and i + 1 < len(turns):
            answered = [b["toolResult"]["toolUseId"] for b in turns[i + 1]["content"] if "toolResult" in b]
            if sorted(answered) != sorted(asked):
                problems.append(f"converse turn {i} asks {asked}, the next turn answers {answered}")
    return problems


def request_order_problems(request: Any) -> list[str]:
    """Every adapter's view of one model request: the engine's messages (what ``ScriptedModel`` and the
    reactive model read), the OpenAI chat request and the Bedrock Converse request built from it."""
    from archmax.models.bedrock import to_converse
    from archmax.models.openai import to_chat

    return (
        [f"request: {p}" for p in order_problems(list(request.messages))]
        + openai_order_problems(to_chat(request, "gpt-test"))
        + converse_order_problems(to_converse(request, "amazon.nova-lite-v1:0", max_tokens=256))
    )


def check_requests(problems: list[tuple[str, str]]) -> None:
    """No model request of the schedule broke tool-call order in any adapter (collected as they were made)."""
    if problems:
        sid, text = problems[0]
        raise Violation(f"{sid}: a model request breaks tool-call order: {text} ({len(problems)} in all)")


def unleased_running(records: dict[str, Checkpoint], now: str) -> set[str]:
    """Sessions ``running`` whose lease is missing or expired at ``now``: nobody is working on them."""
    return {
        sid
        for sid, rec in records.items()
        if rec.status == SessionStatus.RUNNING and (rec.lease is None or not rec.lease.live_at(now))
    }


def check_pairs(records: dict[str, Checkpoint]) -> None:
    """After recovery, each caller and its child agree (§5.10).

    A caller parked through a child names an existing child parked on the same channel, so a finished
    child's completion reached its caller: no caller still waits on it. (A child whose caller moved on
    is an ordinary session: a firing may open a turn on it like on any finished session.)
    """
    for sid, rec in records.items():
        d = rec.delegation
        if d is not None and rec.status in (SessionStatus.AWAITING_INPUT, SessionStatus.AWAITING_DECISION):
            child = records.get(d.session_id)
            check(child is not None, f"{sid} is parked through child {d.session_id}, which does not exist")
            check(
                child.status == rec.status,
                f"{sid} is {rec.status} through child {d.session_id}, which is {child.status}: "
                "the child's news never reached its caller",
            )
