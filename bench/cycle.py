"""One park/resume cycle end to end, as the deployed stack runs it, counted and priced: issue 24's table.

Run: ``make bench`` (or ``.venv/bin/python bench/cycle.py [--window 4]``).

One moto server serves the stack and the peer in the same run. The stack is template.yaml's: the
sessions table with its change stream, the inbox table, the bucket, an event bus. Each Lambda
*container* is a separately built set of collaborators (``archmax.hosting.wiring``, the
composition root ``functions/*/app.py`` use, with the bench model and a shared fake clock) under
the handler app.py builds (``archmax.handlers.<function>.build``, without the Powertools telemetry
wrapper, which makes no AWS API call): its own ``AwsStore`` with its own (cold) cache. A *warm* container served the previous cycle; a
*cold* one never saw the session. Paths, each a cycle that resumes a parked session and parks it again:

* **deliver**: the deliver function's ``POST /sessions/{id}/deliveries`` (``events/apigw_deliver.json``).
* **webhook**: the send function's ``POST /sessions/{id}/messages`` accepts (inbox), the waker's
  ``lambda:Invoke`` (counted as a call and billed as the drain's request; made in-process here),
  then ``{"drain": id}`` in *another* send container, as Lambda places an async invocation.
* **timer**: the clock passes the park's ``resume_at``; the timer function's 1-minute sweep
  (``events/scheduled_sweep.json``) wakes it. The whole sweep is this cycle's share (one due park
  per sweep: the worst case; the per-minute sweep with nothing due is not charged to any cycle).
* every path then runs the **outbound function** on the stream records the cycle's commits
  produced, read from moto's DynamoDB Streams (``GetShardIterator``/``GetRecords``, free for a
  Lambda trigger, so not counted), filtered by the template's ``FilterCriteria``, one batch.
* **public API**: ``create_agent(bench/waiter, AwsStore)`` ``deliver`` on a warm store, nothing else.
* **peer**: LangGraph + ``DynamoDBSaver`` (bench/peers.py's table and saver defaults) given its fairest
  setup: the same workload as a one-node graph (a park ends the run; the next input resumes the
  thread: one super-step per cycle), one Lambda invocation per cycle, on the saver's default
  durability and with ``durability="exit"``. No lifecycle events: it has no outbound side.

Every AWS call is counted with botocore hooks (``bench/_meter.py``) and priced by ``bench/cost.py``.
Transcripts at ~10 and ~1,000 messages (a session grown by an unmetered agent first, its outbox entries
sent by an unmetered outbound invocation, as the stack would have sent them). Goal rows
from issue 24 are marked met or NOT met. No time is measured or asserted.

Rule source: issue 24 goals 1 (cost model), 2 (calls per cycle) and 5 (an honest bench); DESIGN.md §7.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from _aws import BUCKET, PREFIX, REPO, SESSIONS_TABLE, AwsEnv, MotoServer, template
from _meter import Meter, WriteKind
from _stream import SENDER_SERVICES, SETTINGS, Stream, check_batch, outbound_handler, streamed_env
from _workload import AGAIN_MESSAGE, PARK_MESSAGE, START, WORKFLOW, WaiterModel
from cost import Bill, LambdaAssumptions, price_table

from archmax import FakeClock, ModelRequest, ModelResponse, ToolCall, Usage, create_agent
from archmax.stores.aws import AwsStore
from archmax.testing import FakeLambdaContext

T0 = "2025-01-01T00:00:00.000Z"
EVENTS = REPO / "events"
LENGTHS = (10, 1000)  # transcript lengths (messages); --lengths overrides
GOAL_DOLLARS = 9.0
GOAL_CALLS = {"deliver": 4, "webhook": 5, "public": 2}


class CycleModel(WaiterModel):
    """bench/_workload's model, which also parks again when a timer wakes the session (the timer cycle)."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1] if request.messages else None
        if last is not None and last.role == "tool" and "'timer' arrived" in last.content:
            call = ToolCall(
                id=f"call_{len(request.messages)}", name="archmax_wait", args={"reason": "bench", "until": "1d"}
            )
            return ModelResponse(
                text="waiting", tool_calls=[call], usage=Usage(input_tokens=1, output_tokens=1),
                stop_reason="tool_use", model_id=self.name,
            )  # fmt: skip
        return super().complete(request)


