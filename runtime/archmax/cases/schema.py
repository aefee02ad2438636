"""The case file format: strict top-level keys, one-key steps, action and assertion bodies.

Rule source: BEHAVIOUR.md §10.1 (top-level keys), §10.2 (steps and assertions), §10.4 (``model:``).
Every problem is a :class:`~archmax.errors.CaseSpecError` naming the case file and the key.

Example:
    >>> case = parse_case({"title": "t", "description": "d", "steps": [{"send": "hi"}, {"succeeded": True}]},
    ...                   path="tests/hi.test.yaml", tests_dir=Path("tests"))
    >>> [s.key for s in case.steps]
    ['send', 'succeeded']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from archmax.cases.matching import BadPatternError, check_patterns, compile_token
from archmax.errors import ArchmaxError, CaseSpecError
from archmax.models.scripted import ScriptEntry, parse_entries
from archmax.session.files import check_seed_path
from archmax.session.variables import is_variable_name
from archmax.spec.governance import RESERVED_PREFIX, SUBWORKFLOW_PREFIX

TOP_LEVEL_KEYS = (
    "title",
    "description",
    "skip",
    "trigger",
    "variables",
    "workspace",
    "mocks",
    "model",
    "steps",
)
ACTIONS = ("send", "decide", "deliver")
STRUCTURAL = (
    "succeeded",
    "parked",
    "raised",
    "reachedState",
    "trail",
    "noTraversal",
    "triggerArrival",
    "variables",
)
CONTENT = ("reply", "calledTool", "notCalledTool", "blockedTool", "usedNoTools", "ranWorkflow", "grade")
STEP_KEYS = ACTIONS + STRUCTURAL + CONTENT
TITLE_MAX = 60
DESCRIPTION_MAX = 200

_WS = re.compile(r"\s+")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)


# --------------------------------------------------------------------------- action bodies


def _non_blank(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} must be a non-empty string")
    return value


class DecideBody(_Strict):
    """``decide: {to, comment?}``."""

    to: str
    comment: str | None = None

    @field_validator("to")
    @classmethod
    def _to(cls, v: str) -> str:
        return _non_blank(v, "'to'")


class DeliverBody(_Strict):
    """``deliver: {trigger, variables?}``: a non-empty trigger and valid variable names."""

    trigger: str
    variables: dict[str, Any] = Field(default_factory=dict)

    @field_validator("trigger")
    @classmethod
    def _trigger(cls, v: str) -> str:
        return _non_blank(v, "'trigger'")

    @field_validator("variables")
    @classmethod
    def _names(cls, v: dict[str, Any]) -> dict[str, Any]:
        for name in v:
            if not is_variable_name(name):
                raise ValueError(f"variable name {name!r} must match ^[a-z][a-z0-9_]*$")
        return v


# --------------------------------------------------------------------------- assertion bodies


class ParkedBody(_Strict):
    """``parked: {channel?, state?}``."""

    channel: Literal["decision", "input"] | None = None
    state: str | None = None


class RaisedBody(_Strict):
    """``raised: {code?, reason?}``; an empty mapping is an error."""

    code: str | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> RaisedBody:
        if self.code is None and self.reason is None:
            raise ValueError("an empty mapping is an error: give 'code', 'reason' or both (or write 'raised: true')")
        if self.reason is not None:
            _pattern_ok(self.reason)
        return self


class TrailBody(_Strict):
    """``trail: {to?, kind?, reason?, count}``: at least one matcher."""

    to: str | None = None
    kind: str | None = None
    reason: str | None = None
    count: int = Field(ge=0)

    @model_validator(mode="after")
    def _one_matcher(self) -> TrailBody:
        if self.to is None and self.kind is None and self.reason is None:
            raise ValueError("at least one matcher ('to', 'kind' or 'reason') is required")
        return self


class VariablesBody(_Strict):
    """``variables: {expect: {n: v}, path?: {n: p}, locked?: {n: bool}}``."""

    expect: dict[str, Any] = Field(default_factory=dict)
    path: dict[str, str] = Field(default_factory=dict)
    locked: dict[str, bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> VariablesBody:
        if not self.expect and not self.locked:
            raise ValueError("give 'expect' (name → value) and/or 'locked' (name → bool)")
        for name in [*self.expect, *self.locked]:
            if not is_variable_name(name):
                raise ValueError(f"variable name {name!r} must match ^[a-z][a-z0-9_]*$")
        stray = [n for n in self.path if n not in self.expect]
        if stray:
            raise ValueError(f"'path' names {stray[0]!r}, which 'expect' does not")
        return self


class ReplyBody(_Strict):
    """``reply: {includes?, excludes?}``: tokens are substrings or ``/pattern/flags``."""

    includes: list[str] = Field(default_factory=list)
    excludes: list[str] = Field(default_factory=list)

    @field_validator("includes", "excludes", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _tokens(self) -> ReplyBody:
        if not self.includes and not self.excludes:
            raise ValueError("give 'includes' and/or 'excludes'")
        for token in [*self.includes, *self.excludes]:
            if not token:
                raise ValueError("a token must be a non-empty string")
            _pattern_ok(token)
        return self


class ToolBody(_Strict):
    """``calledTool`` / ``notCalledTool`` / ``blockedTool``: ``{name, input?}`` (or just the name)."""

    name: str
    input: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    @model_validator(mode="after")
    def _patterns(self) -> ToolBody:
        _non_blank(self.name, "'name'")
        if self.input is not None:
            _pattern_ok(self.input)
        return self


class RanWorkflowBody(_Strict):
    """``ranWorkflow: {workflow, status?=ok, count?}``."""

    workflow: str
    status: str = "ok"
    count: int | None = Field(default=None, ge=0)


class GradeBody(_Strict):
    """``grade: {closedQA, atLeast}``."""

    closed_qa: str = Field(alias="closedQA")
    at_least: float = Field(alias="atLeast", ge=0, le=1)

    @field_validator("closed_qa")
    @classmethod
    def _question(cls, v: str) -> str:
        return _non_blank(v, "'closedQA'")


def _pattern_ok(value: Any) -> None:
    try:
        check_patterns(value)
    except BadPatternError as exc:
        raise ValueError(str(exc)) from None


_STRICT = ConfigDict(strict=True)
_TRUE: TypeAdapter[Literal[True]] = TypeAdapter(Literal[True], config=_STRICT)
_SLUG = TypeAdapter(str, config=_STRICT)

BODY: dict[str, TypeAdapter[Any]] = {
    "decide": TypeAdapter(DecideBody),
    "deliver": TypeAdapter(DeliverBody),
    "succeeded": _TRUE,
    "parked": TypeAdapter(ParkedBody),
    "raised": TypeAdapter(RaisedBody),
    "reachedState": _SLUG,
    "trail": TypeAdapter(TrailBody),
    "noTraversal": _TRUE,
    "triggerArrival": _SLUG,
    "variables": TypeAdapter(VariablesBody),
    "reply": TypeAdapter(ReplyBody),
    "calledTool": TypeAdapter(ToolBody),
    "notCalledTool": TypeAdapter(ToolBody),
    "blockedTool": TypeAdapter(ToolBody),
    "usedNoTools": _TRUE,
    "ranWorkflow": TypeAdapter(RanWorkflowBody),
    "grade": TypeAdapter(GradeBody),
}


# --------------------------------------------------------------------------- the case


@dataclass(frozen=True)
class Step:
    """One step: its 1-based number, its key and its validated body."""

    number: int
    key: str
    body: Any

    @property
    def is_action(self) -> bool:
        """Whether the step is an action (``send``, ``decide``, ``deliver``) rather than an assertion (§10.2)."""
        return self.key in ACTIONS

    @property
    def is_structural(self) -> bool:
        """Whether the step is a structural assertion, whose failure halts the case (§10.2, §10.3)."""
        return self.key in STRUCTURAL


@dataclass(frozen=True)
class Mock:
    """``{tool, whenInput?, result}``: answers calls to a host tool whose input matches partially."""

    tool: str
    when_input: dict[str, Any] | None
    result: Any


@dataclass(frozen=True)
class Case:
    """A validated case file (§10.1)."""

    id: str
    """The path relative to ``tests/`` without the extension (``timer/wake``)."""
    path: str
    """The case file as discovered (for messages)."""
    title: str
    description: str
    skip: str | None
    trigger: str | None
    variables: dict[str, Any]
    workspace: dict[str, Any]
    """Seed path → content (str / bytes / JSON value), fixtures already read."""
    mocks: tuple[Mock, ...]
    model: tuple[ScriptEntry, ...] | None
    """The scripted model's entries (raw form in ``model_entries``), or None: the configured model drives."""
    model_entries: tuple[dict[str, Any], ...] | None
    steps: tuple[Step, ...]


