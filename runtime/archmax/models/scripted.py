"""The scripted model: an ordered list of canned answers, consumed one per model call.

Rule source: BEHAVIOUR.md §10.4 (entries, consumption, ``expect_state``, exhaustion) and
DESIGN.md §5 (``scripted:<file>``, what tests, cases and ``make demo`` use). It runs offline
and deterministically: no network, no randomness, no clock.

An entry is a strict mapping::

    - say: "Which order is this about?"          # text
      call: {archmax_wait: {reason: "order id"}} # and/or tool calls (mapping form, order kept)
      expect_state: clarify                      # optional: where the session must be
    - call:                                      # list form: the same tool may appear twice
        - lookup_order: {order_id: ORD-1}
        - lookup_order: {order_id: ORD-2}
"""

from __future__ import annotations

import json
import threading
from os import PathLike
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from archmax.errors import ModelConfigurationError, ModelScriptError
from archmax.models.base import ModelRequest, ModelResponse
from archmax.session.records import ToolCall, Usage

ENTRY_KEYS = ("say", "call", "expect_state")


class ScriptEntry(BaseModel):
    """One scripted answer (§10.4), validated strictly.

    ``calls`` is the normalised form of ``call``: a list of ``(tool, args)`` pairs in order.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    say: str | None = None
    """A text answer (may be combined with ``call`` into one message). An empty string is an empty
    answer, which a cassette records when a provider gave one."""
    call: dict[str, Any] | list[Any] | None = None
    """``{tool: {args}, ...}`` or ``[{tool: {args}}, ...]`` as written."""
    expect_state: str | None = None
    """The state slug the session must be in when this entry is consumed."""

    @field_validator("expect_state")
    @classmethod
    def _state_is_slug(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("'expect_state' must be a state slug")
        return value

    @model_validator(mode="after")
    def _says_or_calls(self) -> ScriptEntry:
        if self.say is None and self.call is None:
            raise ValueError("an entry needs 'say', 'call' or both")
        if self.call is not None:
            self.calls  # noqa: B018 - validates the call's shape now rather than at consumption
        return self

    @property
    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The calls as ``[(tool, args), ...]`` in the order written.

        Raises:
            ValueError: when ``call`` is malformed (caught and re-raised as ModelScriptError).
        """
        if self.call is None:
            return []
        if isinstance(self.call, dict):
            pairs = list(self.call.items())
        else:
            pairs = []
            for j, item in enumerate(self.call):
                if not isinstance(item, dict) or len(item) != 1:
                    raise ValueError(f"call item {j} must be a mapping with exactly one tool name")
                pairs.extend(item.items())
        if not pairs:
            raise ValueError("'call' names no tool")
        out: list[tuple[str, dict[str, Any]]] = []
        for tool, args in pairs:
            if not isinstance(tool, str) or not tool.strip():
                raise ValueError(f"tool name {tool!r} must be a non-empty string")
            # `tool:` with nothing after it (YAML null) means a call without arguments.
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise ValueError(f"the arguments of '{tool}' must be a mapping, not {type(args).__name__}")  # noqa: TRY004 - pydantic reports ValueError only
            out.append((tool, dict(args)))
        return out


def parse_entries(entries: Any) -> list[ScriptEntry]:
    """Validate raw script entries.

    Args:
        entries: A list of mappings (§10.4 entry shape).

    Returns:
        The validated entries, in order.

    Raises:
        ModelScriptError: when ``entries`` is not a list, or an entry has an unknown key, neither
            ``say`` nor ``call``, or a malformed ``call``. The message names the 1-based entry index.
    """
    if not isinstance(entries, list):
        raise ModelScriptError(f"a model script is a list of entries, not {type(entries).__name__}")
    parsed: list[ScriptEntry] = []
    for i, raw in enumerate(entries, start=1):
        if not isinstance(raw, dict):
            raise ModelScriptError(f"model response {i}: an entry must be a mapping, not {type(raw).__name__}")
        unknown = [k for k in raw if k not in ENTRY_KEYS]
        if unknown:
            raise ModelScriptError(
                f"model response {i}: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"known keys: {', '.join(ENTRY_KEYS)}"
            )
        try:
            parsed.append(ScriptEntry.model_validate(raw))
        except ValidationError as exc:
            problems = "; ".join(_describe(err) for err in exc.errors())
            raise ModelScriptError(f"model response {i}: {problems}") from exc
    return parsed


