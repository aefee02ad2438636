"""Selecting the model is configuration everywhere: ``create_agent``, a state's ``model:``, the Lambda template.

Rule source: DESIGN.md §5 ("Choosing one is configuration ... never a code change") and issue 5
(item 3: ``ARCHMAX_MODEL``, ``--model``, the template parameter and ``create_agent``; a per-state
``model:`` overrides the default).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cfnlint.decode.decode import decode_str

from archmax import create_agent
from archmax.errors import ModelConfigurationError
from archmax.models import BedrockModel, ScriptedModel, model_from_config
from archmax.models.pricing import estimate_cost
from archmax.session.records import Usage
from archmax.stores.filesystem import FilesystemStore

from ._chat_server import ChatServer, completion, tool_call

REPO = Path(__file__).resolve().parents[3]

# intake (default model) -> draft (its own model) -> done (default model again)
WORKFLOW = {
    "title": "Letters",
    "states": {
        "intake": {
            "instructions": "Read the request, then advance to draft.",
            "triggers": {"manual": {"description": "Someone asks for a letter."}},
            "transitions": [{"to": "draft", "description": "The request is understood."}],
        },
        "draft": {
            "instructions": "Write the letter, then advance to done.",
            "model": "PER_STATE",
            "transitions": [{"to": "done", "description": "The letter is written."}],
        },
        "done": {"instructions": "Say that the letter is ready."},
    },
}


def workflow_dir(tmp_path: Path, state_model: str, script: list[dict] | None = None) -> Path:
    """A ``letters`` workflow whose ``draft`` state names ``state_model``; ``script`` is written beside it."""
    folder = tmp_path / "workflows" / "letters"
    folder.mkdir(parents=True)
    doc = json.loads(json.dumps(WORKFLOW).replace("PER_STATE", state_model))
    (folder / "workflow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    if script is not None:
        (folder / "draft-model.yaml").write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    return folder


DRAFT_SCRIPT = [
    {
        "expect_state": "draft",
        "say": "Dear Ms Reyes, ...",
        "call": {"archmax_advance": {"to": "done", "reason": "Letter written."}},
    },
]
DEFAULT_SCRIPT = [
    {"expect_state": "intake", "call": {"archmax_advance": {"to": "draft", "reason": "Understood."}}},
    {"expect_state": "done", "say": "Your letter is ready."},
]


def test_a_state_with_its_own_scripted_model_uses_it_while_the_others_use_the_default(tmp_path):
    # The per-state path is relative: it is read from the workflow folder, not the working directory.
    folder = workflow_dir(tmp_path, "scripted:draft-model.yaml", DRAFT_SCRIPT)
    default = ScriptedModel(DEFAULT_SCRIPT)
    agent = create_agent(folder, FilesystemStore(tmp_path / "sessions"), default)

    outcome = agent.workflow.send("letter-1", "A letter to Ms Reyes, please.", trigger="manual")

    assert (outcome.kind, outcome.reply) == ("completed", "Your letter is ready.")
    assert default.consumed == 2  # intake and done, nothing in draft
    record = FilesystemStore(tmp_path / "sessions").load("letter-1")
    assert [m.content for m in record.messages if m.role == "assistant" and m.content] == [
        "Dear Ms Reyes, ...",
        "Your letter is ready.",
    ]
    assert [s.to for s in record.trail] == ["intake", "draft", "done"]


def test_without_a_model_argument_the_default_comes_from_archmax_model(tmp_path, monkeypatch):
    folder = workflow_dir(tmp_path, "scripted:draft-model.yaml", DRAFT_SCRIPT)
    (tmp_path / "default.yaml").write_text(yaml.safe_dump(DEFAULT_SCRIPT), encoding="utf-8")
    monkeypatch.setenv("ARCHMAX_MODEL", f"scripted:{tmp_path / 'default.yaml'}")
    agent = create_agent(folder, FilesystemStore(tmp_path / "sessions"))

    outcome = agent.workflow.send("letter-1", "A letter to Ms Reyes, please.", trigger="manual")

    assert (outcome.kind, outcome.reply) == ("completed", "Your letter is ready.")


def test_without_a_model_argument_or_archmax_model_the_first_call_says_how_to_configure_one(tmp_path, monkeypatch):
    folder = workflow_dir(tmp_path, "scripted:draft-model.yaml", DRAFT_SCRIPT)
    monkeypatch.delenv("ARCHMAX_MODEL", raising=False)
    agent = create_agent(folder, FilesystemStore(tmp_path / "sessions"))  # building needs no model

    with pytest.raises(ModelConfigurationError, match="set ARCHMAX_MODEL"):
        agent.workflow.send("letter-1", "A letter, please.", trigger="manual")


def test_a_bare_per_state_model_id_goes_to_the_environment_s_adapter_and_is_priced_as_that_model(tmp_path, monkeypatch):
    server = ChatServer().start()
    try:
        monkeypatch.setenv("ARCHMAX_MODEL", "openai:gpt-4o-mini")
        monkeypatch.setenv("ARCHMAX_API_BASE_URL", server.base_url)
        monkeypatch.setenv("ARCHMAX_API_KEY", "sk-test")
        usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
        advance = {
            "content": None,
            "tool_calls": [tool_call("c1", "archmax_advance", {"to": "draft", "reason": "Understood."})],
        }
        server.answer(200, completion(advance, finish="tool_calls", usage=usage))
        finish = {
            "content": None,
            "tool_calls": [tool_call("c2", "archmax_advance", {"to": "done", "reason": "Written."})],
        }
        server.answer(200, completion(finish, finish="tool_calls", usage=usage, model="gpt-4.1"))
        server.answer(200, completion({"content": "Ready."}, usage=usage))
        folder = workflow_dir(tmp_path, "gpt-4.1", None)
        agent = create_agent(folder, FilesystemStore(tmp_path / "sessions"))

        outcome = agent.workflow.send("letter-1", "A letter, please.", trigger="manual")
    finally:
        server.stop()

    assert outcome.kind == "completed"
    assert [r["body"]["model"] for r in server.requests] == ["gpt-4o-mini", "gpt-4.1", "gpt-4o-mini"]
    each = Usage(input_tokens=1000, output_tokens=100)
    expected = 2 * estimate_cost("gpt-4o-mini", each) + estimate_cost("gpt-4.1", each)
    summary = agent.sessions.get("letter-1")
    assert (summary.usage.input_tokens, summary.usage.output_tokens) == (3000, 300)
    assert summary.usage.cost_usd == pytest.approx(expected)
    assert estimate_cost("gpt-4.1", each) > 10 * estimate_cost("gpt-4o-mini", each)  # the prices differ


def test_the_lambda_template_passes_its_model_id_parameter_to_every_function_as_archmax_model():
    doc, errors = decode_str((REPO / "template.yaml").read_text(encoding="utf-8"))
    assert not errors, errors
    doc = json.loads(json.dumps(doc))

    parameter = doc["Parameters"]["ModelId"]
    assert doc["Globals"]["Function"]["Environment"]["Variables"]["ARCHMAX_MODEL"] == {"Ref": "ModelId"}
    functions = [r for r in doc["Resources"].values() if r["Type"] == "AWS::Serverless::Function"]
    assert functions
    for function in functions:
        overridden = ((function["Properties"].get("Environment") or {}).get("Variables") or {}).get("ARCHMAX_MODEL")
        assert overridden in (None, {"Ref": "ModelId"})
    # The default is a configuration the runtime accepts, and building it touches no network.
    assert isinstance(model_from_config(parameter["Default"], env={}), BedrockModel)
