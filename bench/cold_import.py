"""Cold start end to end, per function: a fresh interpreter imports ``functions/<name>/app.py`` and handles one event.

Run: ``.venv/bin/python bench/cold_import.py [--runs 5]`` (part of ``make bench``).

What is measured, as Lambda's init then first invoke runs it: each sample is a fresh ``python``
subprocess that times (``time.perf_counter``; interpreter start-up excluded) the import of the
function's ``app.py``, then its ``lambda_handler`` on one real-shaped event of ``events/``, then
(for the diagnosis only) the same event again. The baseline, in the same run against the same moto
server, is a fresh ``python`` timing ``import boto3`` + ``boto3.client("dynamodb").get_item(...)``
of the sessions table: issue 24 goal 4 wants import + first event ≤ 1.5× that, for every function.

Every sample gets a freshly reset moto server (tables and bucket from template.yaml, the timer
queue, the event bus and, for the send function's self-invoke, a Lambda function that moto
answers without running), so each first event takes the same path. The environment is the
template's (``SESSIONS_TABLE``, ``SESSIONS_BUCKET``, ``INBOX_TABLE``, ``WORKFLOW_DIR``, the
``ModelId`` default as ``ARCHMAX_MODEL``, Powertools' settings, ``PYDANTIC_DISABLE_PLUGINS``, each
function's own variables), ``AWS_ENDPOINT_URL`` pointing at moto, dummy credentials, and Lambda's
own variables (``AWS_LAMBDA_FUNCTION_NAME``, ``LAMBDA_TASK_ROOT``, ``_X_AMZN_TRACE_ID``) so the
Powertools Tracer and the X-Ray SDK run as on Lambda (segments go to the daemon's UDP port, where
nothing listens). Samples are interleaved (baseline, then each function, round after round) so a
noisy moment hits all of them; one discarded round first (it writes the bytecode caches). Medians are
printed with the ratio and a goal row met / NOT met; no time is asserted anywhere.

Two more things are printed so a NOT met says what dominates. The *floor* rows time, the same way,
what the libraries alone cost with no archmax code (boto3 + one GetItem, pydantic, PyYAML,
Powertools Logger, Metrics and Tracer with the X-Ray SDK patching botocore; and Powertools' HTTP
event handler for the API Gateway functions); ``own`` is a function's total over its floor. And
the table is printed twice (:data:`BYTECODE`): with every bytecode cache present, and *source*, as
``layers/archmax/Makefile`` ships the layer today (``--no-compile``; Lambda's ``/opt`` is read-only,
so the layer's packages are compiled from source at every cold start while the runtime's boto3 is
precompiled).

The events are those a fresh deployment's first invocation sees; the answer's status is printed
so the path taken is visible (a delivery to a session that does not exist is refused after the
store read; the outbound function's batch is the stream record of a session the parent parked).
A model turn is not part of any first event here: the model is a provider's network call, priced
by the provider, and moto does not serve Bedrock's Converse.

Rule source: issue 24 goal 4 (cold start end to end); DESIGN.md §7 (cold start against ``import boto3``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

from _aws import BUCKET, INBOX_TABLE, PREFIX, REGION, REPO, SESSIONS_TABLE, MotoServer, template

FUNCTIONS = REPO / "functions"
EVENTS = REPO / "events"
WORKFLOW_DIR = REPO / "examples" / "workflows" / "support-inbox"
GOAL_RATIO = 1.5
DRAIN_FUNCTION = "bench-send"  # the send function's own name: its waker self-invokes it
BUS = "bench-events"
QUEUE = "bench-timers"
TRACE_ID = "Root=1-65a4f1e2-1a2b3c4d5e6f7a8b9c0d1e2f;Parent=53995c3f42cd8ad8;Sampled=1"
_PROBE_KEY = {"pk": {"S": "cold-start-probe"}}


def template_model() -> str:
    """``template.yaml``'s ``ModelId`` default: the model a deployed function runs unless told otherwise."""
    return str(template()["Parameters"]["ModelId"]["Default"])


# ---------------------------------------------------------------------------------------------- probes

_CONTEXT = """
class Context:
    function_name = {name!r}
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:" + {name!r}
    aws_request_id = "c0ffee00-0000-4000-8000-000000000001"
    function_version = "$LATEST"
    log_group_name = "/aws/lambda/" + {name!r}
    log_stream_name = "bench"
    def get_remaining_time_in_millis(self):
        return 300000
"""

