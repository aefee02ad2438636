"""Record a model's answers as a script that replays them: a cassette.

Rule source: BEHAVIOUR.md §10.4 (the entry shape the cassette writes) and DESIGN.md §5 (a
``scripted:<file>`` model is configuration). Run once against a real provider with a
:class:`RecordingModel`, then run again with ``ARCHMAX_MODEL=scripted:<cassette>``: the same
answers come back in the same order, each checked against the state it was recorded in.

Each exchange is appended as one valid ScriptedModel entry (``say`` and/or ``call`` in list form,
plus ``expect_state``). Entries are strict, so the request summary travels as a YAML comment
above its entry.
"""

from __future__ import annotations

import threading
from os import PathLike
from pathlib import Path
from typing import Any

import yaml

from archmax.errors import ModelConfigurationError
from archmax.models.base import Model, ModelRequest, ModelResponse

HEADER = "# archmax model cassette: replay with ARCHMAX_MODEL=scripted:<this file>\n"
SUMMARY_CHARS = 100


class _CassetteDumper(yaml.SafeDumper):
    """A SafeDumper writing multi-line text as a literal block (``say: |-``).

    A cassette then reads like the hand-written scripts; PyYAML falls back to a quoted style where a
    block cannot hold the text (trailing spaces, carriage returns).
    """


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_CassetteDumper.add_representer(str, _str)


def response_entry(request: ModelRequest, response: ModelResponse) -> dict[str, Any]:
    """The ScriptedModel entry that reproduces ``response`` at ``request.state``.

    Args:
        request: The call answered (its ``state`` becomes ``expect_state``).
        response: The answer: its text becomes ``say``, its calls ``call: [{tool: args}, ...]`` (the
            list form, so the same tool may appear twice). Call ids are not kept: replay numbers
            them ``call_<n>``.

    Returns:
        A mapping accepted by :class:`~archmax.models.scripted.ScriptedModel`.
    """
    entry: dict[str, Any] = {}
    if response.text or not response.tool_calls:
        entry["say"] = response.text
    if response.tool_calls:
        entry["call"] = [{c.name: dict(c.args)} for c in response.tool_calls]
    entry["expect_state"] = request.state
    return entry


def request_summary(index: int, request: ModelRequest) -> str:
    """A one-line, comment-safe description of a call: index, state, handoff, transcript size, last message."""
    parts = [f"response {index}", f"state '{request.state}'"]
    if request.handoff:
        parts.append("handoff")
    parts.append(f"{len(request.messages)} messages")
    if request.messages:
        last = request.messages[-1]
        text = " ".join(last.content.split()) or ", ".join(c.name for c in last.tool_calls)
        if len(text) > SUMMARY_CHARS:
            text = text[: SUMMARY_CHARS - 1] + "…"
        parts.append(f"last {last.role}: {text}")
    return " · ".join(parts)


def _existing_entries(path: Path) -> list[Any]:
    """The entries a cassette already holds, refusing a file that is not a cassette.

    Raises:
        ModelConfigurationError: the file is not YAML, or its document is neither empty nor a list.
        OSError: the file cannot be read.
    """
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ModelConfigurationError(
            f"'{path}' is not a cassette (not YAML), so it is not appended to: {exc}"
        ) from exc
    if doc is None:
        return []
    if not isinstance(doc, list):
        raise ModelConfigurationError(
            f"'{path}' holds a YAML {type(doc).__name__}, not a cassette (a list of entries), so it is not "
            "appended to; record into a new file"
        )
    return doc


class RecordingModel:
    """Wrap any model and append each of its answers to a YAML cassette.

    Args:
        inner: The model that really answers.
        path: The cassette file; created with a header if absent, appended to otherwise (a session
            that parks and resumes in another process keeps recording into the same cassette).
        fresh: Start the cassette over instead of appending.

    Raises:
        ModelConfigurationError: ``path`` is a folder or cannot be read or written, or it already
            holds something other than a cassette (a YAML list of entries, or nothing), so appending
            to it would corrupt it (a workflow file passed by mistake, a ``{responses: [...]}``
            script).

    Example:
        >>> model = RecordingModel(BedrockModel("amazon.nova-lite-v1:0"), "cassette.yaml")  # doctest: +SKIP
    """

    def __init__(self, inner: Model, path: str | PathLike[str], *, fresh: bool = False) -> None:
        self.inner = inner
        self.path = Path(path)
        self.recorded = 0
        self._lock = threading.Lock()
        try:
            if fresh or not self.path.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_text(HEADER, encoding="utf-8")
                self._offset = 0
            else:
                self._offset = len(_existing_entries(self.path))
        except OSError as exc:
            raise ModelConfigurationError(
                f"cannot record model answers to '{self.path}': {exc.strerror or exc}"
            ) from exc

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Ask the inner model, record its answer, and return it unchanged.

        Raises:
            ModelError: whatever the inner model raises; a failed call records nothing.
        """
        response = self.inner.complete(request)
        entry = response_entry(request, response)
        with self._lock:
            index = self._offset + self.recorded + 1
            block = f"# {request_summary(index, request)}\n" + yaml.dump(
                [entry], Dumper=_CassetteDumper, sort_keys=False, allow_unicode=True, width=100
            )
            with self.path.open("a", encoding="utf-8") as f:
                f.write(block)
            self.recorded += 1
        return response
