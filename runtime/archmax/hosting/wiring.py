"""Building a handler's collaborators (agent, store, inbox, host, mail reader) from the environment.

The one composition root shared by ``functions/<name>/app.py`` and ``archmax serve``, so a Lambda
function and the local server assemble the same objects from the same settings. Rule source:
DESIGN.md §4 (hosting), §5 (the model is configuration), CONVENTIONS.md ("Inject what varies";
nothing creates tables or buckets at run time).

Settings (environment variables):

===================  =======================================================================
``WORKFLOW_DIR``     the workflow folder (required); its ``tools.py`` is loaded as the CLI loads it
                     (:mod:`archmax.workflow_tools`), and a grant no tool provides fails here
``ARCHMAX_MODEL``    the model (``scripted:<file>``, ``bedrock:<id>``, ``openai:<model>``, with
                     ``ARCHMAX_MODEL_TIMEOUT_S`` / ``_MAX_RETRIES`` / ``_MAX_TOKENS``); a script
                     replays per session (its n-th model call gets entry n), as in the CLI
``SESSIONS_TABLE``   with ``SESSIONS_BUCKET``: the AWS store (else the filesystem store)
``SESSIONS_BUCKET``  also where the SES rule's S3 action writes raw mail (``inbound/<id>``), and
                     where the DynamoDB inbox keeps firings too large for an item
                     (``<SESSIONS_PREFIX>/.inbox/``)
``SESSIONS_PREFIX``  the key root of session folders and inbox bodies (default ``sessions``)
``INBOX_TABLE``      the DynamoDB inbox (else the filesystem inbox beside the store)
``ARCHMAX_ROOT``     the filesystem store's folder (default ``./sessions``)
``ARCHMAX_DRAIN``    ``async`` (default inside Lambda: self-invoke ``{"drain": id}``) or ``inline``
``ARCHMAX_OUTBOUND``  ``inline`` (default with the filesystem store: send in-process) or ``stream``
                     (default with the AWS store: the outbound function sends); see
                     :mod:`archmax.outbound.config` for the mail and event settings
``TIMER_QUEUE_URL``  the timer queue: the sweep sends each due timer there for the wake function
                     (:mod:`archmax.hosting.timer_queue`, issue 24 goal 3); unset, the sweep fires
                     due timers itself, one after another (``archmax sweep``, ``archmax serve``)
``ARCHMAX_REPLY_SECRET`` / ``ARCHMAX_REPLY_SECRET_PARAM``  the reply-token secret, or the SSM
                     parameter / ``secretsmanager:`` secret holding it (:mod:`archmax.inbound.reply_token`)
``ARCHMAX_MAX_ATTACHMENTS`` / ``ARCHMAX_MAX_ATTACHMENT_BYTES``  attachment caps (:mod:`archmax.inbound.caps`)
===================  =======================================================================

boto3 is imported here only when an AWS setting asks for it, and its clients are built on first use (a cold start builds none); like ``hosting/`` this module sits at
the platform edge, never in the engine. AWS clients honour ``AWS_ENDPOINT_URL`` (boto3's own
setting), which is how ``archmax serve`` and tests point them at a local endpoint.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archmax.errors import InvalidEventError, StoreError
from archmax.inbound.caps import AttachmentCaps
from archmax.outbound.config import dispatcher_from_env

if TYPE_CHECKING:  # the SES parser and the dispatcher (email) load only in the functions that use them
    from archmax.agent import Agent
    from archmax.clock import Clock
    from archmax.hosting.telemetry import Telemetry
    from archmax.hosting.timers import TimerHandOff
    from archmax.inbound.ses import SesMail
    from archmax.models.base import Model
    from archmax.outbound.dispatch import Dispatcher
    from archmax.session.firing import Firing


def _refused_silently(mail: SesMail) -> None:
    """A refused mail with no telemetry to tell: nothing to record beyond the handler's answer."""


def _no_mail(bucket: str | None, key: str) -> bytes:
    raise StoreError(f"no mail bucket is configured: cannot read '{key}' (set SESSIONS_BUCKET)")


