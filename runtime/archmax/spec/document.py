"""The shape of ``workflow.yaml`` and of ``*.test.yaml`` as pydantic models: their JSON Schema and reference.

Rule source: BEHAVIOUR.md §2 (workflow keys, triggers, budgets, governance, hooks), §5.10
(sub-workflows are tools named ``archmax_workflow_<slug>``), §10 (test cases), issue 15 item 4
(``archmax schema`` prints the JSON Schema from the models, so it cannot drift; ``docs/workflow.md``
is generated from the same models).

These models describe documents for editors and people; the loader (:mod:`archmax.spec.loader`)
and the case parser (:mod:`archmax.cases.schema`) remain the validators. Two things keep them in
step: every model forbids unknown keys, and a test checks that each model's keys are exactly the
key lists those validators accept (``ROOT_KEYS``, ``STATE_KEYS``, ``TOP_LEVEL_KEYS``, ``STEP_KEYS``...).
The step bodies of test cases are the case parser's own models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from archmax.cases.schema import (
    DecideBody,
    DeliverBody,
    GradeBody,
    ParkedBody,
    RaisedBody,
    RanWorkflowBody,
    ReplyBody,
    ToolBody,
    TrailBody,
    VariablesBody,
)

SCHEMA_ID = "urn:archmax:schema:{name}"
"""``$id`` of each schema (a URN: editors are pointed at a local file, see README, so nothing is fetched)."""

VALUE_TYPE = Literal["string", "number", "integer", "boolean", "object", "array", "file"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Signature(_Doc):
    """One ``requires``/``returns`` entry in its long form (a bare name is the short form)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="The variable's name.")
    type: VALUE_TYPE | None = Field(None, description="Checked without coercion; `file` is a path to a session file.")
    description: str | None = Field(None, description="What the variable holds, for whoever supplies or reads it.")


SignatureEntry = str | Signature


class WebhookSignature(_Doc):
    """How ``POST /webhooks/<trigger>`` checks a caller's HMAC signature."""

    secret: str = Field(description="Where the signing secret is: `ssm:<name>` or `secretsmanager:<name>`.")
    header: str | None = Field(None, description="The header carrying the signature.")
    timestamp_header: str | None = Field(None, description="The header carrying the signed timestamp.")
    delivery_header: str | None = Field(
        None,
        description=(
            "The header carrying the delivery id. It de-duplicates only when the sender signs it "
            "(`<id>.<timestamp>.<body>`); a signature over `<timestamp>.<body>` is de-duplicated by itself."
        ),
    )
    tolerance_s: int | None = Field(None, ge=1, le=3600, description="Seconds a timestamp may be off (default 300).")


class Trigger(_Doc):
    """A trigger declaration under ``states.<s>.triggers.<id>`` (``null`` takes every default)."""

    session: str | None = Field(
        None, description="Session path: where a firing's variables hold the session id (e.g. `conversation_id`)."
    )
    message: str | Literal[False] | None = Field(
        None, description="Where a host finds the firing's words; `false`: its firings carry no message."
    )
    connection: str | None = Field(None, description="A connection slug the host reads.")
    description: str | None = Field(None, description="Shown to callers, never to the session's own model.")
    requires: list[SignatureEntry] | None = Field(
        None, description="Variables a firing must supply for a turn to open under this trigger (checked at opening)."
    )
    returns: list[SignatureEntry] | None = Field(
        None, description="Variables the session guarantees when a turn under this trigger completes."
    )
    signature: WebhookSignature | None = Field(None, description="Signed webhooks: how a firing proves its sender.")
    mail_auth: Literal["dmarc_or_aligned_dkim", "dmarc", "aligned_dkim", "spf", "none"] | None = Field(
        None, description="Which mail authentication an inbound email under this trigger must pass."
    )
    unauthenticated_first_mail: Literal["quarantine", "refuse", "open"] | None = Field(
        None,
        description="What a mail that would open a session and fails `mail_auth` gets: `quarantine` (default; "
        "an operator may release it), `refuse` (answered nothing) or `open` (opens the session anyway).",
    )


