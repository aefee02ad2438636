"""Rules of BEHAVIOUR.md §2 (workflow spec) that the rule audit (tests/RULES.md) found without a test.

Hooks (§2.4) and sub-workflows (§5.10) run (tests/unit/engine/test_hooks.py, test_subworkflows.py):
no workflow is refused for declaring them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from archmax import MemoryStore, create_agent
from archmax.cli import main

from ._support import HUMAN, harness, wait_then, wf

HOOKED_STATES = {
    "before-single": {"before": {"script": "hooks/check.py"}},
    "before-list": {"before": [{"script": "hooks/check.py"}, {"rubric": {"instructions": "Judge it."}}]},
    "after-rubric": {"after": {"rubric": {"instructions": "Is the answer polite?"}}},
    "after-custom-kind": {"after": [{"webhook": "approvals/refund"}]},
}


def _with_state_keys(extra: dict) -> dict:
    doc = {"states": {"a": {"triggers": {"manual": None}, **extra}}}
    if "after-custom-kind" in str(extra) or "webhook" in str(extra):
        doc["extensions"] = {"hooks": ["webhook"]}
    return doc


@pytest.mark.parametrize("hooks", list(HOOKED_STATES.values()), ids=list(HOOKED_STATES))
def test_no_workflow_is_refused_for_declaring_hooks(hooks):
    spec = wf(_with_state_keys(hooks))
    assert spec.uses_hooks()
    agent = create_agent(spec, MemoryStore(), None, hooks={"webhook": lambda ctx, config: {"verdict": "ok"}})
    assert isinstance(agent.spec.states["a"].before + agent.spec.states["a"].after, list)


@pytest.mark.parametrize(
    "doc",
    [
        _with_state_keys({"tools": {"allow": ["archmax_workflow_billing"]}}),
        {"tools": {"allow_always": ["archmax_workflow_billing"]}, **_with_state_keys({})},
    ],
    ids=["state-allow", "root-allow-always"],
)
def test_no_workflow_is_refused_for_granting_a_sub_workflow_tool(doc, tmp_path):
    folder = _workspace(tmp_path, doc)
    billing = folder / "workflows" / "billing"
    billing.mkdir()
    (billing / "workflow.yaml").write_text(yaml.safe_dump(_with_state_keys({})), encoding="utf-8")
    agent = create_agent(folder / "workflows" / "hooked", MemoryStore(), None)
    assert agent.spec.uses_subworkflows()


def _workspace(root: Path, doc: dict) -> Path:
    folder = root / "workflows" / "hooked"
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return root


def test_the_cli_validates_and_runs_a_hooked_workflow(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    doc = _with_state_keys({"after": {"script": "hooks/polite.py"}})
    root = _workspace(tmp_path / "ws", doc)
    hooks = root / "workflows" / "hooked" / "hooks"
    hooks.mkdir()
    (hooks / "polite.py").write_text(
        "from archmax.hooks import ok, veto\n\ndef hook(ctx):\n    return ok() if ctx.state == 'a' else veto('no')\n"
    )
    script = tmp_path / "model.yaml"
    script.write_text("- say: Hello there.\n")
    store = tmp_path / "store"
    assert main(["--root", str(root), "--store", str(store), "validate", "hooked"]) == 0
    assert "not run" not in capsys.readouterr().out
    code = main(["--root", str(root), "--store", str(store), "--model", f"scripted:{script}", "run", "hooked", "Hi"])
    out = capsys.readouterr()
    assert code == 0 and out.out.strip() == "Hello there."


# --------------------------------------------------------------------------------------- §2.2


def test_a_trigger_description_is_shown_to_callers_never_to_the_sessions_own_model():
    doc = {
        "states": {
            "a": {"triggers": {"manual": {"description": "CALLER-ONLY: a customer asks for help."}}},
        }
    }
    h = harness(doc, [{"say": "ok"}])
    h.agent.workflow.send("s1", "Hi")
    assert h.agent.spec.states["a"].triggers["manual"].description.startswith("CALLER-ONLY")
    request = h.model.requests[0]
    assert "CALLER-ONLY" not in request.model_dump_json()


def test_a_delivery_under_a_trigger_whose_requires_are_unmet_still_resumes_the_park():
    doc = {
        "states": {
            "a": {
                "triggers": {
                    "manual": None,
                    "email_reply": {"requires": ["reply_body", {"name": "count", "type": "integer"}]},
                }
            }
        }
    }
    h = harness(doc, [wait_then(), {"say": "Resumed without the declared inputs."}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.deliver("s1", trigger="email_reply", variables={"count": "not an integer"})
    assert (out.kind, out.reply) == ("completed", "Resumed without the declared inputs.")


def test_requires_of_the_trigger_are_checked_when_a_turn_opens_under_it():
    doc = {"states": {"a": {"triggers": {"manual": None, "email_reply": {"requires": ["reply_body"]}}}}}
    h = harness(doc, [{"say": "never"}])
    out = h.agent.workflow.send("s1", "Hi", trigger="email_reply")
    assert out.kind == "rejected" and "'reply_body'" in out.rejected
    assert h.model.calls == 0


# --------------------------------------------------------------------------------------- §2.1


def test_a_human_state_record_omits_a_blank_title_and_copies_transition_types():
    doc = {
        **HUMAN,
        "states": {**HUMAN["states"], "review": {**HUMAN["states"]["review"], "title": "   "}},
    }
    h = harness(doc, [{"call": {"archmax_advance": {"to": "review", "reason": "r"}}}, {"say": "Please decide."}])
    out = h.agent.workflow.send("s1", "Refund")
    assert out.pending.title is None
    assert [t.type for t in out.pending.transitions] == ["approve", "refine", None]


def test_approvers_are_informational_and_any_caller_may_decide():
    doc = {
        **HUMAN,
        "states": {**HUMAN["states"], "review": {**HUMAN["states"]["review"], "approvers": ["cfo@example.com"]}},
    }
    h = harness(
        doc,
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "r"}}},
            {"say": "Please decide."},
            {"say": "Approved.", "expect_state": "approved"},
        ],
    )
    h.agent.workflow.send("s1", "Refund")
    assert h.agent.workflow.decide("s1", to="approved").state == "approved"