def collapse(text: str) -> str:
    """Collapse runs of whitespace to one space and trim."""
    return _WS.sub(" ", text).strip()


def parse_case(doc: Any, *, path: str, tests_dir: Path, case_id: str | None = None) -> Case:
    """Validate one case document (§10.1, §10.2, §10.4).

    Args:
        doc: The parsed YAML document.
        path: The case file's path, used in every message.
        tests_dir: The workflow's ``tests/`` folder; ``workspace.<p>.from`` fixtures resolve inside it.
        case_id: The case id (defaults to ``path``'s stem).

    Returns:
        The validated :class:`Case`.

    Raises:
        CaseSpecError: naming ``path`` and the offending key; an unknown key lists the known ones.
    """

    def fail(message: str, key: str | None = None) -> CaseSpecError:
        return CaseSpecError(path, message, key=key)

    if not isinstance(doc, dict):
        raise fail(f"a case is a mapping of keys ({', '.join(TOP_LEVEL_KEYS)}), not {type(doc).__name__}")
    for key in doc:
        if key not in TOP_LEVEL_KEYS:
            raise fail(f"unknown key '{key}'; known keys: {', '.join(TOP_LEVEL_KEYS)}", key=str(key))
    title = _bounded_text(doc, "title", TITLE_MAX, fail)
    description = _bounded_text(doc, "description", DESCRIPTION_MAX, fail)
    skip = doc.get("skip")
    if "skip" in doc and (not isinstance(skip, str) or not skip.strip()):
        raise fail("must be a non-empty reason", key="skip")
    trigger = _trigger(doc.get("trigger"), fail) if "trigger" in doc else None
    variables = _variables(doc.get("variables"), fail) if "variables" in doc else {}
    workspace = _workspace(doc.get("workspace"), tests_dir, fail) if "workspace" in doc else {}
    mocks = _mocks(doc.get("mocks"), fail) if "mocks" in doc else ()
    model: tuple[ScriptEntry, ...] | None = None
    entries: tuple[dict[str, Any], ...] | None = None
    if "model" in doc:
        try:
            model = tuple(parse_entries(doc["model"]))
        except ArchmaxError as exc:
            raise fail(exc.message, key="model") from None
        entries = tuple(doc["model"])
    steps = _steps(doc.get("steps"), fail)
    return Case(
        id=case_id or Path(path).name,
        path=path,
        title=title,
        description=description,
        skip=skip.strip() if isinstance(skip, str) else None,
        trigger=trigger,
        variables=variables,
        workspace=workspace,
        mocks=mocks,
        model=model,
        model_entries=entries,
        steps=steps,
    )