class Transition(_Doc):
    """An edge out of a state."""

    to: str = Field(description="The target state (declared under `states`).")
    description: str = Field(description="When the edge applies; the agent (or the person) reads it.")
    type: Literal["approve", "reject", "refine", "none"] | None = Field(
        None, description="Shown to the person deciding at a human state."
    )
    on_timeout: bool | None = Field(
        None,
        description=(
            "Human states with a `timeout`: the edge taken when nobody decided in time (at most one per state). "
            "Without one, a timeout fails the turn with `wait timed out after <duration>`."
        ),
    )


class Budget(_Doc):
    """Bounds on one state visit; each is a positive integer, absent means unbounded."""

    max_turns: int | None = Field(None, alias="maxTurns", ge=1, description="Model calls per visit of the state.")
    max_parks: int | None = Field(
        None,
        alias="maxParks",
        ge=1,
        description="Successful `archmax_wait` parks per state per turn; the next is a turn failure.",
    )
    timeout_ms: int | None = Field(None, alias="timeoutMs", ge=1, description="Milliseconds each model call may take.")


class ToolRule(_Doc):
    """A guarded tools-list entry: the tool, narrowed by its arguments."""

    tool: str = Field(description="The tool's name; `*` (forbid lists only) is every tool, control tools included.")
    args: dict[str, list[str]] | None = Field(
        None, description="Argument name → globs the value must match; globs may hold `${{variable}}` references."
    )
    paths: list[str] | None = Field(None, description="Shorthand for a `file_path` argument guard.")
    connection: str | None = Field(None, description="A connection slug the host reads.")
    source: str | None = Field(None, description="A free-form label, kept and never read.")


ToolEntry = str | ToolRule


class StateTools(_Doc):
    """Host tools in one state: closed by default, granted here (forbid beats allow)."""

    allow: list[ToolEntry] | None = Field(
        None,
        description="Tools offered in this state: host tool names, or `archmax_workflow_<slug>` to call a sub-workflow.",
    )
    forbid: list[ToolEntry] | None = Field(None, description="Tools removed in this state (`*`: every tool).")


class Rubric(_Doc):
    """A rubric hook: one model call grades the work against the instructions."""

    instructions: str = Field(description="What the grader checks.")
    max_iterations: int | None = Field(
        None, ge=0, description="`correct` verdicts this hook may give per turn (after hooks only); default 0."
    )
    model: str | None = Field(None, description="The grader's model (default: the state's).")
    metadata: dict[str, Any] | None = Field(None, description="Free-form, not part of the spec hash.")


class ScriptHook(_Doc):
    """A script hook: ``hooks/<file>.py`` in the workflow folder defining ``hook(ctx) -> verdict``."""

    script: str = Field(pattern=r"^hooks/", description="Path under the workflow's `hooks/` folder, no `..`.")
    max_iterations: int | None = Field(
        None, ge=0, description="`correct` verdicts this hook may give per turn (after hooks only); default 0."
    )


class RubricHook(_Doc):
    """``{rubric: {...}}``."""

    rubric: Rubric


Hook = ScriptHook | RubricHook | dict[str, Any]
"""A script hook, a rubric hook, or ``{<kind>: <config>}`` of a custom kind declared in ``extensions.hooks``."""