_FUNCTION_PROBE = (
    """
import json, sys, time
event = json.loads(open({event!r}, encoding="utf-8").read())
"""
    + _CONTEXT
    + """
started, cpu_started = time.perf_counter(), time.process_time()
import importlib.util
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = time.perf_counter()
answer = module.lambda_handler(event, Context())
first, cpu_first = time.perf_counter(), time.process_time()
module.lambda_handler(json.loads(open({event!r}, encoding="utf-8").read()), Context())
second = time.perf_counter()
status = answer.get("statusCode") if isinstance(answer, dict) else None
if status is None and isinstance(answer, dict):
    status = "failures=%d" % len(answer.get("batchItemFailures") or []) if "batchItemFailures" in answer else "ok"
print(json.dumps({{"import": imported - started, "first": first - imported, "second": second - first,
                  "cpu": cpu_first - cpu_started,
                  "status": str(status), "modules": len(sys.modules)}}))
"""
)

_BASELINE_PROBE = """
import json, sys, time
started, cpu_started = time.perf_counter(), time.process_time()
import boto3
boto3.client("dynamodb").get_item(TableName={table!r}, Key={key!r})
done, cpu_done = time.perf_counter(), time.process_time()
print(json.dumps({{"import": done - started, "first": 0.0, "second": 0.0, "cpu": cpu_done - cpu_started, "status": "-",
                  "modules": len(sys.modules)}}))
"""


_FLOOR_PROBE = """
import json, sys, time
started, cpu_started = time.perf_counter(), time.process_time()
import boto3
boto3.client("dynamodb").get_item(TableName={table!r}, Key={key!r})
import pydantic, yaml
from aws_lambda_powertools import Logger, Metrics, Tracer
Logger(); Metrics(); Tracer(patch_modules=("botocore",))
{extra}
done, cpu_done = time.perf_counter(), time.process_time()
print(json.dumps({{"import": done - started, "first": 0.0, "second": 0.0, "cpu": cpu_done - cpu_started, "status": "-",
                  "modules": len(sys.modules)}}))
"""

FLOORS = {
    "floor: libraries only": "",
    "floor: libraries + HTTP routing": "import aws_lambda_powertools.event_handler.api_gateway",
}
"""What every function must load whatever archmax's own code does, in a fresh interpreter with a function's
environment (tracing on): boto3 + one GetItem, pydantic, PyYAML, Powertools Logger, Metrics and Tracer
(the X-Ray SDK, botocore patched); the functions answering API Gateway also Powertools' event handler."""


# ---------------------------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    """One function's cold start: its ``app.py``, the event it first handles, its own template variables."""

    function: str
    event: str
    settings: dict[str, str] = field(default_factory=dict)
    seed: Callable[[MotoServer, Path], Path] | None = None
    """Prepares the server and returns the event file (default: ``events/<event>``)."""

    @property
    def label(self) -> str:
        return f"{self.function} ({self.event})"


def _outbound_batch(server: MotoServer, tmp: Path) -> Path:
    """A session parked by an unmetered agent in this process; its stream records as the outbound function's batch."""
    from _stream import Stream
    from _workload import PARK_MESSAGE, START, WORKFLOW, WaiterModel

    from archmax import FakeClock, create_agent
    from archmax.stores.aws import AwsStore

    ddb = server.client("dynamodb")
    store = AwsStore(SESSIONS_TABLE, BUCKET, PREFIX, dynamodb_client=ddb, s3_client=server.client("s3"))
    stream = Stream(server.client("dynamodbstreams"), ddb)
    agent = create_agent(WORKFLOW, store, WaiterModel(), clock=FakeClock("2025-01-01T00:00:00.000Z"), outbound=False)
    agent.workflow.send("AAQk-1", PARK_MESSAGE, trigger=START)
    records = stream.records()
    if not records:
        raise RuntimeError("the parked session left no stream record for the outbound function")
    path = tmp / "outbound_batch.json"
    path.write_text(json.dumps({"Records": records}, default=str), encoding="utf-8")
    return path


_SENDER = {"ARCHMAX_MAIL_TRANSPORT": "off", "ARCHMAX_EVENT_BUS": BUS, "ARCHMAX_REPLY_SECRET_PARAM": ""}