@dataclass
class Collaborators:
    """What the handlers call.

    Attributes:
        agent: The assembled agent.
        host: The :class:`archmax.hosting.host.Host` over the agent and the inbox.
        bucket: The bucket SES writes raw mail to, or ``None``.
        fetch_mail: ``(bucket, key) -> raw MIME bytes``; raises ``StoreError`` when unreadable.
        on_refused: Records a refused (spam/virus FAIL) mail; the send function logs it and counts a metric.
        thread_mail: ``(firing, envelope recipients) -> firing`` threaded onto the session it answers.
        caps: Attachment caps (issue 13 item 5).
        reply_secret: ``() -> bytes | None``: the reply-token secret, read when first needed.
        read_secret: ``(reference) -> bytes``: a webhook signing secret by reference (Powertools Parameters).
    """

    agent: Agent
    host: Any
    bucket: str | None = None
    fetch_mail: Callable[[str | None, str], bytes] = _no_mail
    on_refused: Callable[[SesMail], None] = field(default=lambda mail: None)
    thread_mail: Callable[[Firing, list[str]], Firing] = field(default=lambda firing, recipients: firing)
    """Points a parsed mail at the session it answers (our ids as aliases, the signed Reply-To)."""
    caps: AttachmentCaps = field(default_factory=AttachmentCaps)
    reply_secret: Callable[[], bytes | None] = field(default=lambda: None)
    read_secret: Callable[[str], bytes] = field(default=lambda reference: _secret_by_reference(reference))


def aws_client(service: str) -> Any:
    """A boto3 client for ``service`` with the environment's settings (region, ``AWS_ENDPOINT_URL``).

    Built on first use (:class:`~archmax.stores.aws.clients.LazyClient`): a cold start builds none (issue 10).
    """
    from archmax.stores.aws.clients import LazyClient

    return LazyClient(service)


def _secret_by_reference(reference: str) -> bytes:
    from archmax.inbound.secrets import read_secret

    return read_secret(reference)


def lambda_waker(client: Any, function_name: str) -> Callable[[str], None]:
    """A waker that asynchronously invokes ``function_name`` with ``{"drain": session_id}``.

    Args:
        client: A boto3 Lambda client.
        function_name: Usually the running function's own name (``AWS_LAMBDA_FUNCTION_NAME``).
    """

    def wake(session_id: str) -> None:
        client.invoke(
            FunctionName=function_name,
            InvocationType="Event",
            Payload=json.dumps({"drain": session_id}).encode(),
        )

    return wake