class State(_Doc):
    """One state of the machine. ``states.<slug>: null`` is an empty terminal agent state."""

    type: Literal["agent", "human"] | None = Field(
        None, description="`agent` (default): the model works here. `human`: the session parks for a person's decision."
    )
    title: str | None = Field(None, description="Shown on decision records and to people.")
    instructions: str | None = Field(
        None, description="What to do in this state (a human state's are shown to the person)."
    )
    summary: str | None = Field(None, description="One line about the state.")
    evidence: list[str] | None = Field(None, description="Human states: session files every decision record shows.")
    approvers: list[str] | None = Field(None, description="Human states: who decides; informational, shown by the CLI.")
    triggers: dict[str, Trigger | None] | None = Field(
        None, description="Triggers whose turns open in this state (each id declared by one state only)."
    )
    before: Hook | list[Hook] | None = Field(None, description="Hooks run once per entry into the state (ok or veto).")
    after: Hook | list[Hook] | None = Field(
        None, description="Hooks run when the agent leaves the state or completes in it (ok, correct or veto)."
    )
    budget: Budget | None = None
    model: str | None = Field(None, description="This state's model: an adapter value or a bare model id.")
    on_error: str | None = Field(None, description="Where a turn failure in this state routes (a declared state).")
    tools: StateTools | None = None
    skills: Any = Field(None, description="Accepted and kept; not read by this runtime.")
    mounts: Any = Field(None, description="Accepted and kept; not read by this runtime.")
    requires: list[str] | None = Field(
        None, description="Variables that must be set before `archmax_advance` may leave the state."
    )
    metadata: dict[str, Any] | None = Field(None, description="Free-form, not part of the spec hash.")
    transitions: list[Transition] | None = Field(
        None, description="Edges out; none makes the state terminal. A human state needs one to another state."
    )
    timeout: str | None = Field(
        None,
        pattern=r"^\s*[0-9]*[1-9][0-9]*(ms|s|m|h|d)\s*$",
        description=(
            "Human states: how long the park waits for a decision, a duration such as `30m`, `2h` or `3d` "
            "(units ms, s, m, h, d), counted from the park. When it passes, the transition marked "
            "`on_timeout: true` is taken (else the turn fails)."
        ),
    )


class RootTools(_Doc):
    """Tool governance for every state."""

    allow_always: list[ToolEntry] | None = Field(None, description="Granted in every state.")
    forbid_always: list[ToolEntry] | None = Field(
        None, description="Removed in every state, control tools included (`*`: everything)."
    )


class Policy(_Doc):
    """Workflow-wide policy."""

    forbid_tools: list[ToolEntry] | None = Field(
        None, description="Merged with `tools.forbid_always`, e.g. `[archmax_wait]` to forbid parking."
    )


class WorkflowDocument(_Doc):
    """``workflows/<slug>/workflow.yaml``: a state machine whose sessions park and resume."""

    model_config = ConfigDict(title="archmax workflow.yaml")

    title: str | None = Field(None, description="The workflow's name for people.")
    instructions: str | None = Field(None, description="Shown to the model in every state (non-empty when present).")
    disabled: bool | None = Field(
        None, description="`true` refuses new turns; deliveries, replies and decisions still work."
    )
    metadata: dict[str, Any] | None = Field(None, description="Free-form, not part of the spec hash.")
    states: dict[str, State | None] = Field(
        description="Every state by slug (`^[a-z0-9]+(-[a-z0-9]+)*$`), in order; at least one declares a trigger.",
        min_length=1,
    )
    tools: RootTools | None = None
    policy: Policy | None = None
    tests: dict[str, Any] | None = Field(
        None, description="Case-runner settings: `judge` (grader for `grade`), `caseTimeoutMs`, `maxConcurrency` (1)."
    )
    settings: Any = Field(None, description="Accepted and kept; not read by this runtime.")
    skills: Any = Field(None, description="Accepted and kept; not read by this runtime.")
    mounts: Any = Field(None, description="Accepted and kept; not read by this runtime.")
    extensions: dict[str, Any] | None = Field(
        None, description="`hooks: [<kind>]` declares custom hook kinds (given executors at `create_agent(hooks=...)`)."
    )
    runtime: Any = Field(None, description="Accepted and kept; not read by this runtime.")


# --------------------------------------------------------------------------- test cases


class CaseTrigger(_Doc):
    """``trigger: {id}``: the trigger every driven turn uses (checked against the declared ones)."""

    id: str


class Mock(_Doc):
    """A tool mock: a host tool (or ``archmax_workflow_<slug>``) answered with ``result``."""

    tool: str
    when_input: dict[str, Any] | None = Field(None, alias="whenInput", description="Matches every call when absent.")
    result: Any = Field(description="What the call returns.")


class ScriptedAnswer(_Doc):
    """One scripted model answer: ``say`` text, ``call`` tools, or both; ``expect_state`` checks the position."""

    say: str | None = None
    call: dict[str, dict[str, Any]] | list[dict[str, dict[str, Any]]] | None = Field(
        None, description="`{tool: {args}}` or a list of them, in order, in one message."
    )
    expect_state: str | None = None


