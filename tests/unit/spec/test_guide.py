"""docs/workflow.md's hand-written guide says what the runtime does (issue 25 item 9).

Every ``until`` example the guide names is accepted, every one it calls refused is refused, the
``tools.py`` example loads and runs as a host tool, and the ``model.yaml`` example is a valid
script that answers as the guide says.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from archmax.engine.tools import host_tools_from
from archmax.errors import ModelScriptError
from archmax.models.base import ModelRequest
from archmax.models.scripted import ScriptedModel
from archmax.session.until import UNTIL_HINT, UntilError, parse_until
from archmax.spec.guide import GUIDE
from archmax.workflow_tools import load_tools

REPO = Path(__file__).resolve().parents[3]
NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def _section(title: str) -> str:
    return GUIDE.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _block(text: str, lang: str) -> str:
    return text.split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def _until_rows() -> dict[str, list[str]]:
    rows = {}
    for line in _section("Waiting for a time: `until`").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0] in ("duration", "ISO-8601 duration", "instant"):
            rows[cells[0]] = re.findall(r"`([^`]+)`", cells[2])
    return rows


def test_the_guide_is_part_of_docs_workflow_md() -> None:
    doc = (REPO / "docs" / "workflow.md").read_text(encoding="utf-8")
    assert GUIDE.rstrip("\n") in doc
    for title in ("Host tools: `tools.py`", "Waiting for a time: `until`", "Timers: the `timer` trigger needs no declaration",
                  "Scripted models: `model.yaml`"):  # fmt: skip
        assert f"\n## {title}\n" in doc


def test_every_until_example_in_the_table_is_accepted() -> None:
    rows = _until_rows()
    assert set(rows) == {"duration", "instant"}
    assert {"30m", "120s", "2h", "1d"} <= set(rows["duration"])
    for examples in rows.values():
        for example in examples:
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", parse_until(example, NOW)), example


def test_every_until_the_guide_calls_refused_is_refused_with_the_forms() -> None:
    text = _section("Waiting for a time: `until`")
    refused = re.findall(r"`([^`]+)`", text.split("the model is told why", 1)[1].split("A refused `until`", 1)[0])
    refused = [v for v in refused if v not in ("150m", "7d", "2m")]  # the equivalents the guide suggests
    assert {"1.5h", "2 h", "2H", "2h30m", "1w", "PT2M", "tomorrow"} == set(refused)
    for value in refused:
        with pytest.raises(UntilError, match="is neither a duration nor an instant"):
            parse_until(value, NOW)
    with pytest.raises(UntilError, match="must be a positive duration"):
        parse_until("0m", NOW)
    for form in ("30m", "2h", "1d"):
        assert form in UNTIL_HINT  # the refusal names the forms the guide documents


def test_the_tools_py_example_loads_and_runs_as_a_host_tool(tmp_path: Path) -> None:
    folder = tmp_path / "order-lookup"
    folder.mkdir()
    (folder / "tools.py").write_text(_block(_section("Host tools: `tools.py`"), "python"), encoding="utf-8")
    (folder / "orders.json").write_text(json.dumps({"orders": [{"id": "ORD-1001", "status": "shipped"}]}))
    tools = host_tools_from(load_tools(folder))
    tool = tools["lookup_order"]
    assert tool.spec.description.startswith("Look an order up by its id")
    assert tool.spec.parameters == {"type": "object", "properties": {"order_id": {"type": "string"}},
                                    "required": ["order_id"]}  # fmt: skip
    assert tool.fn(order_id="ORD-1001") == {"found": True, "order": {"id": "ORD-1001", "status": "shipped"}}
    assert tool.fn(order_id="ORD-9") == {"found": False, "order_id": "ORD-9"}


def _request(state: str) -> ModelRequest:
    return ModelRequest(system="", state_block="", messages=[], tools=[], state=state, session_id="s-1")


def test_the_model_yaml_example_is_a_script_that_answers_in_order(tmp_path: Path) -> None:
    text = _block(_section("Scripted models: `model.yaml`"), "yaml")
    script = tmp_path / "model.yaml"
    script.write_text(text, encoding="utf-8")
    model = ScriptedModel.from_file(script)
    assert model.remaining == 4
    first = model.complete(_request("intake"))
    assert [(c.name, c.args) for c in first.tool_calls] == [
        ("archmax_advance", {"to": "clarify", "reason": "no order number"})
    ]
    second = model.complete(_request("clarify"))
    assert second.text == "Which order is this about?" and second.tool_calls[0].args["until"] == "2d"
    third = model.complete(_request("clarify"))
    assert [c.args["order_id"] for c in third.tool_calls] == ["ORD-1001", "ORD-1002"]
    assert model.complete(_request("answer")).text == "ORD-1001 ships tomorrow."
    with pytest.raises(ModelScriptError, match="model script exhausted after 4 responses"):
        model.complete(_request("answer"))
    plain = ScriptedModel(yaml.safe_load(text)["responses"])  # the list form is the same script
    with pytest.raises(ModelScriptError, match="model response 1 expected state 'intake' but the session is in 'x'"):
        plain.complete(_request("x"))