def s3_reader(client: Any) -> Callable[[str | None, str], bytes]:
    """``(bucket, key) -> bytes`` over a boto3 S3 client.

    Raises (from the returned function):
        InvalidEventError: no object at the key (``NoSuchKey``): the receipt names mail that is not
            there (forged, or expired by the bucket's lifecycle). S3 reads after writes, and SES runs
            the rule's S3 action before the Lambda action, so a retry cannot find it: a caller's error,
            answered for that record, never retried (issue 21's fuzz: a missing object was raised).
        StoreError: any other S3 failure (retryable).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    from archmax.stores.aws.errors import ErrorKind, error_kind

    def fetch(bucket: str | None, key: str) -> bytes:
        if not bucket:
            raise StoreError(f"no bucket to read '{key}' from")
        try:
            return client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if error_kind(exc) is ErrorKind.MISSING:
                raise InvalidEventError(f"the receipt names s3://{bucket}/{key}, which holds no mail") from exc
            raise StoreError(f"cannot read s3://{bucket}/{key}: {exc}") from exc
        except BotoCoreError as exc:
            raise StoreError(f"cannot read s3://{bucket}/{key}: {exc}") from exc

    return fetch


def from_environment(
    env: Mapping[str, str] = os.environ,
    *,
    model: Model | None = None,
    clock: Clock | None = None,
    waker: Callable[[str], None] | None = None,
    clients: Mapping[str, Any] | None = None,
    telemetry: Telemetry | None = None,
) -> Collaborators:
    """Assemble the collaborators the settings (see module docstring) describe.

    Args:
        env: Where settings are read.
        model: A model to use instead of ``ARCHMAX_MODEL`` (tests, ``serve`` with a script).
        clock: An injected clock (tests).
        waker: Overrides the waker (tests drain inline with ``None`` + ``ARCHMAX_DRAIN=inline``).
        clients: Prebuilt boto3 clients by service name (``dynamodb``, ``s3``, ``lambda``).
        telemetry: A function's :class:`~archmax.hosting.telemetry.Telemetry`: the engine's door, the
            store and the model are built wrapped by it (never patched afterwards), and refused mail and
            due parks are reported to it.

    Returns:
        :class:`Collaborators`.

    Raises:
        StoreError: ``WORKFLOW_DIR`` is missing.
        WorkflowSpecError: the workflow does not load, its ``tools.py`` does not import, or it grants
            a tool no module provides.
        ModelConfigurationError: ``ARCHMAX_MODEL`` (or a tunable) is not a usable model configuration.
    """
    # The engine side loads here, not with this module: the outbound function (outbound_from_environment)
    # needs only a store and a dispatcher (issue 24 goal 4, cold start).
    from archmax.agent import Agent, create_agent
    from archmax.engine.door import apply
    from archmax.hosting.host import Host
    from archmax.models import model_from_config
    from archmax.outbound.config import reply_threader
    from archmax.spec import load_workflow
    from archmax.workflow_tools import load_checked_tools

    workflow = env.get("WORKFLOW_DIR")
    if not workflow:
        raise StoreError("WORKFLOW_DIR is not set: it names the workflow folder this function serves")
    client = _client_factory(clients)
    bucket = env.get("SESSIONS_BUCKET")
    store = _store(env, client)
    if telemetry is not None:
        store = telemetry.store(store)
    inbox = _inbox(env, client)
    spec = load_workflow(Path(workflow))
    if model is None and (env.get("ARCHMAX_MODEL") or "").strip():
        # scripted: replays per session, since a session's turns span invocations; a bad value fails here
        model = model_from_config(env["ARCHMAX_MODEL"], env=env, replay_per_session=True)
    aws = bool(env.get("SESSIONS_TABLE") and bucket)
    prefix = env.get("SESSIONS_PREFIX", "sessions")
    # On AWS the outbound function sends from the table's stream; locally the dispatcher runs in-process.
    in_process = (env.get("ARCHMAX_OUTBOUND") or ("stream" if aws else "inline")) == "inline"
    outbound = (
        dispatcher_from_env(store, env, clock=clock, clients={"s3": client("s3")} if aws else None, s3_prefix=prefix)
        if in_process
        else False
    )
    if telemetry is not None and model is not None:
        model = telemetry.model(model)
    agent = create_agent(spec, store, model, tools=load_checked_tools(spec), clock=clock, outbound=outbound)
    if telemetry is not None:
        agent = Agent(agent.runtime, telemetry.door(apply))
        telemetry.observe(spec.slug, agent.runtime.clock)
    waker = waker if waker is not None else _waker(env, client)
    host = Host(
        agent,
        inbox,
        waker=waker,
        clock=clock,
        on_due=telemetry.due if telemetry is not None else None,
        sweep_outbound=_stream_backstop(store, env, clock, client, prefix) if not in_process else None,
        timers=_timer_queue(env, client),
    )
    from archmax.inbound.reply_token import configured_secret

    return Collaborators(
        agent=agent,
        host=host,
        bucket=bucket,
        fetch_mail=s3_reader(client("s3")) if bucket else _no_mail,
        thread_mail=reply_threader(store, env, s3_client=client("s3") if aws else None, s3_prefix=prefix),
        caps=AttachmentCaps.from_env(env),
        reply_secret=lambda: configured_secret(env),
        on_refused=telemetry.refused_mail if telemetry is not None else _refused_silently,
    )


def _inbox(env: Mapping[str, str], client: Callable[[str], Any]) -> Any:
    """The DynamoDB inbox with ``INBOX_TABLE``, else the filesystem inbox beside the store."""
    inbox_table, bucket = env.get("INBOX_TABLE"), env.get("SESSIONS_BUCKET")
    if inbox_table:
        from archmax.hosting.inbox_dynamo import DynamoInbox

        # With a bucket, firings too large for one DynamoDB item (a mail with a 1 MB attachment)
        # keep their body under `<SESSIONS_PREFIX>/.inbox/` and the item points at it.
        return DynamoInbox(
            inbox_table,
            client=client("dynamodb"),
            s3_client=client("s3") if bucket else None,
            bucket=bucket or None,
            prefix=env.get("SESSIONS_PREFIX", "sessions"),
        )
    from archmax.hosting.inbox_fs import FilesystemInbox

    return FilesystemInbox(Path(env.get("ARCHMAX_ROOT") or "sessions"))


def _waker(env: Mapping[str, str], client: Callable[[str], Any]) -> Callable[[str], None] | None:
    """``ARCHMAX_DRAIN=async`` (the default inside Lambda): a self-invoke; else ``None`` (drain inline).

    Raises:
        StoreError: async draining outside Lambda (no ``AWS_LAMBDA_FUNCTION_NAME``).
    """
    function_name = env.get("AWS_LAMBDA_FUNCTION_NAME")
    if env.get("ARCHMAX_DRAIN", "async" if function_name else "inline") != "async":
        return None
    if not function_name:
        raise StoreError("ARCHMAX_DRAIN=async self-invokes the function: AWS_LAMBDA_FUNCTION_NAME is not set")
    return lambda_waker(client("lambda"), function_name)


def _timer_queue(env: Mapping[str, str], client: Callable[[str], Any]) -> TimerHandOff | None:
    """With ``TIMER_QUEUE_URL``: the sweep queues due timers there (``SqsTimers``); else ``None`` (fired in-process)."""
    url = (env.get("TIMER_QUEUE_URL") or "").strip()
    if not url:
        return None
    from archmax.hosting.timer_queue import SqsTimers

    return SqsTimers(client("sqs"), url)


def _stream_backstop(
    store: Any, env: Mapping[str, str], clock: Clock | None, client: Callable[[str], Any], prefix: str
) -> Callable[[], Dispatcher | None] | None:
    """With ``ARCHMAX_OUTBOUND=stream``: the sender the sweep sends what the stream did not (issue 20 item 2).

    The outbound function's own settings (SES, EventBridge, ``ARCHMAX_MAIL_FROM``), built on the
    first sweep only, so no other function loads the mail modules. ``off`` sends nothing, ever.
    """
    if (env.get("ARCHMAX_OUTBOUND") or "stream") != "stream":
        return None
    built: list[Dispatcher | None] = []

    def sender() -> Dispatcher | None:
        if not built:
            clients = {name: client(name) for name in ("s3", "sesv2", "events")}
            built.append(
                dispatcher_from_env(
                    store, {**env, "ARCHMAX_OUTBOUND": "inline"}, clock=clock, clients=clients, s3_prefix=prefix
                )
            )
        return built[0]

    return sender


def outbound_from_environment(
    env: Mapping[str, str] = os.environ,
    *,
    clock: Clock | None = None,
    clients: Mapping[str, Any] | None = None,
) -> tuple[Any, Dispatcher]:
    """The outbound function's collaborators: the sessions store and the dispatcher that sends from it.

    Reads the store settings of :func:`from_environment` and the outbound settings of
    :mod:`archmax.outbound.config` (on AWS: ``ARCHMAX_MAIL_TRANSPORT=ses``, ``ARCHMAX_EVENT_BUS``,
    ``ARCHMAX_MAIL_FROM``); this function is the sender, whatever ``ARCHMAX_OUTBOUND`` says.

    Raises:
        OutboundError: an unusable outbound setting.
    """
    clients = dict(clients or {})
    store = _store(env, _client_factory(clients))
    dispatcher = dispatcher_from_env(
        store,
        {**env, "ARCHMAX_OUTBOUND": "inline"},
        clock=clock,
        clients=clients,
        s3_prefix=env.get("SESSIONS_PREFIX", "sessions"),
    )
    assert dispatcher is not None  # inline mode always builds one
    return store, dispatcher


def _client_factory(clients: Mapping[str, Any] | None) -> Callable[[str], Any]:
    """``service -> boto3 client``: the prebuilt ones first, each other service built once, on first use."""
    made = dict(clients or {})

    def client(service: str) -> Any:
        if service not in made:
            made[service] = aws_client(service)
        return made[service]

    return client


def _store(env: Mapping[str, str], client: Callable[[str], Any]) -> Any:
    """The AWS store with ``SESSIONS_TABLE`` and ``SESSIONS_BUCKET``, else the filesystem store."""
    table, bucket = env.get("SESSIONS_TABLE"), env.get("SESSIONS_BUCKET")
    if table and bucket:
        from archmax.stores.aws import AwsStore

        # A prefix keeps session folders apart from the bucket's `inbound/` mail (whose objects expire).
        ttl = int(env.get("FINISHED_TTL_DAYS") or 0)
        return AwsStore(
            table,
            bucket,
            env.get("SESSIONS_PREFIX", "sessions"),
            dynamodb_client=client("dynamodb"),
            s3_client=client("s3"),
            finished_ttl_days=ttl or None,
        )
    from archmax.stores.filesystem import FilesystemStore

    return FilesystemStore(Path(env.get("ARCHMAX_ROOT") or "sessions"))