MODEL = CycleModel()


def _event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


def _http(name: str, session_id: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """An ``events/`` API Gateway v2 request re-aimed at ``session_id`` with a JSON ``body``."""
    event = copy.deepcopy(_event(name))
    raw = f"/sessions/{session_id}/{path}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = raw
    event["pathParameters"] = {"id": session_id}
    event["headers"]["idempotency-key"] = f"bench-{uuid.uuid4().hex[:16]}"
    event["body"], event["isBase64Encoded"] = json.dumps(body), False
    return event


@dataclass
class Container:
    """One Lambda container: a function's handler over collaborators built for it alone."""

    function: str
    handle: Callable[[Any, Any], Any]


@dataclass
class Stack:
    """template.yaml's stack on moto; builds containers and runs their invocations, metered."""

    server: MotoServer
    meter: Meter
    clock: FakeClock
    env: AwsEnv = field(init=False)
    pending: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env = streamed_env(self.server)
        self.clients = {s: self.meter.attach(self.server.new_client(s)) for s in SENDER_SERVICES}
        self.stream = Stream(self.server.new_client("dynamodbstreams"), self.env.dynamodb)
        self.settings = dict(SETTINGS)

    def container(self, function: str) -> Container:
        """A new container of ``function`` (deliver, send, timer or outbound): nothing cached."""
        from archmax.hosting.wiring import from_environment

        if function == "outbound":
            return Container(function, outbound_handler(self.settings, self.clock, self.clients))
        import importlib

        module = importlib.import_module(f"archmax.handlers.{function}")

        def wake(session_id: str, function: str = function) -> None:  # the async self-invoke
            self.meter.note_call("lambda.Invoke")
            self.pending.append((function, session_id))

        settings = {**self.settings, "AWS_LAMBDA_FUNCTION_NAME": f"bench-{function}"}
        collaborators = from_environment(settings, model=MODEL, clock=self.clock, waker=wake, clients=self.clients)
        return Container(function, module.build(collaborators))

    def invoke(self, container: Container, event: Any) -> Any:
        """One billed invocation of ``container``."""
        self.meter.invoked(container.function)
        self.meter.running = container.function
        try:
            return container.handle(event, FakeLambdaContext())
        finally:
            self.meter.running = None

    def outbound(self, container: Container) -> None:
        """Hand the outbound function the records the cycle's commits produced (one batch)."""
        records = self.stream.records()
        if records:
            check_batch(self.invoke(container, {"Records": records}))


def _parked(kind: str, where: str) -> None:
    if kind != "parked":
        raise RuntimeError(f"{where}: expected the session to park again, got {kind!r}")


class Paths:
    """The archmax cycle paths over one stack; ``warm`` keeps containers across cycles."""

    def __init__(self, stack: Stack, warm: bool) -> None:
        self.stack, self.warm = stack, warm
        self._kept: dict[str, Container] = {}

    def _container(self, role: str, function: str) -> Container:
        if not self.warm:
            return self.stack.container(function)
        if role not in self._kept:
            self._kept[role] = self.stack.container(function)
        return self._kept[role]

    def deliver(self, sid: str) -> None:
        event = _http("apigw_deliver.json", sid, "deliveries", {"trigger": "event", "message": AGAIN_MESSAGE})
        answer = self.stack.invoke(self._container("deliver", "deliver"), event)
        if answer["statusCode"] != 200:
            raise RuntimeError(f"deliver answered {answer['statusCode']}: {answer.get('body')}")
        _parked(json.loads(answer["body"])["kind"], "deliver")
        self.stack.outbound(self._container("outbound", "outbound"))

    def webhook(self, sid: str) -> None:
        event = _http("apigw_send_message.json", sid, "messages", {"message": AGAIN_MESSAGE})
        answer = self.stack.invoke(self._container("accept", "send"), event)
        if answer["statusCode"] != 202:
            raise RuntimeError(f"send answered {answer['statusCode']}: {answer.get('body')}")
        self._drain("drain")
        self.stack.outbound(self._container("outbound", "outbound"))

    def timer(self, sid: str) -> None:
        self.stack.clock.advance(timedelta(days=2))  # past the park's resume_at (until: 1d)
        answer = self.stack.invoke(self._container("timer", "timer"), _event("scheduled_sweep.json"))
        due = answer.get("report", {}).get("due", [])
        if [tuple(d) for d in due] != [(sid, "parked")]:
            raise RuntimeError(f"the sweep did not wake and re-park {sid}: {answer}")
        self._drain("timer-drain")
        self.stack.outbound(self._container("outbound", "outbound"))

    def _drain(self, role: str) -> None:
        """Run each queued self-invoke ``{"drain": id}`` in the ``role`` container of the function it names."""
        while self.stack.pending:
            fn, sid = self.stack.pending.pop(0)
            answer = self.stack.invoke(self._container(role, fn), {"drain": sid})
            kinds = [d.get("kind") for d in answer.get("drained", [])]
            if not kinds or kinds[-1] != "parked":
                raise RuntimeError(f"the drain did not re-park {sid}: {answer}")


@dataclass
class Measured:
    """Calls and bill over ``cycles`` cycles of one row at one transcript length."""

    calls: Counter[str]
    bill: Bill
    cycles: int
    messages: int
    failed: Counter[str] = field(default_factory=Counter)
    by_function: Counter[str] = field(default_factory=Counter)
    """Calls made inside each function's invocations, by ``"<function> <service>.<Operation>"``."""
    writes: dict[tuple[str, str, str], WriteKind] = field(default_factory=dict)
    """Write units by ``(function, operation, item kind)`` (``bench/_meter.py``)."""

    def function_calls(self, function: str) -> Counter[str]:
        """The calls made inside ``function``'s invocations, by operation."""
        return Counter({k.split(" ", 1)[1]: n for k, n in self.by_function.items() if k.split(" ", 1)[0] == function})

    @property
    def calls_per_cycle(self) -> float:
        return sum(self.calls.values()) / self.cycles

    def dollars_per_million(self, lam: LambdaAssumptions) -> float:
        return self.bill.total(lam=lam) / self.cycles * 1e6

    def detail(self) -> str:
        calls = ", ".join(f"{op}×{n / self.cycles:.3g}" for op, n in sorted(self.calls.items()))
        failed = ", ".join(f"{op}×{n / self.cycles:.3g}" for op, n in sorted(self.failed.items()))
        return calls + (f" (of which failed: {failed})" if failed else "")


def _grow(agent: Any, sid: str, length: int) -> int:
    outcome = agent.workflow.send(sid, PARK_MESSAGE, trigger=START)
    while len(outcome.messages) < length:
        outcome = agent.workflow.deliver(sid, trigger="event", message=AGAIN_MESSAGE)
    return len(outcome.messages)


def _window(meter: Meter, cycles: int, run: Callable[[], None], messages: int) -> Measured:
    meter.reset()
    for _ in range(cycles):
        run()
    calls, bill = meter.reset()
    return Measured(calls, bill, cycles, messages, meter.ended_failed, meter.ended_by_function, meter.ended_writes)


ROWS = (  # (row, path, warm containers); the timer row first (see archmax_rows)
    ("timer (sweep), warm", "timer", True),
    ("deliver, warm container", "deliver", True),
    ("deliver, cold container", "deliver", False),
    ("webhook (send → drain), warm", "webhook", True),
    ("webhook (send → drain), cold", "webhook", False),
    ("public API, warm store", "public", True),
)


def archmax_rows(server: MotoServer, window: int, lengths: tuple[int, ...]) -> dict[str, dict[int, Measured]]:
    """Each archmax path at each transcript length: a fresh stack, a session grown unmetered, then metered cycles.

    The shortest length gets a session per row (so each starts at ~that length); longer ones share one
    session across rows in turn (growing it is the slow part; each row adds a few dozen messages).
    """
    out: dict[str, dict[int, Measured]] = {}
    shadow = server.new_client("dynamodb")
    for length in lengths:
        meter = Meter(shadow)
        clock = FakeClock(T0)
        stack = Stack(server, meter, clock)
        grower = create_agent(WORKFLOW, stack.env.store(), MODEL, clock=clock, outbound=False)
        public_store = AwsStore(
            SESSIONS_TABLE, BUCKET, PREFIX, dynamodb_client=stack.clients["dynamodb"], s3_client=stack.clients["s3"]
        )
        public = create_agent(WORKFLOW, public_store, MODEL, clock=clock, outbound=False)
        # The timer row first: its sweeps would wake every parked session of the table.
        for name, path, warm in ROWS:
            if length == min(lengths):
                sid = f"{path}-{length}-{'warm' if warm else 'cold'}"
                _grow(grower, sid, length)
            else:
                sid = f"long-{length}"
                if name == ROWS[0][0]:
                    _grow(grower, sid, length)
            messages = len(stack.env.store().load(sid).messages)  # an unmetered read
            # The growth's entries sent as the deployed stack's outbound function would have sent them
            # (their result records are what lets a commit drop them, issue 20); _window's meter starts after.
            stack.outbound(stack.container("outbound"))
            if path == "public":
                run = functools.partial(_public_cycle, public, sid)
            else:
                run = functools.partial(getattr(Paths(stack, warm=warm), path), sid)
            run()  # warm-up: the warm containers (and the public store) serve this cycle first
            out.setdefault(name, {})[length] = _window(meter, window, run, messages)
    return out


def _public_cycle(agent: Any, sid: str) -> None:
    _parked(agent.workflow.deliver(sid, trigger="event", message=AGAIN_MESSAGE).kind, "public API")


def one_node_graph(checkpointer: Any) -> Any:
    """The workload as the peer's cheapest graph: one model node, START → model → END.

    A park is the run ending after the wait tool's messages; a resume is the next input on the
    same thread. One super-step per cycle, so the fewest checkpoints the saver can write.
    """
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, MessagesState, StateGraph
    from langgraph.graph import START as GRAPH_START

    def model(state):  # no annotations: LangGraph reads them at run time
        last = state["messages"][-1]
        if isinstance(last, HumanMessage) and "wait" in str(last.content):
            call = {"name": "wait", "args": {"reason": "bench", "until": "1d"}, "id": f"call_{len(state['messages'])}"}
            return {
                "messages": [
                    AIMessage(content="", tool_calls=[call]),
                    ToolMessage(content="parked", tool_call_id=call["id"]),
                    AIMessage(content="waiting"),
                ]
            }
        return {"messages": [AIMessage(content="done")]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_edge(GRAPH_START, "model")
    graph.add_edge("model", END)
    return graph.compile(checkpointer=checkpointer)


def _peer(server: MotoServer) -> Any:
    """bench/peers.py's peer (its table, its ``DynamoDBSaver`` defaults) on the one-node graph."""
    from langchain_core.messages import HumanMessage
    from peers import Peer

    class OneNodePeer(Peer):
        def __init__(self, env: AwsEnv, endpoint_url: str) -> None:
            super().__init__(env, endpoint_url)
            self.graph = one_node_graph(self.saver)

        def cycle(self, sid: str) -> int:
            return self._run(sid, {"messages": [HumanMessage(content=AGAIN_MESSAGE)]})

    return OneNodePeer(server.fresh(), server.endpoint_url)


def peer_rows(server: MotoServer, window: int, lengths: tuple[int, ...]) -> dict[str, dict[int, Measured]]:
    """The peer in both modes on one thread per length, one Lambda invocation per cycle.

    The thread is grown with ``durability="exit"`` (unmetered; the state it reaches is the same),
    then metered on the saver's defaults, then with ``durability="exit"``.
    """
    out: dict[str, dict[int, Measured]] = {}
    shadow = server.new_client("dynamodb")
    for length in lengths:
        meter = Meter(shadow)
        peer = _peer(server)
        meter.attach(peer.saver.client)
        sid = f"peer-{length}"
        peer.durability = "exit"
        messages = peer.start(sid)
        while messages < length:
            messages = peer.cycle(sid)
        for name, durability in (("peer: LangGraph + DynamoDBSaver", None), ('peer, durability="exit"', "exit")):
            peer.durability = durability

            def run(peer: Any = peer, sid: str = sid, meter: Meter = meter) -> None:
                meter.invoked("peer")
                peer.cycle(sid)

            run()  # the first cycle in this mode is not measured (as archmax's warm-up)
            out.setdefault(name, {})[length] = _window(meter, window, run, messages + 4)
            messages += 4 * (window + 1)
    return out


# ---------------------------------------------------------------------- printing


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def report(rows: dict[str, dict[int, Measured]], lam: LambdaAssumptions, window: int, lengths: tuple[int, ...]) -> None:
    small, large = min(lengths), max(lengths)
    print(
        f"Issue 24: one park/resume cycle end to end (handler + drain + lambda:Invoke + outbound + sweep share),"
        f" one moto server, one run; mean of {window} cycles per cell"
    )
    header = ["per park/resume cycle", f"calls @~{small}", f"calls @~{large}",
              f"outbound calls @~{small}", f"outbound calls @~{large}", f"$/1M @~{small}", f"$/1M @~{large}",
              f"WRU @~{small}", f"WRU @~{large}", "invocations"]  # fmt: skip
    body = []
    for name, by_length in rows.items():
        a, b = by_length[small], by_length[large]
        inv = " + ".join(f"{fn}×{n / a.cycles:g}" for fn, n in sorted(a.bill.invocations.items())) or "-"
        body.append([
            name, f"{a.calls_per_cycle:.1f}", f"{b.calls_per_cycle:.1f}",
            f"{a.function_calls('outbound').total() / a.cycles:.1f}",
            f"{b.function_calls('outbound').total() / b.cycles:.1f}",
            f"{a.dollars_per_million(lam):.2f}", f"{b.dollars_per_million(lam):.2f}",
            f"{a.bill.wru / a.cycles:.1f}", f"{b.bill.wru / b.cycles:.1f}", inv,
        ])  # fmt: skip
    _table(header, body)
    print()

    def worst(prefix: str, what: Callable[[Measured], float], length: int | None = None) -> float:
        """The largest ``what`` over the rows named ``prefix...`` (at ``length``, else at every length)."""
        return max(
            what(m)
            for name, by in rows.items()
            if name.startswith(prefix)
            for at, m in by.items()
            if length is None or at == length
        )

    dollars = lambda m: m.dollars_per_million(lam)  # noqa: E731
    calls = lambda m: m.calls_per_cycle  # noqa: E731
    wru = lambda m: m.bill.wru / m.cycles  # noqa: E731
    exit_wru = {at: wru(m) for at, m in rows['peer, durability="exit"'].items()}
    ours_wru = {at: max(worst("deliver", wru, at), worst("webhook", wru, at)) for at in exit_wru}
    goals = [
        [f"≤ $9 per 1M cycles, deliver path (~{small} and ~{large} msgs)", f"${worst('deliver', dollars):.2f} (worst)", _verdict(worst("deliver", dollars) <= GOAL_DOLLARS)],
        ["≤ $9 per 1M cycles, webhook path", f"${worst('webhook', dollars):.2f} (worst)", _verdict(worst("webhook", dollars) <= GOAL_DOLLARS)],
        ["≤ 4 AWS calls per cycle end to end, deliver (warm or cold)", f"{worst('deliver', calls):.1f} (worst)", _verdict(worst("deliver", calls) <= GOAL_CALLS["deliver"])],
        ["≤ 5 AWS calls per cycle end to end, webhook", f"{worst('webhook', calls):.1f} (worst)", _verdict(worst("webhook", calls) <= GOAL_CALLS["webhook"])],
        ["≤ 2 AWS calls per cycle, public API, warm store", f"{worst('public', calls):.1f} (worst)", _verdict(worst("public", calls) <= GOAL_CALLS["public"])],
        ["WRU per cycle below the peer-exit's at the same length (deliver, webhook; worst)",
         "; ".join(f"@~{at}: {ours_wru[at]:.1f} vs {exit_wru[at]:.1f}" for at in sorted(exit_wru)),
         _verdict(all(ours_wru[at] < exit_wru[at] for at in exit_wru))],
    ]  # fmt: skip
    _table(["goal (issue 24)", "measured", ""], goals)
    print()
    for line in price_table(lam=lam):
        print(line)
    print()
    print(f"Where the money goes ($ per 1M cycles by line, ~{large} messages):")
    for name, by_length in rows.items():
        m = by_length[large]
        lines = {k: v / m.cycles * 1e6 for k, v in m.bill.dollars(lam=lam).items() if v}
        print(f"  {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in lines.items()))
    print(f"Calls per cycle in detail (~{small} / ~{large} messages; lambda.Invoke is the waker's self-invoke):")
    for name, by_length in rows.items():
        print(f"  {name}: {by_length[small].detail()}")
        print(f"  {' ' * len(name)}  {by_length[large].detail()}")
    print(f"Outbound function calls per cycle (~{small} / ~{large} messages):")
    for name, by_length in rows.items():
        parts = [
            ", ".join(f"{op}×{n / m.cycles:.3g}" for op, n in sorted(m.function_calls("outbound").items())) or "-"
            for m in (by_length[small], by_length[large])
        ]
        if parts != ["-", "-"]:
            print(f"  {name}: {parts[0]} / {parts[1]}")
    _write_units(rows, small)
    print(
        "Transcript lengths (messages at the start of the window): "
        + "; ".join(f"{name} {by[small].messages}/{by[large].messages}" for name, by in rows.items())
    )


def _write_units(rows: dict[str, dict[int, Measured]], length: int) -> None:
    """Per row: the write units of a cycle by function, operation and item kind (item, then each index)."""
    print(f"Where the write units go (per cycle, ~{length} messages; function operation item: units [largest image]):")
    for name, by_length in rows.items():
        m = by_length[length]
        parts = []
        for (function, op, kind), w in sorted(m.writes.items()):
            indexes = " ".join(f"+{n / m.cycles:.2g} {index}" for index, n in sorted(w.index_units.items()))
            parts.append(
                f"{function} {op}×{w.writes / m.cycles:.2g} {kind}: {w.table_units / m.cycles:.2g}"
                + (f" {indexes}" if indexes else "")
                + f" [{w.largest:,} B]"
            )
        if parts:
            print(f"  {name}:")
            for part in parts:
                print(f"    {part}")


FUNCTIONS = {
    "deliver": "DeliverFunction",
    "send": "SendFunction",
    "timer": "TimerFunction",
    "outbound": "OutboundFunction",
}
"""The bench's function names and their template.yaml logical ids (the peer's runs at the Globals memory)."""


def lambda_assumptions(tpl: dict[str, Any], duration_ms: float) -> LambdaAssumptions:
    """Memory from template.yaml: the Globals MemorySize, and each function's own where it sets one."""
    own = {
        name: int(memory)
        for name, logical in FUNCTIONS.items()
        if (memory := tpl["Resources"][logical]["Properties"].get("MemorySize")) is not None
    }
    return LambdaAssumptions(
        memory_mb=int(tpl["Globals"]["Function"]["MemorySize"]), duration_ms=duration_ms, per_function=own
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=3, help="metered cycles per row and length")
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="transcript lengths (messages)")
    parser.add_argument("--duration-ms", type=float, default=100.0, help="assumed billed ms per Lambda invocation")
    args = parser.parse_args(argv)
    lengths = tuple(int(n) for n in args.lengths.split(",") if n)
    lam = lambda_assumptions(template(), args.duration_ms)
    server = MotoServer()
    try:
        print("cycle: archmax paths ...", file=sys.stderr, flush=True)
        rows = archmax_rows(server, args.window, lengths)
        print("cycle: the peer ...", file=sys.stderr, flush=True)
        rows.update(peer_rows(server, args.window, lengths))
    finally:
        server.stop()
    report(rows, lam, args.window, lengths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