SCENARIOS = (
    Scenario("send", "apigw_send_message.json", {"AWS_LAMBDA_FUNCTION_NAME": DRAIN_FUNCTION}),
    Scenario("deliver", "apigw_deliver.json"),
    Scenario("resolve", "apigw_get_session.json"),
    Scenario("timer", "scheduled_sweep.json", {**_SENDER, "TIMER_QUEUE_URL": "<queue>"}),
    Scenario("wake", "sqs_due_timers.json"),
    Scenario("outbound", "stream batch", _SENDER, seed=_outbound_batch),
)


class Stack:
    """The moto server reset to a fresh deployment before every sample."""

    def __init__(self) -> None:
        self.server = MotoServer()
        self.queue_url = ""

    def fresh(self) -> None:
        """Tables (sessions with its stream), bucket, bus, timer queue and the self-invoked function."""
        self.server.fresh(stream=True)
        self.server.client("events").create_event_bus(Name=BUS)
        self.queue_url = self.server.client("sqs").create_queue(QueueName=QUEUE)["QueueUrl"]
        config = urllib.request.Request(
            f"{self.server.endpoint_url}/moto-api/config",
            method="POST",
            data=json.dumps({"lambda": {"use_docker": False}}).encode(),
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(config, timeout=30).close()  # noqa: S310 (the local moto server)
        role = self.server.client("iam").create_role(
            RoleName="bench-send", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []})
        )["Role"]["Arn"]
        code = BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("app.py", "def lambda_handler(event, context):\n    return None\n")
        self.server.client("lambda").create_function(
            FunctionName=DRAIN_FUNCTION, Runtime="python3.12", Role=role, Handler="app.lambda_handler",
            Code={"ZipFile": code.getvalue()},
        )  # fmt: skip

    def environment(self, tmp: Path, scenario: Scenario | None) -> dict[str, str]:
        """template.yaml's variables for the function, aimed at the server, plus Lambda's own."""
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
        env = {
            **keep,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_SESSION_TOKEN": "bench",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": str(tmp / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "none"),
            "AWS_ENDPOINT_URL": self.server.endpoint_url,
        }
        if scenario is None:
            return env
        settings = {k: (self.queue_url if v == "<queue>" else v) for k, v in scenario.settings.items()}
        return env | {
            "SESSIONS_TABLE": SESSIONS_TABLE,
            "SESSIONS_BUCKET": BUCKET,
            "INBOX_TABLE": INBOX_TABLE,
            "SESSIONS_PREFIX": PREFIX,
            "FINISHED_TTL_DAYS": "0",
            "WORKFLOW_DIR": str(WORKFLOW_DIR),
            "ARCHMAX_MODEL": template_model(),
            "POWERTOOLS_SERVICE_NAME": "archmax",
            "POWERTOOLS_METRICS_NAMESPACE": "archmax",
            "PYDANTIC_DISABLE_PLUGINS": "__all__",
            "AWS_LAMBDA_FUNCTION_NAME": f"bench-{scenario.function}",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
            "LAMBDA_TASK_ROOT": str(FUNCTIONS / scenario.function),
            "_X_AMZN_TRACE_ID": TRACE_ID,
            "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
            **settings,
        }

    def sample(self, tmp: Path, target: Scenario | str | None, bytecode: dict[str, str]) -> dict[str, Any]:
        """One fresh deployment and one fresh interpreter: the probe's report (seconds).

        ``target``: a function's scenario, a :data:`FLOORS` label, or ``None`` for the baseline;
        ``bytecode``: the variables of a :data:`BYTECODE` mode.
        """
        self.fresh()
        scenario: Scenario | None = None
        if target is None:
            code = _BASELINE_PROBE.format(table=SESSIONS_TABLE, key=_PROBE_KEY)
        elif isinstance(target, str):
            scenario = SCENARIOS[1]  # a function's environment, so the tracer is on as in the functions
            code = _FLOOR_PROBE.format(table=SESSIONS_TABLE, key=_PROBE_KEY, extra=FLOORS[target])
        else:
            scenario = target
            event = scenario.seed(self.server, tmp) if scenario.seed else EVENTS / scenario.event
            path = FUNCTIONS / scenario.function / "app.py"
            code = _FUNCTION_PROBE.format(event=str(event), path=str(path), name=f"bench-{scenario.function}")
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=self.environment(tmp, scenario) | bytecode,
            cwd=tmp,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"probe failed ({done.returncode}): {done.stderr.strip()[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured rounds (after one discarded warm-up round)")
    parser.add_argument("--only", nargs="*", default=None, help="functions to measure (default: all)")
    parser.add_argument("--bytecode", choices=[*BYTECODE, "both"], default="both", help="see BYTECODE (default: both)")
    parser.add_argument("--explain", metavar="FUNCTION", help="print what FUNCTION imports beyond its floor, then exit")
    args = parser.parse_args(argv)
    if args.explain:
        return explain(args.explain)
    scenarios = [s for s in SCENARIOS if args.only is None or s.function in args.only]
    targets: list[Scenario | str | None] = [None, *FLOORS, *scenarios]
    modes = list(BYTECODE) if args.bytecode == "both" else [args.bytecode]
    stack = Stack()
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for mode in modes:
                bytecode = _precompiled_runtime(Path(tmp)) if mode == "source" else {}
                runs: dict[str, list[dict[str, Any]]] = {_label(t): [] for t in targets}
                for round_ in range(args.runs + 1):  # round 0 writes the bytecode caches and is discarded
                    for target in targets:
                        report = stack.sample(Path(tmp), target, bytecode)
                        if round_:
                            runs[_label(target)].append(report)
                results[mode] = runs
    finally:
        stack.server.stop()
    for mode, runs in results.items():
        print(f"\n[bytecode: {mode}] {BYTECODE[mode]}")
        print_table(runs, args.runs)
    return 0


