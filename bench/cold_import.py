"""Handler cold-import time against ``import boto3`` alone, in fresh interpreters.

Run: ``.venv/bin/python bench/cold_import.py [--runs 7]``.

Each measurement is a fresh ``python`` subprocess that times one import with
``time.perf_counter`` and reports it (interpreter start-up is not counted). Targets are run
interleaved, round after round, so a noisy moment hits all of them; one discarded round first
writes the bytecode caches. The handler modules are imported as Lambda would import them: the
template's environment (``SESSIONS_TABLE``, ``SESSIONS_BUCKET``, ``INBOX_TABLE``,
``ARCHMAX_DRAIN=async`` with ``AWS_LAMBDA_FUNCTION_NAME``, and the template's default
``ARCHMAX_MODEL``, its ``ModelId`` parameter), dummy credentials and region; tracing stays enabled as
on Lambda.
No request is made: building a boto3 client does not touch the network.

Rule source: DESIGN.md §7 ("handler cold-import time against ``import boto3`` alone").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FUNCTIONS = REPO / "functions"
WORKFLOW_DIR = REPO / "examples" / "workflows" / "support-inbox"


def template_model() -> str:
    """``template.yaml``'s ``ModelId`` default: the model a deployed function runs unless told otherwise."""
    import yaml

    class _Template(yaml.SafeLoader):
        """Reads CloudFormation's short tags (``!Ref``, ``!Sub`` ...) as plain nodes."""

    _Template.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=_Template)  # noqa: S506 (SafeLoader subclass)
    return str(template["Parameters"]["ModelId"]["Default"])


_PROBE = """
import sys, time
started = time.perf_counter()
{body}
elapsed = time.perf_counter() - started
import json
print(json.dumps({{"s": elapsed, "boto3": "boto3" in sys.modules, "modules": len(sys.modules)}}))
"""

_LOAD_FILE = """
import importlib.util
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def targets() -> dict[str, str]:
    """Label → the code whose import is timed."""
    out = {
        "import boto3": "import boto3",
        "import boto3 + 3 clients (dynamodb, s3, lambda)": (
            "import boto3\nfor s in ('dynamodb', 's3', 'lambda'):\n    boto3.client(s)"
        ),
        "import archmax (the embedded runtime)": "import archmax",
        "import archmax.stores.aws": "import archmax.stores.aws",
        "powertools Logger+Metrics+Tracer (tracing on)": (
            "from aws_lambda_powertools import Logger, Metrics, Tracer\nLogger(); Metrics(); Tracer()"
        ),
    }
    for name in ("send", "deliver", "resolve", "timer"):
        out[f"handler functions/{name}/app.py"] = _LOAD_FILE.format(path=str(FUNCTIONS / name / "app.py"))
    return out


def lambda_environment(tmp: Path) -> dict[str, str]:
    """The subprocess environment: what template.yaml gives the functions, plus dummy AWS settings."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
    return {
        **keep,
        "PYTHONDONTWRITEBYTECODE": "",
        "SESSIONS_TABLE": "bench-sessions",
        "SESSIONS_BUCKET": "bench-sessions",
        "INBOX_TABLE": "bench-inbox",
        "SESSIONS_PREFIX": "sessions",
        "WORKFLOW_DIR": str(WORKFLOW_DIR),
        "ARCHMAX_MODEL": template_model(),
        "ARCHMAX_DRAIN": "async",
        "AWS_LAMBDA_FUNCTION_NAME": "bench-function",
        "POWERTOOLS_SERVICE_NAME": "archmax",
        "POWERTOOLS_METRICS_NAMESPACE": "archmax",
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_SESSION_TOKEN": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "none"),
    }


def probe(code: str, env: dict[str, str]) -> dict[str, object]:
    """Run one fresh interpreter timing ``code``; its JSON report."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(body=code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"probe failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured rounds (after one discarded warm-up round)")
    args = parser.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        env = lambda_environment(Path(tmp))
        codes = targets()
        for code in codes.values():  # warm-up: bytecode caches, page cache
            probe(code, env)
        times: dict[str, list[float]] = {label: [] for label in codes}
        info: dict[str, dict[str, object]] = {}
        for _ in range(args.runs):
            for label, code in codes.items():
                report = probe(code, env)
                times[label].append(float(report["s"]) * 1000)  # type: ignore[arg-type]
                info[label] = report
    base = statistics.median(times["import boto3"])
    print(f"Cold import in a fresh interpreter: median of {args.runs} runs each, interleaved (ms; start-up excluded)")
    width = max(len(label) for label in codes)
    print(
        f"{'import':<{width}}  {'median':>7}  {'min':>7}  {'max':>7}  {'x boto3':>7}  {'boto3 loaded':>12}  {'modules':>7}"
    )
    for label, values in times.items():
        med = statistics.median(values)
        print(
            f"{label:<{width}}  {med:>7.1f}  {min(values):>7.1f}  {max(values):>7.1f}  {med / base:>7.2f}"
            f"  {'yes' if info[label]['boto3'] else 'no':>12}  {info[label]['modules']:>7}"
        )
    handlers = [statistics.median(v) for label, v in times.items() if label.startswith("handler")]
    clients = statistics.median(times["import boto3 + 3 clients (dynamodb, s3, lambda)"])
    print(
        f"Handlers: {min(handlers):.0f}-{max(handlers):.0f} ms, x{min(handlers) / base:.2f}-x{max(handlers) / base:.2f}"
        f" of import boto3 ({base:.0f} ms); archmax's own share over boto3 + its 3 clients:"
        f" {min(handlers) - clients:.0f}-{max(handlers) - clients:.0f} ms."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