def _one(key: str, body: Any, description: str) -> type[BaseModel]:
    """A one-key step model ``{<key>: <body>}``."""
    from pydantic import create_model

    name = "Step_" + key
    return create_model(  # type: ignore[call-overload]
        name, __config__=ConfigDict(extra="forbid", title=key), __doc__=description, **{key: (body, ...)}
    )


STEP_MODELS: dict[str, type[BaseModel]] = {
    "send": _one("send", str, "Action: send a message (a turn, a delivery or a reply, by the firing rule)."),
    "decide": _one("decide", DecideBody, "Action: decide a session parked at a human state."),
    "deliver": _one("deliver", DeliverBody, "Action: deliver an event into an input park."),
    "succeeded": _one("succeeded", Literal[True], "Not parked, no raise, no `error` tool result."),
    "parked": _one("parked", Literal[True, "decision", "input"] | ParkedBody, "Parked (on that channel / state)."),
    "raised": _one("raised", Literal[True] | str | RaisedBody, "A raise exists (with that code / reason)."),
    "reachedState": _one("reachedState", str, "Some non-trigger trail step went to this state."),
    "trail": _one("trail", TrailBody, "Exactly `count` trail steps match."),
    "noTraversal": _one("noTraversal", Literal[True], "Every trail step is a trigger step."),
    "triggerArrival": _one("triggerArrival", str, "A trigger step with this id exists (deliveries included)."),
    "variables": _one("variables", VariablesBody, "Variables hold these values / locks."),
    "reply": _one("reply", ReplyBody, "Tokens in, or absent from, the agent's text so far."),
    "calledTool": _one("calledTool", str | ToolBody, "A matching tool call exists. A bare name is ``{name: <name>}``."),
    "notCalledTool": _one(
        "notCalledTool", str | ToolBody, "No matching tool call exists. A bare name is ``{name: <name>}``."
    ),
    "blockedTool": _one(
        "blockedTool", str | ToolBody, "A matching call was blocked. A bare name is ``{name: <name>}``."
    ),
    "usedNoTools": _one("usedNoTools", Literal[True], "No tool call at all (notes excluded)."),
    "ranWorkflow": _one("ranWorkflow", RanWorkflowBody, "Counted over sub-workflow trail steps."),
    "grade": _one("grade", GradeBody, "The judge's score is at least `atLeast`."),
}


class CaseDocument(_Doc):
    """``workflows/<slug>/tests/**/*.test.yaml``: one offline or live test case of a workflow."""

    model_config = ConfigDict(title="archmax test case")

    title: str = Field(max_length=60, description="One line, at most 60 characters.")
    description: str = Field(max_length=200, description="At most 200 characters.")
    skip: str | None = Field(None, description="A reason: the case is reported skipped and nothing runs.")
    trigger: CaseTrigger | None = None
    variables: dict[str, Any] | None = Field(None, description="Locked seeds applied on each driven turn.")
    workspace: dict[str, Any] | None = Field(
        None, description="`{path: content | {from: <fixture under tests/>}}` seeded before the first step."
    )
    mocks: list[Mock] | None = None
    model: list[ScriptedAnswer] | None = Field(None, description="A scripted model: the case runs offline.")
    steps: list[dict[str, Any]] = Field(
        description="Each a one-key mapping: an action, or an assertion that reads the view the nearest action left.",
    )


def json_schema(which: Literal["workflow", "case"]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``workflow.yaml`` or of a test case.

    Args:
        which: ``"workflow"`` or ``"case"``.

    Returns:
        A JSON-able schema with ``$schema``, ``$id`` and ``title``; the case schema's step kinds
        are its ``$defs`` ``Step_<key>``.
    """
    if which == "workflow":
        schema = WorkflowDocument.model_json_schema(by_alias=True)
    else:
        schema = CaseDocument.model_json_schema(by_alias=True)
        defs = schema.setdefault("$defs", {})
        for key, model in STEP_MODELS.items():
            sub = model.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
            defs.update(sub.pop("$defs", {}))
            defs[f"Step_{key}"] = sub
        schema["properties"]["steps"]["items"] = {"anyOf": [{"$ref": f"#/$defs/Step_{k}"} for k in STEP_MODELS]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID.format(name=which), **schema}