BYTECODE = {
    "cached": (
        "every module's bytecode cached (the layer as layers/archmax/Makefile builds it with Python 3.12,"
        " e.g. sam build --use-container: it ships unchecked-hash .pyc)"
    ),
    "source": (
        "the layer's packages compiled at every start, as the Makefile builds it with another python3 (source"
        " only; /opt is read-only, so nothing is cached); the standard library and the runtime's boto3 precompiled"
    ),
}
"""How the layer's modules reach the interpreter. ``source`` runs every probe (the baseline too) with a
bytecode cache prefix holding only the standard library and the packages the Lambda runtime provides,
and with cache writes off, so everything the layer adds is compiled at each start."""

_RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")


def _precompiled_runtime(tmp: Path) -> dict[str, str]:
    """A bytecode cache prefix with the standard library and the runtime's packages compiled; its variables."""
    import importlib.util
    import sysconfig

    prefix = tmp / "runtime-pycache"
    env = {"PYTHONPYCACHEPREFIX": str(prefix)}
    packages = []
    for name in _RUNTIME_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            origin = Path(spec.origin)
            packages.append(str(origin.parent if origin.name == "__init__.py" else origin))
    skip = r"[/\\](test|tests|idlelib|tkinter|lib2to3|site-packages)[/\\]"
    for paths in (["-x", skip, sysconfig.get_paths()["stdlib"]], packages):
        compileall = [sys.executable, "-m", "compileall", "-q", "-j0", *paths]
        subprocess.run(compileall, env={**os.environ, **env}, capture_output=True, check=False)
    return env | {"PYTHONDONTWRITEBYTECODE": "1"}


