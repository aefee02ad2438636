"""``archmax invoke <send|deliver|resolve|timer|wake> -e events/<file>.json``: one Lambda invocation, in-process.

What ``sam local invoke`` does without a container: the function's ``app.py`` (the template's
``CodeUri``) is imported in this process with the environment Lambda would give it, the event is
passed to its ``lambda_handler`` with a Lambda-like context, and the answer is printed on stdout as
JSON. The function's own output (Powertools JSON log lines, EMF metrics) goes to stderr, as
``sam local invoke`` shows it.

The environment: the template's ``Globals.Function.Environment`` and the function's own, with each
``!Ref`` to a parameter replaced by that parameter's default; then the same variables from this
process's environment (``ARCHMAX_MODEL=scripted:...`` wins over the default ``ModelId``); then the
flags. ``WORKFLOW_DIR`` is the workflow folder the layer would hold at ``/opt/workflows/<slug>``:
``<root>/workflows/<slug>``, else ``<root>/examples/workflows/<slug>`` (the ``Workflow`` parameter's
default unless ``--workflow``). The store is the filesystem (``--store DIR``, default
``<root>/sessions``) or ``--store aws:<table>/<bucket>[/<prefix>]`` (prefix ``sessions`` when
absent, as for every other command; with ``--inbox-table``, the DynamoDB inbox; boto3 honours
``AWS_ENDPOINT_URL``). The inbox is drained inline
(``ARCHMAX_DRAIN=inline``): locally there is no asynchronous self-invoke.

Rule source: issue 11 item 6; DESIGN.md §4 (the four handlers); :mod:`archmax.hosting.wiring`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from archmax.cli.errors import UsageError
from archmax.cli.workspace import parse_aws_store
from archmax.hosting.coldstart import resume_gc

FUNCTIONS = {
    "send": "SendFunction",
    "deliver": "DeliverFunction",
    "resolve": "ResolveFunction",
    "timer": "TimerFunction",
    "wake": "WakeFunction",
}
LAYER_WORKFLOWS = re.compile(r"^/opt/workflows/")


class _TemplateLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (``!Ref x`` -> ``{"Ref": "x"}``, ``!Sub s`` -> ``{"Fn::Sub": s}``)."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {"Ref" if suffix == "Ref" else f"Fn::{suffix}": value}


_TemplateLoader.add_multi_constructor("!", _tag)


def read_template(path: Path) -> dict[str, Any]:
    """The SAM template as data (short tags expanded).

    Raises:
        UsageError: the file is missing or not a YAML mapping.
    """
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_TemplateLoader)  # noqa: S506 - a SafeLoader
    except OSError as exc:
        raise UsageError(f"cannot read the template '{path}': {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"'{path}' is not YAML: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("Resources"), dict):
        raise UsageError(f"'{path}' is not a SAM template (no Resources)")
    return doc


def template_environment(doc: Mapping[str, Any], function: str) -> dict[str, str]:
    """The variables the template gives ``function``, parameters at their defaults.

    A value that names a resource (a table, a bucket) has no local meaning and is left out; the
    store flags provide those.
    """
    defaults = {name: str(p.get("Default", "")) for name, p in (doc.get("Parameters") or {}).items()}
    merged: dict[str, Any] = {}
    globals_env = (((doc.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables")
    own = (doc["Resources"].get(function, {}).get("Properties") or {}).get("Environment", {}).get("Variables")
    for source in (globals_env, own):
        merged.update(source or {})
    out: dict[str, str] = {}
    for key, value in merged.items():
        if isinstance(value, dict) and "Ref" in value:
            if value["Ref"] in defaults:
                out[key] = defaults[value["Ref"]]
        elif isinstance(value, dict) and isinstance(value.get("Fn::Sub"), str):
            text = value["Fn::Sub"]
            names = re.findall(r"\$\{([^}]+)\}", text)
            if all(n in defaults for n in names):
                out[key] = re.sub(r"\$\{([^}]+)\}", lambda m: defaults[m.group(1)], text)
        elif not isinstance(value, dict | list):
            out[key] = str(value)
    return out


def local_workflow(root: Path, slug: str) -> Path:
    """Where the layer's ``/opt/workflows/<slug>`` comes from: your ``workflows/``, else the examples.

    Raises:
        UsageError: neither holds ``<slug>/workflow.yaml``.
    """
    for base in (root / "workflows", root / "examples" / "workflows"):
        if (base / slug / "workflow.yaml").is_file():
            return base / slug
    raise UsageError(f"no workflow '{slug}' under {root / 'workflows'} or {root / 'examples' / 'workflows'}")


def invoke_environment(
    doc: Mapping[str, Any],
    function: str,
    root: Path,
    *,
    workflow: str | None,
    store: str | None,
    inbox_table: str | None,
    model: str | None,
    environ: Mapping[str, str] = os.environ,
) -> dict[str, str]:
    """The complete environment of one local invocation (see module docstring for the precedence).

    Raises:
        UsageError: an unknown workflow, or a malformed ``aws:`` store.
    """
    env = template_environment(doc, function)
    env.update({k: environ[k] for k in env if k in environ})
    slug = workflow or str((doc.get("Parameters") or {}).get("Workflow", {}).get("Default", ""))
    if not slug:
        raise UsageError("the template names no default Workflow: pass --workflow")
    env["WORKFLOW_DIR"] = str(local_workflow(root, slug))
    if model is not None:
        env["ARCHMAX_MODEL"] = model
    for key in ("SESSIONS_TABLE", "SESSIONS_BUCKET", "INBOX_TABLE"):
        env.pop(key, None)
    if store is not None and store.startswith("aws:"):
        # The same parse as every other command: one --store value, one S3 location.
        table, bucket, prefix = parse_aws_store(store)
        env.update(SESSIONS_TABLE=table, SESSIONS_BUCKET=bucket, SESSIONS_PREFIX=prefix)
    else:
        env["ARCHMAX_ROOT"] = str(Path(store) if store else root / "sessions")
    if inbox_table:
        env["INBOX_TABLE"] = inbox_table
    env["ARCHMAX_DRAIN"] = "inline"
    return env


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def load_handler(doc: Mapping[str, Any], template_dir: Path, function: str, tag: str) -> Callable[..., Any]:
    """Import the function's ``app.py`` from its ``CodeUri`` (as Lambda imports it) and return its handler.

    Raises:
        UsageError: the resource, its ``CodeUri`` or the handler module is missing.
    """
    props = doc["Resources"].get(function, {}).get("Properties") or {}
    code, handler = props.get("CodeUri"), props.get("Handler", "app.lambda_handler")
    if not isinstance(code, str):
        raise UsageError(f"the template has no {function} with a local CodeUri")
    module_name, _, attribute = str(handler).rpartition(".")
    path = template_dir / code / f"{module_name.replace('.', '/')}.py"
    if not path.is_file():
        raise UsageError(f"{function}'s handler module '{path}' does not exist")
    spec = importlib.util.spec_from_file_location(f"archmax_invoke_{tag}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        resume_gc()  # app.py paused the collector until its first invocation, which will not come
        raise
    return getattr(module, attribute)


def invoke(
    name: str,
    event: Any,
    *,
    root: Path,
    template: Path | None = None,
    workflow: str | None = None,
    store: str | None = None,
    inbox_table: str | None = None,
    model: str | None = None,
    log: Any = None,
) -> Any:
    """Run one invocation of function ``name`` and return its answer (see module docstring).

    Args:
        name: ``send``, ``deliver``, ``resolve`` or ``timer``.
        event: The event (any JSON value, usually a file of ``events/``).
        root: The repository (or project) root: ``workflows/``, ``examples/workflows/``, ``sessions/``.
        template: The SAM template (default ``<root>/template.yaml``).
        workflow: The ``Workflow`` slug (default: the parameter's default).
        store: ``DIR`` or ``aws:<table>/<bucket>[/<prefix>]``.
        inbox_table: A DynamoDB inbox table (with an ``aws:`` store).
        model: Overrides ``ARCHMAX_MODEL``.
        log: Where the function's stdout (logs, metrics) goes (default: stderr).

    Raises:
        UsageError: an unknown function, template, workflow or store.
        Exception: whatever the handler raises (Lambda would retry an asynchronous invocation).
    """
    if name not in FUNCTIONS:
        raise UsageError(f"invoke takes one of {', '.join(FUNCTIONS)}, not '{name}'")
    template = template or root / "template.yaml"
    doc = read_template(template)
    env = invoke_environment(
        doc, FUNCTIONS[name], root, workflow=workflow, store=store, inbox_table=inbox_table, model=model
    )
    if name == "send" and not env.get("SESSIONS_BUCKET"):
        _refuse_mail_without_bucket(event)
    from archmax.testing import FakeLambdaContext

    context = FakeLambdaContext(
        function_name=f"local-{name}", invoked_function_arn=f"arn:aws:lambda:local:000000000000:function:local-{name}"
    )
    with _environment(env), contextlib.redirect_stdout(log or sys.stderr):
        handler = load_handler(doc, template.parent, FUNCTIONS[name], name)
        return handler(event, context)


def _refuse_mail_without_bucket(event: Any) -> None:
    """Refuse, before anything runs, SES mail the send function would have to read from S3.

    The SES path reads each raw mail from ``<bucket>/inbound/<messageId>``; a filesystem store has no
    bucket, so the function could only fail (user-test finding 8). A record refused on its spam or
    virus verdict is never read and still runs; a malformed event is left to the function's own 400.

    Raises:
        UsageError: some record of the SES event would be read from the bucket.
    """
    from archmax.errors import InvalidEventError
    from archmax.inbound.ses import INBOUND_PREFIX, is_ses_event, ses_mails

    if not isinstance(event, dict) or not is_ses_event(event):
        return
    try:
        mails = ses_mails(event, bucket=None)
    except InvalidEventError:
        return
    unread = [mail.message_id for mail in mails if mail.refused is None]
    if unread:
        raise UsageError(
            f"SES mail '{unread[0]}' is read from the sessions bucket ({INBOUND_PREFIX}{unread[0]}), and the "
            "filesystem store has none: pass --store aws:<table>/<bucket> (with the raw mail at that key), "
            "or give a raw mail to the local store with: archmax email <file.eml>"
        )


def read_event(path: str) -> Any:
    """The event file's JSON.

    Raises:
        UsageError: unreadable or not JSON.
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the event '{path}': {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise UsageError(f"the event '{path}' is not JSON: {exc}") from exc


def add_parser(add: Callable[[str, str], Any]) -> None:
    """Register ``invoke`` with the CLI's parser (``add(name, help)`` returns the subparser)."""
    p = add("invoke", "Run one Lambda function in-process on an event file, as Lambda would (no Docker).")
    p.add_argument("function", choices=sorted(FUNCTIONS), metavar="<send|deliver|resolve|timer|wake>")
    p.add_argument("-e", "--event", required=True, help="the event file, e.g. events/apigw_send_message.json")
    p.add_argument("--workflow", help="the Workflow parameter (default: the template's default)")
    p.add_argument("--template", help="the SAM template (default: <root>/template.yaml)")
    p.add_argument("--inbox-table", dest="inbox_table", help="a DynamoDB inbox table (with --store aws:...)")


def run(cli: Any) -> int:
    """``archmax invoke``: print the answer as JSON on the CLI's stdout; 0, or 1 when the handler raised."""
    args, out = cli.args, cli.out
    event = read_event(args.event)
    root = Path(getattr(args, "root", "."))
    try:
        answer = invoke(
            args.function,
            event,
            root=root,
            template=Path(args.template) if args.template else None,
            workflow=args.workflow,
            store=getattr(args, "store", None),
            inbox_table=args.inbox_table,
            model=getattr(args, "model", None),
        )
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - Lambda reports any exception as the invocation's error
        print(json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}), file=out)
        return 1
    print(json.dumps(answer, indent=2, default=str), file=out)
    return 0