def _bounded_text(doc: dict[str, Any], key: str, limit: int, fail: Any) -> str:
    if key not in doc:
        raise fail("is required", key=key)
    value = doc[key]
    if not isinstance(value, str) or not value.strip():
        raise fail("must be a non-empty string", key=key)
    text = collapse(value)
    if key == "title" and "\n" in value.strip():
        raise fail("must be one line", key=key)
    if len(text) > limit:
        raise fail(f"is {len(text)} characters; at most {limit} are allowed", key=key)
    return text


def _trigger(value: Any, fail: Any) -> str:
    if not isinstance(value, dict):
        raise fail("must be a mapping {id: <trigger id>}", key="trigger")
    for key in value:
        if key != "id":
            raise fail(f"unknown key '{key}'; known keys: id", key=f"trigger.{key}")
    trig = value.get("id")
    if not isinstance(trig, str) or not trig.strip():
        raise fail("must be a non-empty trigger id", key="trigger.id")
    return trig.strip()


def _variables(value: Any, fail: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail("must be a mapping of variable name to value", key="variables")
    for name in value:
        if not is_variable_name(name):
            raise fail(f"variable name {name!r} must match ^[a-z][a-z0-9_]*$", key=f"variables.{name}")
    return dict(value)


def _workspace(value: Any, tests_dir: Path, fail: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail("must be a mapping of path to content or {from: <fixture>}", key="workspace")
    root = tests_dir.resolve()
    out: dict[str, Any] = {}
    for seed_path, content in value.items():
        key = f"workspace.{seed_path}"
        try:
            check_seed_path(seed_path)
        except ArchmaxError as exc:
            raise fail(exc.message, key=key) from None
        if isinstance(content, dict) and set(content) == {"from"}:
            source = content["from"]
            if not isinstance(source, str) or not source.strip():
                raise fail("'from' must name a fixture file relative to tests/", key=f"{key}.from")
            fixture = (root / source).resolve()
            if not fixture.is_relative_to(root):
                raise fail(f"fixture '{source}' escapes tests/", key=f"{key}.from")
            if not fixture.is_file():
                raise fail(f"fixture '{source}' does not exist under tests/", key=f"{key}.from")
            data = fixture.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                out[seed_path] = data
            else:
                out[seed_path] = data if "\x00" in text else text
        else:
            out[seed_path] = content
    return out


def _mocks(value: Any, fail: Any) -> tuple[Mock, ...]:
    if not isinstance(value, list):
        raise fail("must be a list of {tool, whenInput?, result}", key="mocks")
    out = []
    known = ("tool", "whenInput", "result")
    for i, raw in enumerate(value):
        key = f"mocks.{i}"
        if not isinstance(raw, dict):
            raise fail("must be a mapping {tool, whenInput?, result}", key=key)
        for k in raw:
            if k not in known:
                raise fail(f"unknown key '{k}'; known keys: {', '.join(known)}", key=f"{key}.{k}")
        tool = raw.get("tool")
        if not isinstance(tool, str) or not tool.strip():
            raise fail("must name a tool", key=f"{key}.tool")
        if tool.startswith(RESERVED_PREFIX) and not tool.startswith(SUBWORKFLOW_PREFIX):
            raise fail(
                f"'{tool}' cannot be mocked: a mock names a host tool or archmax_workflow_<slug>",
                key=f"{key}.tool",
            )
        if "result" not in raw:
            raise fail("is required", key=f"{key}.result")
        when = raw.get("whenInput")
        if "whenInput" in raw:
            if not isinstance(when, dict):
                raise fail("must be a mapping (matched partially against the call's input)", key=f"{key}.whenInput")
            try:
                check_patterns(when)
            except BadPatternError as exc:
                raise fail(str(exc), key=f"{key}.whenInput") from None
        out.append(Mock(tool=tool, when_input=when, result=raw["result"]))
    return tuple(out)


def _steps(value: Any, fail: Any) -> tuple[Step, ...]:
    if value is None:
        raise fail("is required: a list of one-key steps", key="steps")
    if not isinstance(value, list) or not value:
        raise fail("must be a non-empty list of one-key steps", key="steps")
    steps = []
    seen_action = False
    for i, raw in enumerate(value):
        where = f"steps.{i}"
        if not isinstance(raw, dict) or len(raw) != 1:
            raise fail("a step declares exactly one key", key=where)
        ((key, body),) = raw.items()
        if key not in STEP_KEYS:
            raise fail(
                f"unknown step key '{key}'; actions: {', '.join(ACTIONS)}; "
                f"assertions: {', '.join(STRUCTURAL + CONTENT)}",
                key=f"{where}.{key}",
            )
        if key not in ACTIONS and not seen_action:
            raise fail(
                f"assertion '{key}' comes before the first action (send, decide or deliver)",
                key=f"{where}.{key}",
            )
        seen_action = seen_action or key in ACTIONS
        steps.append(Step(number=i + 1, key=key, body=_body(key, body, f"{where}.{key}", fail)))
    return tuple(steps)


def _body(key: str, body: Any, where: str, fail: Any) -> Any:
    if key == "send":
        if not isinstance(body, str) or not body.strip():
            raise fail("must be non-empty text", key=where)
        return body
    if isinstance(body, (int, float)) and not isinstance(body, bool):
        raise fail(f"must be {SHAPES.get(key, 'true')}, not a number", key=where)
    if key in ("parked", "raised") and not isinstance(body, dict):
        if key == "parked" and (body is True or body in ("decision", "input")):
            return body
        if key == "raised" and (body is True or (isinstance(body, str) and body.strip())):
            return body
        raise fail(f"must be {SHAPES[key]}", key=where)
    try:
        value = BODY[key].validate_python(body)
    except ValidationError as exc:
        raise fail(_describe(exc, KNOWN_BODY_KEYS.get(key)), key=where) from None
    if key in ("reachedState", "triggerArrival") and not value.strip():
        raise fail("must be non-empty", key=where)
    return value


SHAPES = {
    "parked": "true, 'decision', 'input' or {channel?, state?}",
    "raised": "true, a code, or {code?, reason?}",
    "succeeded": "true",
    "noTraversal": "true",
    "usedNoTools": "true",
}

KNOWN_BODY_KEYS = {
    "decide": "to, comment",
    "deliver": "trigger, variables",
    "parked": "channel, state",
    "raised": "code, reason",
    "trail": "to, kind, reason, count",
    "variables": "expect, path, locked",
    "reply": "includes, excludes",
    "calledTool": "name, input",
    "notCalledTool": "name, input",
    "blockedTool": "name, input",
    "ranWorkflow": "workflow, status, count",
    "grade": "closedQA, atLeast",
}


def _describe(exc: ValidationError, known: str | None = None) -> str:
    seen: list[str] = []
    for err in exc.errors():
        parts = [str(p) for p in err.get("loc", ()) if not str(p).startswith(("literal[", "function-"))]
        parts = [p for p in parts if p not in {"ParkedBody", "RaisedBody", "str", "bool"}]
        loc = ".".join(parts)
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden" and parts:
            msg = f"unknown key '{parts[-1]}'" + (f"; known keys: {known}" if known else "")
            loc = ""
        line = f"{loc}: {msg}" if loc and err.get("type") != "value_error" else msg
        if line not in seen:
            seen.append(line)
    return "; ".join(seen[:3])


__all__ = [
    "ACTIONS",
    "CONTENT",
    "STEP_KEYS",
    "STRUCTURAL",
    "TOP_LEVEL_KEYS",
    "Case",
    "DecideBody",
    "DeliverBody",
    "GradeBody",
    "Mock",
    "ParkedBody",
    "RaisedBody",
    "RanWorkflowBody",
    "ReplyBody",
    "Step",
    "ToolBody",
    "TrailBody",
    "VariablesBody",
    "collapse",
    "compile_token",
    "parse_case",
]