def explain(function: str, top: int = 25) -> int:
    """Print the modules ``function``'s cold start imports beyond its floor (``python -X importtime``), by package.

    Self times in ms, summed per package (archmax per subpackage), then the single modules: where
    the function's own share goes. ``-X importtime`` slows every import, so the figures are relative.
    """
    import re

    scenario = next((s for s in SCENARIOS if s.function == function), None)
    if scenario is None:
        print(f"no such function: {function}; known: {', '.join(s.function for s in SCENARIOS)}", file=sys.stderr)
        return 2
    floor = list(FLOORS)[1 if scenario.event.startswith("apigw") else 0]
    line = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")
    stack = Stack()
    selfs: list[dict[str, int]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for target in (floor, scenario):
                stack.fresh()
                if isinstance(target, str):
                    code = _FLOOR_PROBE.format(table=SESSIONS_TABLE, key=_PROBE_KEY, extra=FLOORS[target])
                else:
                    event = target.seed(stack.server, Path(tmp)) if target.seed else EVENTS / target.event
                    path = FUNCTIONS / function / "app.py"
                    code = _FUNCTION_PROBE.format(event=str(event), path=str(path), name=f"bench-{function}")
                done = subprocess.run(
                    [sys.executable, "-X", "importtime", "-c", code],
                    capture_output=True, text=True, env=stack.environment(Path(tmp), scenario), cwd=tmp, check=False,
                )  # fmt: skip
                selfs.append({m[2]: int(m[1]) for m in map(line.match, done.stderr.splitlines()) if m})
    finally:
        stack.server.stop()
    extra = {name: us for name, us in selfs[1].items() if name not in selfs[0]}
    packages: dict[str, int] = {}
    for name, us in extra.items():
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "archmax" else parts[0]
        packages[key] = packages.get(key, 0) + us
    print(
        f"{function}: {len(extra)} modules beyond '{floor}', {sum(extra.values()) / 1000:.1f} ms of -X importtime self time"
    )
    for key, us in sorted(packages.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {us / 1000:7.1f}  {key}")
    print("single modules:")
    for name, us in sorted(extra.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {us / 1000:7.1f}  {name}")
    return 0


def _label(target: Scenario | str | None) -> str:
    return "baseline" if target is None else target if isinstance(target, str) else target.label


def _median_ms(reports: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) * 1000 for r in reports)


def print_table(runs: dict[str, list[dict[str, Any]]], samples: int) -> None:
    """Per function: import, first event, total, the baseline and the ratio (medians, ms), then the goal row.

    The floor rows time what the libraries alone cost (:data:`FLOORS`); ``own`` is a function's
    total over its floor (the HTTP one for API Gateway events): archmax's own share. ``cpu ratio``
    is the same ratio of the interpreters' CPU time (``time.process_time``: no waiting on moto, and
    steadier than wall time on a busy machine); the goal row is the wall-time ratio.
    """
    base = statistics.median(float(r["import"]) * 1000 for r in runs["baseline"])
    print(
        f"Cold start end to end in a fresh interpreter, median of {samples} interleaved samples (ms; start-up"
        f" excluded).\nBaseline: import boto3 + boto3.client('dynamodb').get_item(...) on the same moto server:"
        f" {base:.0f} ms (min {min(float(r['import']) for r in runs['baseline']) * 1000:.0f},"
        f" max {max(float(r['import']) for r in runs['baseline']) * 1000:.0f})."
    )
    width = max(len(label) for label in runs)
    base_cpu = _median_ms(runs["baseline"], "cpu")
    head = ("import", "1st event", "total", "baseline", "ratio", "cpu ratio", "own", "2nd event", "answer", "modules")
    print(f"{'function (first event)':<{width}}  " + "  ".join(f"{h:>9}" for h in head))
    floors = {label: _median_ms(runs[label], "import") for label in FLOORS if label in runs}
    worst = worst_cpu = 0.0
    for label, reports in runs.items():
        if label == "baseline":
            continue
        total = statistics.median((float(r["import"]) + float(r["first"])) * 1000 for r in reports)
        cpu = f"{_median_ms(reports, 'cpu') / base_cpu:.2f}x"
        if label in FLOORS:
            cells = ("-", "-", f"{total:.0f}", f"{base:.0f}", f"{total / base:.2f}x", cpu, "-", "-", "-",
                     str(reports[-1]["modules"]))  # fmt: skip
        else:
            imp, first, second = (_median_ms(reports, k) for k in ("import", "first", "second"))
            floor = floors.get(list(FLOORS)[1 if "apigw" in label else 0])
            own = f"{total - floor:.0f}" if floor is not None else "-"
            worst = max(worst, total / base)
            worst_cpu = max(worst_cpu, _median_ms(reports, "cpu") / base_cpu)
            cells = (f"{imp:.0f}", f"{first:.0f}", f"{total:.0f}", f"{base:.0f}", f"{total / base:.2f}x", cpu, own,
                     f"{second:.0f}", reports[-1]["status"], str(reports[-1]["modules"]))  # fmt: skip
        print(f"{label:<{width}}  " + "  ".join(f"{c:>9}" for c in cells))
    verdict = "met" if worst <= GOAL_RATIO else "NOT met"
    print(
        f"goal 4: import + first event <= {GOAL_RATIO}x import boto3 + one GetItem, every function:"
        f" worst {worst:.2f}x -> {verdict} (CPU time: worst {worst_cpu:.2f}x)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