def _describe(err: Any) -> str:
    where = ".".join(str(p) for p in err.get("loc", ()) if not isinstance(p, int))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


def _words(text: str) -> int:
    return len(text.split())


class ScriptedModel:
    """A model that answers from a script, one entry per call (BEHAVIOUR.md §10.4).

    Args:
        entries: Raw entries (see module docstring); validated at construction.
        name: Reported as ``ModelResponse.model_id``.

    Raises:
        ModelScriptError: at construction, for an invalid entry (naming its index).

    Example:
        >>> model = ScriptedModel([{"say": "Hello."}])
        >>> model.remaining
        1
    """

    def __init__(self, entries: list[dict[str, Any]], *, name: str = "scripted") -> None:
        self.entries: list[ScriptEntry] = parse_entries(entries)
        self.name = name
        self._consumed = 0
        self._next_call_id = 1
        # An engine may run child sessions on other threads; one lock keeps ids and order exact.
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | PathLike[str], *, name: str | None = None) -> ScriptedModel:
        """Load a script from a YAML file.

        Args:
            path: A YAML file holding a list of entries, or a mapping ``{responses: [...]}``.
            name: The model name; defaults to ``scripted:<file name>``.

        Returns:
            A fresh ScriptedModel at its first entry.

        Raises:
            ModelConfigurationError: when the file cannot be read.
            ModelScriptError: when the YAML is invalid or holds an invalid script.
        """
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelConfigurationError(f"cannot read model script '{p}': {exc.strerror or exc}") from exc
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ModelScriptError(f"model script '{p}' is not valid YAML: {exc}") from exc
        if isinstance(doc, dict):
            extra = [k for k in doc if k != "responses"]
            if extra or "responses" not in doc:
                raise ModelScriptError(
                    f"model script '{p}': a mapping must hold exactly one key 'responses' (a list of entries)"
                )
            doc = doc["responses"]
        if doc is None:
            doc = []
        try:
            return cls(doc, name=name or f"scripted:{p.name}")
        except ModelScriptError as exc:
            raise ModelScriptError(f"model script '{p}': {exc.message}") from exc

    @property
    def consumed(self) -> int:
        """How many entries calls have consumed so far."""
        return self._consumed

    @property
    def remaining(self) -> int:
        """How many entries are left (``model.unconsumed`` in a case, §10.4)."""
        return len(self.entries) - self._consumed

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one call with the next entry.

        Every call consumes exactly one entry, handoff calls included (§10.4). A mismatched
        ``expect_state`` still consumes its entry: the call was made.

        Args:
            request: The call; only ``request.state`` and the text sizes (for usage) are read.

        Returns:
            One assistant message: the entry's text and its calls with ids ``call_<n>``
            (n counting from 1 per instance). Usage counts whitespace-separated words, so it is
            small, deterministic and non-zero.

        Raises:
            ModelScriptError: ``model script exhausted after <n> responses (state '<s>')`` after the
                last entry; ``model response <i> expected state '<a>' but the session is in '<b>'``
                on a mismatch (i is 1-based).
        """
        with self._lock:
            if self._consumed >= len(self.entries):
                raise ModelScriptError(
                    f"model script exhausted after {len(self.entries)} responses (state '{request.state}')",
                    session_id=request.session_id,
                )
            index = self._consumed
            entry = self.entries[index]
            self._consumed += 1
            if entry.expect_state is not None and entry.expect_state != request.state:
                raise ModelScriptError(
                    f"model response {index + 1} expected state '{entry.expect_state}' "
                    f"but the session is in '{request.state}'",
                    session_id=request.session_id,
                )
            calls = []
            for tool, args in entry.calls:
                calls.append(ToolCall(id=f"call_{self._next_call_id}", name=tool, args=args))
                self._next_call_id += 1
        text = entry.say or ""
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=_usage(request, text, calls),
            stop_reason="tool_use" if calls else "end_turn",
            model_id=self.name,
        )


def _usage(request: ModelRequest, text: str, calls: list[ToolCall]) -> Usage:
    prompt = [request.system, request.state_block]
    for m in request.messages:
        prompt.append(m.content)
        prompt.extend(json.dumps(c.args, sort_keys=True) for c in m.tool_calls)
    out = _words(text) + sum(1 + _words(json.dumps(c.args, sort_keys=True)) for c in calls)
    return Usage(input_tokens=max(1, sum(_words(p) for p in prompt)), output_tokens=max(1, out))
