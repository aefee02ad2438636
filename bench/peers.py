"""archmax side by side with its peer, LangGraph + ``langgraph-checkpoint-aws`` ``DynamoDBSaver``: the issue-10 goal table.

Run: ``make bench`` (installs ``bench/requirements.txt`` first; they are bench-only, never the
package's), or ``.venv/bin/python bench/peers.py [--rounds 3] [--cycles 20] [--latency-ms 4]``.

One moto server on 127.0.0.1 serves both systems in the same run. Every phase and every round
starts from empty, recreated tables and bucket (``MotoServer.fresh``): moto's ``Query`` walks
the whole table, so a table that grows through the run would bias whatever runs later.

The same workload on both sides (``bench/_workload.py``): a session is started and parks on a
wait tool; a *cycle* is one resume that parks again; a *resume-and-complete* finishes it.

* **archmax, public API**: ``create_agent(bench/waiter, AwsStore(...))``, ``send`` / ``deliver``,
  measured on a warm instance (one that already ran another session: imports and clients made).
  With ``AwsStore`` nothing sends in-process (as ``hosting/wiring.py`` builds it on AWS): the
  outbound function does, from the sessions table's stream, and its result records are what let a
  commit drop settled entries from the checkpoint's outbox record (issue 20). So both archmax rows
  run on a table with the template's stream, and after every measured operation the deployed
  stack's sender (``bench/_stream.py``: moto's DynamoDB Streams read and filtered as Lambda hands
  them, the outbound handler as ``functions/outbound/app.py`` builds it) settles what that
  operation committed, before the next one starts: a sender that keeps up. Its calls go through
  clients of its own and run outside every count and timing here (the caller does not wait for
  them); ``bench/cycle.py`` counts and prices them end to end.
* **archmax, Lambda path**: what the send function and its asynchronous drain run (``Host.accept``
  with the wake deferred, then ``Host.drain`` in the same warm container). This undercounts: the
  self-invoke, the drain's own container and the outbound function are not in it;
  ``bench/cycle.py`` counts and prices the cycle end to end (issue 24).
* **peer**: a LangGraph ``StateGraph`` over ``MessagesState`` (model node, wait-tool node, a park
  node calling ``interrupt()``), compiled with ``DynamoDBSaver`` on its defaults, and the same graph
  invoked with ``durability="exit"`` (a checkpoint only when the run stops).

Rows: AWS calls per operation (botocore ``before-call`` hooks, warm), bytes written per cycle
(request bodies of write operations, all of them: checkpoints, artifacts, inbox) at a transcript
of ~10 and ~1,000 messages (each cycle counted on its own, the sender settling between; the notes
give archmax's calls per cycle over those windows, where the occasional ``outbox/`` listing shows,
and the outbox record's size after them), cycles per second at 1, 4 and 16 threads (median of ``--rounds`` rounds,
interleaved; at 4 and 16 each thread cycles its own session on one shared instance, issue 24 goal 5), AWS calls of the cheap reads, and the deliver handler's cold import against
``import boto3`` (``bench/cold_import.py``'s probe, Lambda-like environment). The last column
says whether the issue's goal is met. Nothing here is a test: no assertion about time.

The cycles/s rows are measured twice on the same server, side by side. At **0 ms** every request
is served at once by moto in this interpreter: those rows measure mostly moto's CPU (its
evaluation of the callers' update expressions, ~70% of the process's CPU in a profile), which on
AWS is the service's, not the caller's. At **``--latency-ms``** (default ``LATENCY_MS``, 4 ms)
each HTTP request first sleeps that long outside moto's one-at-a-time lock
(``_aws.RoundTripGate``), the round trip a deployed caller pays per DynamoDB or S3 call; it
applies equally to every system, so each pays for the calls it makes. 4 ms is an assumption, not
a measurement: the low single-digit milliseconds of an in-region call (S3 is often slower, which
would favour the system making fewer calls). Goal 5 is judged on the latency rows; the 0 ms rows'
ratios are printed beside them.

Rule source: issue 10 (the goal table), issue 24 goal 5 (throughput at 1/4/16 threads), DESIGN.md §7 (benchmarks side by side in one run).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _aws import POOL_CONNECTIONS, REGION, REPO, AwsEnv, CallCounter, MotoServer
from _stream import Sender, streamed_env
from _workload import AGAIN_MESSAGE, FINISH_MESSAGE, PARK_MESSAGE, START, WORKFLOW, WaiterModel, run_threads

PEER_TABLE = "bench-peer-checkpoints"
T0 = "2025-01-01T00:00:00.000Z"
MODEL = WaiterModel()
THREADS = (4, 16)  # the issue-24 throughput rows besides the single thread
SMALL, LARGE = 10, 1000  # transcript lengths (messages) for the bytes row
LATENCY_MS = 4.0  # the default round trip per AWS call of the latency rows (see the module docstring)
WINDOW = 40  # cycles measured at each length: more than a snapshot period at ~1,000 messages, so the
# amortised cost of a full snapshot (written every few dozen cycles there) is in the average, not luck


# ---------------------------------------------------------------------- the three systems


class Archmax:
    """archmax through its public API on a warm ``AwsStore`` instance, with the deployed stack's sender.

    Nothing sends in-process (the store sends from its change stream, as on AWS): :meth:`settle`
    runs the outbound function on what the last operation committed, on clients of its own.
    """

    label = "archmax (public API)"
    outbound: Any = None  # create_agent's default: with AwsStore, nothing in-process (the outbound function sends)

    def __init__(self, env: AwsEnv, server: MotoServer) -> None:
        from archmax import FakeClock, create_agent

        self.env = env
        clock = FakeClock(T0)
        self.agent = create_agent(WORKFLOW, env.store(), MODEL, clock=clock, outbound=self.outbound)
        self.clients = (env.dynamodb, env.s3)
        self.sender = Sender(server, clock)
        self._expect("parked", self.agent.workflow.send("warm-up", PARK_MESSAGE, trigger=START))
        self.settle()

    def settle(self) -> None:
        """The outbound function's batch for the last operation's commits (never counted: its own clients)."""
        self.sender.settle()

    def outbox_size(self, sid: str) -> int:
        """Entries in the session's checkpoint outbox record now (a fresh store's read, uncounted)."""
        return len(self.env.store().load(sid).outbox)

    @staticmethod
    def _expect(kind: str, outcome: Any) -> int:
        if outcome.kind != kind:
            raise RuntimeError(f"expected a {kind!r} outcome, got {outcome.kind!r}")
        return len(outcome.messages)

    def start(self, sid: str) -> int:
        return self._expect("parked", self.agent.workflow.send(sid, PARK_MESSAGE, trigger=START))

    def cycle(self, sid: str) -> int:
        return self._expect("parked", self.agent.workflow.deliver(sid, trigger="event", message=AGAIN_MESSAGE))

    def finish(self, sid: str) -> int:
        return self._expect("completed", self.agent.workflow.deliver(sid, trigger="event", message=FINISH_MESSAGE))


class ArchmaxLambda(Archmax):
    """archmax as the Lambda functions run it: ``Host.accept`` (wake deferred) then ``Host.drain``."""

    label = "archmax (Lambda path)"
    outbound = False  # as hosting/wiring.py builds it on AWS: the outbound function sends from the table's stream

    def __init__(self, env: AwsEnv, server: MotoServer) -> None:
        super().__init__(env, server)
        from archmax.hosting.host import Host

        self.host = Host(self.agent, env.inbox(self.agent.runtime.clock), waker=lambda sid: None)
        self._ids = itertools.count(1)  # next() is atomic in CPython: threads never share a delivery id

    def _fire(self, sid: str, trigger: str, message: str, kind: str, expect: str) -> int:
        from archmax.session.firing import Firing

        firing = Firing(trigger=trigger, message=message, delivery_id=f"evt-{next(self._ids)}")
        self.host.accept(firing, session_id=sid, kind=kind)  # type: ignore[arg-type]
        results = self.host.drain(sid)
        if len(results) != 1 or getattr(results[0], "kind", None) != expect:
            raise RuntimeError(f"expected one {expect!r} outcome from the drain, got {results!r}")
        return len(results[0].messages)

    def start(self, sid: str) -> int:
        return self._fire(sid, START, PARK_MESSAGE, "send", "parked")

    def cycle(self, sid: str) -> int:
        return self._fire(sid, "event", AGAIN_MESSAGE, "deliver", "parked")

    def finish(self, sid: str) -> int:
        return self._fire(sid, "event", FINISH_MESSAGE, "deliver", "completed")


def peer_graph(checkpointer: Any) -> Any:
    """The workload as a LangGraph graph: model → wait tool (+ the reply before parking) → park → model."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, MessagesState, StateGraph
    from langgraph.graph import START as GRAPH_START
    from langgraph.types import interrupt

    def model(state):  # no annotations: LangGraph reads them at run time
        last = state["messages"][-1]
        if isinstance(last, HumanMessage) and "wait" in str(last.content):
            call = {"name": "wait", "args": {"reason": "bench", "until": "1d"}, "id": f"call_{len(state['messages'])}"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="done")]}

    def route(state):
        return "tool" if getattr(state["messages"][-1], "tool_calls", None) else END

    def tool(state):
        call = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(content="parked", tool_call_id=call["id"]), AIMessage(content="waiting")]}

    def park(state):
        return {"messages": [HumanMessage(content=interrupt("bench"))]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tool", tool)
    graph.add_node("park", park)
    graph.add_edge(GRAPH_START, "model")
    graph.add_conditional_edges("model", route, ["tool", END])
    graph.add_edge("tool", "park")
    graph.add_edge("park", "model")
    return graph.compile(checkpointer=checkpointer)


class Peer:
    """LangGraph + ``DynamoDBSaver`` (its defaults), on the same moto server."""

    label = "peer"
    durability: str | None = None

    def __init__(self, env: AwsEnv, endpoint_url: str) -> None:
        import boto3
        from langgraph_checkpoint_aws import DynamoDBSaver

        env.dynamodb.create_table(
            TableName=PEER_TABLE,
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "PK", "AttributeType": "S"},
                {"AttributeName": "SK", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        session = boto3.session.Session(
            aws_access_key_id="bench", aws_secret_access_key="bench", aws_session_token="bench", region_name=REGION
        )
        from botocore.config import Config

        # the pool our clients have (botocore's default is 10: 16 threads would queue for connections)
        pool = Config(max_pool_connections=POOL_CONNECTIONS)
        self.saver = DynamoDBSaver(
            PEER_TABLE, session=session, endpoint_url=endpoint_url, region_name=REGION, boto_config=pool
        )
        self.clients = (self.saver.client,)
        self.graph = peer_graph(self.saver)
        self.start("warm-up")

    def settle(self) -> None:
        """Nothing: the peer has no outbound side."""

    def _run(self, sid: str, payload: Any) -> int:
        from langgraph.types import Command

        extra = {"durability": self.durability} if self.durability else {}
        config = {"configurable": {"thread_id": sid}}
        value = payload if isinstance(payload, dict) else Command(resume=payload)
        result = self.graph.invoke(value, config, **extra)
        return len(result["messages"])

    def start(self, sid: str) -> int:
        from langchain_core.messages import HumanMessage

        return self._run(sid, {"messages": [HumanMessage(content=PARK_MESSAGE)]})

    def cycle(self, sid: str) -> int:
        return self._run(sid, AGAIN_MESSAGE)

    def finish(self, sid: str) -> int:
        return self._run(sid, FINISH_MESSAGE)


class PeerExit(Peer):
    """The same graph invoked with ``durability="exit"``."""

    label = "peer, durability=exit"
    durability = "exit"


SYSTEMS: tuple[type, ...] = (Archmax, ArchmaxLambda, Peer, PeerExit)


# ---------------------------------------------------------------------- measuring


def _build(cls: type, server: MotoServer) -> Any:
    if issubclass(cls, Peer):
        return cls(server.fresh(), server.endpoint_url)
    return cls(streamed_env(server), server)


def _counted(system: Any, action: Callable[[], Any]) -> CallCounter:
    """The calls ``action`` makes through the system's clients; then the sender settles, uncounted."""
    with CallCounter(*system.clients) as counter:
        action()
    system.settle()
    return counter


def calls(server: MotoServer) -> dict[str, dict[str, CallCounter]]:
    """Per system: calls of start-and-park, a park/resume cycle and resume-and-complete (warm)."""
    out: dict[str, dict[str, CallCounter]] = {}
    for cls in SYSTEMS:
        system = _build(cls, server)
        out[cls.label] = {
            "start": _counted(system, lambda system=system: system.start("s-1")),
            "cycle": _counted(system, lambda system=system: system.cycle("s-1")),
            "finish": _counted(system, lambda system=system: system.finish("s-1")),
        }
    return out


def cheap_reads(server: MotoServer) -> dict[str, CallCounter]:
    """archmax's one-read operations: resolve, the summary, and a refused double-fired timer."""
    from archmax import SessionNotAwaitingInputError

    system = _build(Archmax, server)
    for op, sid in ((system.start, "parked"), (system.start, "done"), (system.finish, "done")):
        op(sid)
        system.settle()
    wf = system.agent.workflow

    def refused() -> None:
        try:
            wf.deliver("done", trigger="timer", variables={"now": T0})
        except SessionNotAwaitingInputError:
            return
        raise RuntimeError("a timer into a completed session was not refused")

    return {
        "resolve_session (parked)": _counted(system, lambda: wf.resolve_session(session_id="parked", trigger="event")),
        "sessions.get (summary)": _counted(system, lambda: system.agent.sessions.get("parked")),
        "refused double timer": _counted(system, refused),
    }


@dataclass
class Window:
    """``WINDOW`` cycles of one system at one transcript length: what its clients wrote and called."""

    messages: int
    """Transcript length at the window's start."""
    bytes_written: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    outbox: int | None = None
    """Entries in archmax's checkpoint outbox record after the window (``None`` for the peer)."""

    @property
    def bytes_per_cycle(self) -> float:
        return self.bytes_written / WINDOW

    def per_cycle(self) -> str:
        """``Operation×mean`` per cycle, sorted."""
        return ", ".join(f"{op.split('.', 1)[1]}×{n / WINDOW:.3g}" for op, n in sorted(self.calls.items()))


def _cycles(system: Any, sid: str, count: int, until: int) -> int:
    """Cycle (the sender settling after each) until the transcript holds ``until`` messages; the length reached."""
    while count < until:
        count = system.cycle(sid)
        system.settle()
    return count


def bytes_per_cycle(server: MotoServer) -> dict[str, tuple[Window, Window]]:
    """Per system: ``WINDOW`` cycles counted at ~SMALL and at ~LARGE messages (each cycle counted, then settled)."""
    out = {}
    for cls in SYSTEMS:
        system = _build(cls, server)
        sid = "long"
        count = system.start(sid)
        system.settle()
        found = []
        for length in (SMALL, LARGE):
            count = _cycles(system, sid, count, length)
            window = Window(messages=count)
            for _ in range(WINDOW):
                counter = _counted(system, functools.partial(system.cycle, sid))
                window.bytes_written += counter.bytes_written
                window.calls.update(counter.calls)
            if isinstance(system, Archmax):
                window.outbox = system.outbox_size(sid)
            found.append(window)
        out[cls.label] = (found[0], found[1])
    return out


def throughput(server: MotoServer, rounds: int, cycles: int) -> dict[str, float]:
    """Per system: median over rounds of single-thread cycles per second (systems interleaved per round).

    Only the operations are timed: the sender's batches run between them, off the clock, as the
    outbound function runs in its own Lambda off the caller's path.
    """
    per: dict[str, list[float]] = {cls.label: [] for cls in SYSTEMS}
    for _ in range(rounds):
        for cls in SYSTEMS:
            system = _build(cls, server)
            system.start("t")
            system.settle()
            spent = 0.0
            for _ in range(cycles):
                started = time.perf_counter()
                system.cycle("t")
                spent += time.perf_counter() - started
                system.settle()
            per[cls.label].append(cycles / spent)
    return {label: statistics.median(values) for label, values in per.items()}


def _timed_threads(system: Any, threads: int, cycles: int) -> float:
    """Cycles per second of ``threads`` threads, each cycling its own parked session ``cycles`` times.

    The threads start on a barrier (``_workload.run_threads``); the sender settles before and after,
    off the clock (it runs in its own Lambda, off the callers' path).
    """
    sids = [f"t{n}" for n in range(threads)]
    for sid in sids:
        system.start(sid)
    system.settle()

    def work(i: int) -> None:
        for _ in range(cycles):
            system.cycle(sids[i])

    elapsed = run_threads(threads, work)
    system.settle()
    return threads * cycles / elapsed


def thread_throughput(server: MotoServer, rounds: int, cycles: int, threads: int) -> dict[str, float]:
    """Per system: median over rounds of cycles per second with ``threads`` threads on one shared instance.

    One agent (archmax) or one compiled graph (the peer) serves every thread, each thread its own
    session, as one warm container serves concurrent requests: systems interleaved per round, fresh
    tables per system and round. Client and moto server share one interpreter (and its GIL) on both sides.
    """
    per: dict[str, list[float]] = {cls.label: [] for cls in SYSTEMS}
    for _ in range(rounds):
        for cls in SYSTEMS:
            per[cls.label].append(_timed_threads(_build(cls, server), threads, cycles))
    return {label: statistics.median(values) for label, values in per.items()}


def cycles_per_second(server: MotoServer, rounds: int, cycles: int, thread_cycles: int) -> dict[int, dict[str, float]]:
    """Per thread count (1 and ``THREADS``), per system: median cycles/s at the server's current ``latency_ms``."""
    at = f"{server.latency_ms:g} ms"
    _progress(f"single-thread cycles/s at {at}")
    out = {1: throughput(server, rounds, cycles)}
    for threads in THREADS:
        _progress(f"{threads}-thread cycles/s at {at}")
        out[threads] = thread_throughput(server, rounds, thread_cycles, threads)
    return out


_IMPORT_PROBE = """
import sys, time
started = time.perf_counter()
{body}
elapsed = time.perf_counter() - started
import json
print(json.dumps({{"s": elapsed, "modules": len(sys.modules)}}))
"""

_LOAD_FILE = """
import importlib.util
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def _import_environment(tmp: Path) -> dict[str, str]:
    """A fresh interpreter's environment: what template.yaml gives the functions, dummy AWS settings.

    Import only (no event, no server): bench/cold_import.py measures cold starts end to end.
    """
    from cold_import import WORKFLOW_DIR, template_model

    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
    return {
        **keep,
        "SESSIONS_TABLE": "bench-sessions", "SESSIONS_BUCKET": "bench-sessions", "INBOX_TABLE": "bench-inbox",
        "SESSIONS_PREFIX": "sessions", "WORKFLOW_DIR": str(WORKFLOW_DIR), "ARCHMAX_MODEL": template_model(),
        "ARCHMAX_DRAIN": "async", "AWS_LAMBDA_FUNCTION_NAME": "bench-function",
        "POWERTOOLS_SERVICE_NAME": "archmax", "POWERTOOLS_METRICS_NAMESPACE": "archmax",
        "PYDANTIC_DISABLE_PLUGINS": "__all__", "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_SESSION_TOKEN": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "none"),
    }  # fmt: skip


def _probe(code: str, env: dict[str, str]) -> dict[str, object]:
    """Run one fresh interpreter timing ``code``; its JSON report."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE.format(body=code)],
        capture_output=True, text=True, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"probe failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def cold_imports(runs: int) -> dict[str, float]:
    """Median ms of a fresh interpreter's import: boto3, the deliver handler, the peer's handler imports."""
    from cold_import import FUNCTIONS

    lambda_environment, probe = _import_environment, _probe
    codes = {
        "import boto3": "import boto3",
        "deliver handler": _LOAD_FILE.format(path=str(FUNCTIONS / "deliver" / "app.py")),
        "peer": (
            "from langgraph.graph import StateGraph, MessagesState\nfrom langgraph.types import interrupt, Command\n"
            "from langgraph_checkpoint_aws import DynamoDBSaver\nDynamoDBSaver('t', region_name='us-east-1')"
        ),
    }
    with tempfile.TemporaryDirectory() as tmp:
        env = lambda_environment(Path(tmp))
        for code in codes.values():
            probe(code, env)  # bytecode caches
        times: dict[str, list[float]] = {k: [] for k in codes}
        for _ in range(runs):
            for label, code in codes.items():
                times[label].append(float(probe(code, env)["s"]) * 1000)  # type: ignore[arg-type]
    return {label: statistics.median(values) for label, values in times.items()}


# ---------------------------------------------------------------------- printing


def _progress(what: str) -> None:
    print(f"peers: measuring {what} ...", file=sys.stderr, flush=True)


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _window_notes(written: dict[str, tuple[Window, Window]], ours: tuple[str, ...]) -> None:
    """The bytes row's windows: lengths, archmax's calls per cycle there, the outbox record, and what was left out."""
    print(
        "Transcript lengths at the bytes row's windows: "
        + ", ".join(f"{label} {small.messages} / {large.messages}" for label, (small, large) in written.items())
    )
    print(f"archmax calls per cycle over the bytes row's windows ({WINDOW} cycles each, ~{SMALL} / ~{LARGE} msgs):")
    for label in ours:
        small, large = written[label]
        print(f"  {label}: {small.per_cycle()}")
        print(f"  {' ' * len(label)}  {large.per_cycle()}")
        print(
            f"  {' ' * len(label)}  checkpoint outbox record after each window: {small.outbox} / {large.outbox} entries"
        )
    print(
        "archmax sends nothing in-process on AWS: after every measured operation (outside its counts and"
        " its timing) the outbound function's handler runs once on the stream records that operation"
        " committed (moto's DynamoDB Streams, the template's FilterCriteria; bench/_stream.py), as a"
        " sender that keeps up has by the next operation. Its own calls (stream reads, loads, S3 result"
        " records, EventBridge PutEvents) are in no count here: bench/cycle.py prices them end to end."
    )


def _goal_met(rates: dict[str, float], labels: list[str]) -> bool:
    """Goal 5 on one row: archmax's public API ≥ 2× the peer and ≥ 1.5× the peer with durability="exit"."""
    pub, _, peer, peer_exit = labels
    return rates[pub] >= 2 * rates[peer] and rates[pub] >= 1.5 * rates[peer_exit]


def _rate_rows(
    labels: list[str], at_zero: dict[int, dict[str, float]], at_latency: dict[int, dict[str, float]], latency: float
) -> list[list[str]]:
    """The cycles/s rows, per thread count the 0 ms row (not judged) then the latency row (judged)."""
    _, _, peer, peer_exit = labels
    rows = []
    for threads in at_zero:
        name = f"{'single' if threads == 1 else threads}-thread cycles/s (÷ peer, ÷ exit)"
        for rates, where, judged in (
            (at_zero[threads], "0 ms (moto's CPU)", False),
            (at_latency[threads], f"{latency:g} ms round trip", True),
        ):
            met = _verdict(_goal_met(rates, labels))
            rows.append(
                [
                    f"{name}, {where}",
                    *[
                        f"{rates[label]:.1f} ({rates[label] / rates[peer]:.2f}×, {rates[label] / rates[peer_exit]:.2f}×)"
                        for label in labels
                    ],
                    "≥2× peer, ≥1.5× exit" if judged else "(not judged)",
                    met if judged else f"({met} here)",
                ]
            )
    return rows


def _goal_five(
    labels: list[str],
    counted: dict[str, dict[str, CallCounter]],
    at_zero: dict[int, dict[str, float]],
    at_latency: dict[int, dict[str, float]],
    latency: float,
) -> None:
    """The goal-5 verdict line: which rows it judges, why, and what the other rows say."""
    pub, _, peer, peer_exit = labels
    per_cycle = "; ".join(f"{label} {counted[label]['cycle'].total}" for label in (pub, peer, peer_exit))
    judged = all(_goal_met(rates, labels) for rates in at_latency.values())
    zero = all(_goal_met(rates, labels) for rates in at_zero.values())
    print(
        f"Goal 5 (issue 24: cycles/s at 1/4/16 threads ≥ 2× peer and ≥ 1.5× peer with durability=exit):"
        f" {_verdict(judged)}, judged on the {latency:g} ms round-trip rows: a deployed caller waits one network"
        f" round trip per AWS call (one warm cycle's calls: {per_cycle}), while moto's evaluation of those"
        f" requests, the bulk of this process's CPU at 0 ms, runs on DynamoDB's machines on AWS, not archmax's."
        f" The 0 ms rows (moto's CPU in-process, printed beside them, not judged) would be: {_verdict(zero)}."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds for cycles/s")
    parser.add_argument("--cycles", type=int, default=20, help="cycles timed per system per round")
    parser.add_argument("--thread-cycles", type=int, default=5, help="cycles per thread in the 4- and 16-thread rows")
    parser.add_argument("--import-runs", type=int, default=5, help="fresh interpreters per import target")
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=LATENCY_MS,
        help=f"round trip slept per AWS request in the latency rows (default {LATENCY_MS:g}: an assumed in-region call)",
    )
    parser.add_argument("--latency-cycles", type=int, default=10, help="single-thread cycles per round at the latency")
    parser.add_argument(
        "--latency-thread-cycles", type=int, default=3, help="cycles per thread in the latency's 4- and 16-thread rows"
    )
    args = parser.parse_args(argv)
    if args.latency_ms < 0:
        parser.error("--latency-ms must be >= 0")
    server = MotoServer()
    try:
        _progress("calls per operation")
        counted = calls(server)
        reads = cheap_reads(server)
        _progress(f"bytes per cycle at ~{SMALL} and ~{LARGE} messages")
        written = bytes_per_cycle(server)
        at_zero = cycles_per_second(server, args.rounds, args.cycles, args.thread_cycles)
        server.latency_ms = args.latency_ms
        at_latency = cycles_per_second(server, args.rounds, args.latency_cycles, args.latency_thread_cycles)
    finally:
        server.stop()
    _progress("cold imports")
    imports = cold_imports(args.import_runs)

    labels = [cls.label for cls in SYSTEMS]
    pub, lam, peer, peer_exit = labels
    rows: list[list[str]] = []
    ops = (("start", "start-and-park"), ("finish", "resume-and-complete"), ("cycle", "park/resume cycle"))
    for key, name in ops:
        cells = [str(counted[label][key].total) for label in labels]
        ok = counted[pub][key].total <= 3 and counted[lam][key].total <= 5
        rows.append([f"{name}: AWS calls", *cells, "≤3 public, ≤5 Lambda", _verdict(ok)])
    kb = {
        label: (small.bytes_per_cycle / 1024, large.bytes_per_cycle / 1024) for label, (small, large) in written.items()
    }
    growth = {label: large / small for label, (small, large) in kb.items()}
    rows.append(
        [
            f"cycle bytes written at ~{SMALL} → ~{LARGE} msgs",
            *[f"{kb[label][0]:.1f} → {kb[label][1]:.1f} KB (×{growth[label]:.1f})" for label in labels],
            "≤ ×1.5",
            _verdict(growth[pub] <= 1.5 and growth[lam] <= 1.5),
        ]
    )
    rows.extend(_rate_rows(labels, at_zero, at_latency, args.latency_ms))
    ratio = imports["deliver handler"] / imports["import boto3"]
    peer_ratio = imports["peer"] / imports["import boto3"]
    rows.append(
        [
            "deliver handler cold import ÷ import boto3",
            f"{ratio:.2f}× ({imports['deliver handler']:.0f} ms)",
            "",
            f"{peer_ratio:.2f}× ({imports['peer']:.0f} ms)",
            "",
            "≤ 1.5",
            _verdict(ratio <= 1.5),
        ]
    )
    for name, counter in reads.items():
        rows.append([f"{name}: AWS calls", str(counter.total), "", "", "", "1", _verdict(counter.total == 1)])

    header = ["per operation", *labels, "goal", ""]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(
        f"archmax vs LangGraph + DynamoDBSaver, one moto server, one run (fresh tables per phase and round;"
        f" cycles/s: median of {args.rounds} rounds × {args.cycles} cycles, {args.thread_cycles} per thread"
        f" at {'/'.join(map(str, THREADS))} threads at 0 ms, × {args.latency_cycles} cycles,"
        f" {args.latency_thread_cycles} per thread at {args.latency_ms:g} ms; import: median of {args.import_runs})"
    )
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print()
    print("Calls in detail (warm):")
    for label in labels:
        for key, name in ops:
            print(f"  {label}, {name}: {counted[label][key].detail()}")
    for name, counter in reads.items():
        print(f"  {pub}, {name}: {counter.detail()}")
    _window_notes(written, (pub, lam))
    print()
    _goal_five(labels, counted, at_zero, at_latency, args.latency_ms)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
