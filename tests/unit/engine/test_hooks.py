"""BEHAVIOUR.md §2.4 (hooks), §5.1 refusals (6)-(7), §5.7, §5.8 step (2), §7 ``[after]``, §8 resets.

Hooks here are real: script files in a workflow's ``hooks/`` folder, rubric hooks graded by a scripted
model, and custom kinds whose executors (plain functions) record what they were given.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax import MemoryStore, MissingHookExecutorError, SessionStatus, create_agent
from archmax.hooks import correct, ok, veto
from archmax.models.scripted import ScriptedModel
from archmax.spec import load_workflow

from ._support import harness, notes_of, results_of, wf

EXT = {"extensions": {"hooks": ["check"]}}


class Gates:
    """Custom-kind executor: ``{check: <name>}`` answers from that name's queue (``ok`` when empty)."""

    def __init__(self, **queues: list[Any]) -> None:
        self.queues = {k: list(v) for k, v in queues.items()}
        self.seen: list[tuple[str, Any]] = []

    def __call__(self, ctx, config):
        self.seen.append((config, ctx))
        queue = self.queues.get(config, [])
        answer = queue.pop(0) if queue else ok()
        if isinstance(answer, Exception):
            raise answer
        return answer

    def ran(self, name: str | None = None) -> list[str]:
        return [c for c, _ in self.seen if name is None or c == name]


def flow(**extra_states: Any) -> dict:
    """start --(after: leave)--> done (before: enter, after: finish); overrides merge per state."""
    doc = {
        **EXT,
        "states": {
            "start": {
                "triggers": {"manual": None},
                "after": {"check": "leave"},
                "transitions": [{"to": "done", "description": "The work is done."}],
            },
            "done": {"before": {"check": "enter"}, "after": {"check": "finish"}},
        },
    }
    for slug, body in extra_states.items():
        doc["states"][slug] = {**doc["states"].get(slug, {}), **body}
    return doc


ADVANCE = {"call": {"archmax_advance": {"to": "done", "reason": "finished"}}}


def hooked(doc: dict, gates: Gates, entries: list, **kw):
    return harness(doc, entries, hooks={"check": gates}, **kw)


def hook_steps(rec) -> list[tuple]:
    return [(s.state, s.phase, s.index, s.verdict) for s in rec.trail if s.kind == "hook"]


# ---------------------------------------------------------------- kinds and assembly


def test_a_declared_custom_kind_without_an_executor_is_refused_at_create_agent():
    store = MemoryStore()
    spec = wf(flow())
    assert spec.hook_kinds == ["check"]
    with pytest.raises(MissingHookExecutorError, match="'check'"):
        create_agent(spec, store)
    assert store.list() == []


def test_hooks_run_at_an_advance_and_at_completion_and_each_result_is_a_trail_step_and_an_event():
    gates = Gates()
    h = hooked(flow(), gates, [ADVANCE, {"say": "Done."}])
    out = h.agent.workflow.send("s", "go")
    assert out.kind == "completed"
    # leaving start's after, entering done's before (at the advance, not again at the first call), done's after
    assert gates.ran() == ["leave", "enter", "finish"]
    assert hook_steps(h.load("s")) == [
        ("start", "after", 0, "ok"),
        ("done", "before", 0, "ok"),
        ("done", "after", 0, "ok"),
    ]
    assert [(e["state"], e["phase"], e["verdict"]) for e in h.events_of("hook")] == [
        ("start", "after", "ok"),
        ("done", "before", "ok"),
        ("done", "after", "ok"),
    ]


def test_the_context_carries_the_session_the_move_and_read_only_copies():
    gates = Gates()
    h = hooked(flow(), gates, [ADVANCE, {"say": "Done."}])
    h.agent.workflow.send("s", "go", variables={"order": {"id": "ORD-1"}})
    ctx = dict(gates.seen)["leave"]
    assert (ctx.session_id, ctx.workflow, ctx.state, ctx.phase, ctx.trigger) == (
        "s",
        "demo",
        "start",
        "after",
        "manual",
    )
    assert (ctx.from_state, ctx.to_state, ctx.reason) == ("start", "done", "finished")
    assert ctx.variables["order"] == {"id": "ORD-1"} and ctx.variables["trigger"] == "manual"
    assert "archmax_advance" in ctx.tools and "archmax_wait" in ctx.tools
    with pytest.raises(TypeError):
        ctx.variables["order"] = 1  # type: ignore[index]
    ctx.variables["order"]["id"] = "changed"  # a copy: the session keeps its value
    assert h.load("s").variables["order"].value == {"id": "ORD-1"}
    assert ctx.messages[0].content == "go"
    finish = dict(gates.seen)["finish"]
    assert finish.from_state is None and finish.phase == "after"


def test_a_hook_reads_a_delivered_trigger_and_notes_are_marked_in_its_messages():
    gates = Gates()
    doc = flow(start={"after": {"check": "leave"}})
    h = hooked(
        doc, gates, [{"say": "Which order?", "call": {"archmax_wait": {"reason": "order"}}}, ADVANCE, {"say": "ok"}]
    )
    h.agent.workflow.send("s", "go")
    h.agent.workflow.deliver("s", trigger="email_reply", variables={"order": "ORD-1"})
    ctx = dict(gates.seen)["leave"]
    assert ctx.trigger == "email_reply"
    assert [m.archmax for m in ctx.messages if m.archmax] == [{"note": "event"}, {"note": "event"}]


def test_a_script_hook_is_imported_from_the_workflow_hooks_folder(tmp_path):
    folder = _workflow_on_disk(
        tmp_path,
        {"states": {"a": {"triggers": {"manual": None}, "after": {"script": "hooks/polite.py", "max_iterations": 1}}}},
        {
            "polite.py": """
                from archmax.hooks import correct, ok

                def hook(ctx):
                    last = [m.content for m in ctx.messages if m.role == "assistant"][-1]
                    return ok() if "please" in last else correct("say please")
            """
        },
    )
    h = harness(load_workflow(folder), [{"say": "Give me the order."}, {"say": "Give me the order, please."}])
    out = h.agent.workflow.send("s", "hi")
    assert out.kind == "completed" and out.reply == "Give me the order, please."
    assert [n.content for n in notes_of(out.messages, "after")] == [
        "[after] The 'a' completion check did not pass: say please. Revise your work and give a corrected final response."
    ]


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("def hook(ctx):\n    raise RuntimeError('db down')\n", "RuntimeError: db down"),
        ("def hook(ctx):\n    return 'fine'\n", "which is not a verdict"),
        ("def hook(ctx):\n    return {'verdict': 'veto'}\n", "without a reason"),
        ("x = 1\n", "defines no hook(ctx) function"),
        ("def hook(ctx) oops\n", "SyntaxError"),
        (None, "'hooks/gate.py' is missing"),
    ],
    ids=["raises", "not-a-verdict", "veto-without-reason", "no-hook-function", "syntax-error", "missing-file"],
)
def test_a_failed_hook_rejects_the_turn_with_no_exit(tmp_path, source, why):
    scripts = {"gate.py": source} if source is not None else {}
    folder = _workflow_on_disk(
        tmp_path, {"states": {"a": {"triggers": {"manual": None}, "after": {"script": "hooks/gate.py"}}}}, scripts
    )
    h = harness(load_workflow(folder), [{"say": "Here you go."}])
    out = h.agent.workflow.send("s", "hi")
    assert out.kind == "rejected" and out.exit is None
    assert why in out.rejected and "after hook 0 (script) of state 'a' failed" in out.rejected
    assert h.model.calls == 1  # fail-closed: no retry call
    assert hook_steps(h.load("s")) == [("a", "after", 0, "veto")]


def test_a_rubric_hook_grades_instructions_and_evidence_with_one_call_of_its_own_model(tmp_path):
    (tmp_path / "grader.yaml").write_text(
        yaml.safe_dump(
            [{"say": '{"verdict": "correct", "reason": "mention the order number"}'}, {"say": '{"verdict": "ok"}'}]
        )
    )
    doc = {
        "states": {
            "a": {
                "triggers": {"manual": None},
                "after": {"rubric": {"instructions": "Does the answer name the order?", "max_iterations": 1,
                                     "model": f"scripted:{tmp_path / 'grader.yaml'}"}},
            }
        }
    }  # fmt: skip
    h = harness(doc, [{"say": "It ships soon."}, {"say": "ORD-1 ships soon."}])
    out = h.agent.workflow.send("s", "Where is my order?")
    assert out.kind == "completed" and out.reply == "ORD-1 ships soon."
    assert h.model.calls == 2  # the agent's model: the answer and the corrected answer; the grader is its own
    assert [s.verdict for s in h.load("s").trail if s.kind == "hook"] == ["correct", "ok"]


def test_a_rubric_sees_notes_as_runtime_lines_and_a_non_json_grade_fails_closed():
    grader = RecordingGrader(["not json"])
    doc = {"states": {"a": {"triggers": {"manual": None}, "after": {"rubric": {"instructions": "Judge it."}}}}}
    h = harness(doc, [{"say": "Which?", "call": {"archmax_wait": {"reason": "order"}}}, {"say": "Done."}])
    h.agent.runtime.hook_model_for = lambda _override: grader
    h.agent.workflow.send("s", "hi")
    out = h.agent.workflow.deliver("s", trigger="email_reply", variables={"order": "ORD-1"})
    assert out.kind == "rejected" and "answered no JSON verdict" in out.rejected
    prompt = grader.requests[0].messages[0].content
    assert "Judge it." in prompt
    assert "[runtime:event] [event] 'email_reply' arrived while the session waited in 'a'" in prompt


class RecordingGrader:
    def __init__(self, answers: list[str]) -> None:
        self.inner = ScriptedModel([{"say": a} for a in answers])
        self.requests: list = []

    def complete(self, request):
        self.requests.append(request)
        return self.inner.complete(request)


# ---------------------------------------------------------------- verdicts and budgets


def test_a_deliberate_after_veto_refuses_the_advance_and_the_agent_stays():
    gates = Gates(leave=[veto("the refund is not approved")])
    h = hooked(flow(), gates, [ADVANCE, {"say": "I'll wait for approval."}])
    out = h.agent.workflow.send("s", "go")
    assert out.kind == "completed" and out.state == "start"
    [result] = results_of(out.messages, "archmax_advance")
    assert (result.status, result.content) == ("blocked", "archmax_advance rejected: the refund is not approved")
    assert gates.ran("enter") == []  # the target's before hooks never ran


def test_a_before_veto_of_the_target_refuses_the_advance():
    gates = Gates(enter=[veto("done is closed")])
    h = hooked(flow(), gates, [ADVANCE, {"say": "Staying."}])
    out = h.agent.workflow.send("s", "go")
    assert out.state == "start"
    assert results_of(out.messages, "archmax_advance")[0].content == "archmax_advance rejected: done is closed"


def test_a_before_hook_may_not_correct_it_counts_as_a_veto():
    gates = Gates(enter=[correct("fix it")])
    h = hooked(flow(), gates, [ADVANCE, {"say": "Staying."}])
    out = h.agent.workflow.send("s", "go")
    assert out.kind == "completed" and out.state == "start"
    assert hook_steps(h.load("s"))[-2:] == [("start", "after", 0, "ok"), ("done", "before", 0, "veto")]


def test_with_the_default_budget_of_zero_a_correct_is_terminal_and_routes_by_on_error():
    gates = Gates(leave=[correct("add the total")])
    doc = flow(start={"on_error": "fallback"}, fallback={"instructions": "Apologise."})
    h = hooked(doc, gates, [ADVANCE, {"say": "Sorry."}])
    out = h.agent.workflow.send("s", "go")
    assert out.kind == "completed" and out.state == "fallback"
    [note] = notes_of(out.messages, "error")
    assert "exhausted its correction budget (max_iterations: 0): add the total" in note.content


def test_an_in_budget_correct_refuses_the_advance_and_the_next_one_past_the_budget_is_terminal():
    verdicts = iter(
        ['{"verdict": "correct", "reason": "add the total"}', '{"verdict": "correct", "reason": "still no total"}']
    )
    h = hooked(_budgeted_flow(1), Gates(), [ADVANCE, ADVANCE])
    h.agent.runtime.hook_model_for = lambda _o: _FnModel(lambda: next(verdicts))
    out = h.agent.workflow.send("s", "go")
    assert out.kind == "rejected" and "exhausted its correction budget (max_iterations: 1)" in out.rejected
    first = results_of(out.messages, "archmax_advance")[0]
    assert (first.status, first.content) == ("blocked", "archmax_advance rejected: add the total")
    assert h.load("s").hook_iterations == {"start/after/0": 1}


def _budgeted_flow(budget: int) -> dict:
    """``start``'s after hook is a rubric-free budgeted custom position: a rubric with a custom grader."""
    doc = flow()
    doc["states"]["start"]["after"] = {"rubric": {"instructions": "x", "max_iterations": budget}}
    return doc


def test_correction_counts_and_before_marks_reset_at_the_next_turn_and_carry_over_a_decision(tmp_path):
    verdicts = iter(['{"verdict": "correct", "reason": "again"}'] * 2 + ['{"verdict": "ok"}'] * 9)
    grader = _FnModel(lambda: next(verdicts))
    doc = _budgeted_flow(1)
    gates = Gates()
    h = hooked(doc, gates, [ADVANCE, {"say": "one"}, ADVANCE, ADVANCE, {"say": "two"}])
    h.agent.runtime.hook_model_for = lambda _o: grader
    h.agent.workflow.send("s", "go")  # correct (1/1) refuses; the agent finishes in start
    rec = h.load("s")
    assert rec.hook_iterations == {"start/after/0": 1} and rec.before_done == []
    h.agent.workflow.send("s", "again")  # a new turn: the count is 0 again, so one more correct is in budget
    rec = h.load("s")
    assert rec.status == SessionStatus.COMPLETED and rec.position == "done"
    assert rec.before_done == ["done"]  # marked at the advance
    assert [s.verdict for s in rec.trail if s.kind == "hook" and s.state == "start"] == ["correct", "correct", "ok"]


class _FnModel:
    def __init__(self, fn):
        self.fn = fn

    def complete(self, request):
        from archmax.models.base import ModelResponse

        return ModelResponse(text=self.fn())


def test_an_after_correction_writes_an_after_note_and_calls_the_model_again_until_the_budget_is_spent():
    verdicts = iter(['{"verdict": "correct", "reason": "be shorter"}'] * 3)
    doc = {
        "states": {"a": {"triggers": {"manual": None}, "after": {"rubric": {"instructions": "x", "max_iterations": 2}}}}
    }
    h = harness(doc, [{"say": "long answer"}, {"say": "shorter"}, {"say": "short"}])
    h.agent.runtime.hook_model_for = lambda _o: _FnModel(lambda: next(verdicts))
    out = h.agent.workflow.send("s", "hi")
    assert h.model.calls == 3  # the answer, then one call per in-budget correction
    assert len(notes_of(out.messages, "after")) == 2
    assert out.kind == "rejected" and "exhausted its correction budget (max_iterations: 2): be shorter" in out.rejected


def test_a_deliberate_veto_at_completion_also_sends_the_model_back_bounded_by_max_turns():
    gates = Gates(finish=[veto("no"), veto("no"), veto("no")])
    doc = {
        **EXT,
        "states": {"a": {"triggers": {"manual": None}, "after": {"check": "finish"}, "budget": {"maxTurns": 2}}},
    }
    h = hooked(doc, gates, [{"say": "one"}, {"say": "two"}])
    out = h.agent.workflow.send("s", "hi")
    assert h.model.calls == 2 and len(notes_of(out.messages, "after")) == 2
    assert out.kind == "rejected" and "exhausted its turn budget (maxTurns: 2)" in out.rejected


def test_a_non_terminal_states_after_hooks_do_not_run_at_completion():
    gates = Gates(leave=[veto("never")])
    h = hooked(flow(), gates, [{"say": "Nothing to do."}])
    assert h.agent.workflow.send("s", "hi").kind == "completed"
    assert gates.ran() == []


# ---------------------------------------------------------------- when before hooks run


def test_a_before_veto_at_a_turn_opening_writes_the_rejection_text_and_fails_the_turn():
    gates = Gates(open=[veto("outside office hours")])
    doc = {**EXT, "states": {"a": {"triggers": {"manual": None}, "before": {"check": "open"}}}}
    h = hooked(doc, gates, [])
    out = h.agent.workflow.send("s", "hi")
    text = "Request rejected before the 'a' state could run: outside office hours"
    assert out.kind == "rejected" and out.rejected == text and out.reply == text
    assert h.model.calls == 0


def test_a_before_hook_runs_once_per_visit_not_on_a_delivery_nor_on_a_reply():
    gates = Gates()
    doc = {
        **EXT,
        "states": {
            "a": {
                "triggers": {"manual": None},
                "before": {"check": "a"},
                "transitions": [{"to": "review", "description": "ask a person"}],
            },
            "review": {"type": "human", "before": {"check": "review"}, "transitions": [{"to": "a", "description": "back"}]},
        },
    }  # fmt: skip
    wait = {"say": "Which?", "call": {"archmax_wait": {"reason": "order"}}}
    to_review = {"call": {"archmax_advance": {"to": "review", "reason": "needs a person"}}}
    h = hooked(
        doc,
        gates,
        [wait, {"say": "thanks"}, wait, to_review, {"say": "handoff"}, {"say": "reply"}, {"say": "back in a"}],
    )
    h.agent.workflow.send("s", "hi")
    assert gates.ran() == ["a"]  # the turn opening's first call
    h.agent.workflow.deliver("s", trigger="email_reply")
    assert gates.ran() == ["a"]  # not on a delivery
    h.agent.workflow.send("s", "next turn")  # a new turn: marks reset, so the visit runs it again
    assert gates.ran() == ["a", "a"]
    h.agent.workflow.deliver("s", trigger="email_reply")  # → advance into review: its before runs at the advance
    assert gates.ran() == ["a", "a", "review"]
    h.agent.workflow.reply("s", "any news?")  # a reply-only call runs nothing
    assert gates.ran() == ["a", "a", "review"]
    h.agent.workflow.decide("s", to="a")  # a decision starts a new visit of 'a': its before runs at the first call
    assert gates.ran() == ["a", "a", "review", "a"]


def test_archmax_reset_clears_the_marks_so_the_entry_state_runs_its_before_hooks_again():
    gates = Gates()
    doc = flow(start={"before": {"check": "start"}})
    reset = {"call": {"archmax_reset": {"reason": "new question"}}}
    h = hooked(doc, gates, [ADVANCE, reset, {"say": "ok"}])
    h.agent.workflow.send("s", "go")
    assert gates.ran() == ["start", "leave", "enter", "start"]


def test_a_raise_runs_no_hook():
    gates = Gates()
    doc = {**EXT, "states": {"a": {"triggers": {"manual": None}, "after": {"check": "finish"}}}}
    h = hooked(doc, gates, [{"call": {"archmax_raise": {"code": "nope", "reason": "cannot"}}}])
    out = h.agent.workflow.send("s", "hi")
    assert out.kind == "failed" and gates.ran() == []


# ---------------------------------------------------------------- runtime authority


def test_hooks_call_tools_on_runtime_authority_state_lists_do_not_bind_root_forbid_lists_do():
    seen = []

    def lookup(order_id: str) -> str:
        seen.append(order_id)
        return "shipped"

    def gate(ctx, config):
        if config == "lookup":
            return ok() if ctx.call_tool("lookup", order_id="ORD-1") == "shipped" else veto("no")
        ctx.call_tool("secret")  # removed by the root forbid list: raises, so the hook fails closed
        return ok()

    doc = {
        **EXT,
        "tools": {"forbid_always": ["secret"]},
        "states": {
            "a": {"triggers": {"manual": None}, "tools": {"forbid": ["lookup"]}, "after": [{"check": "lookup"}, {"check": "secret"}]}
        },
    }  # fmt: skip
    h = harness(doc, [{"say": "done"}], hooks={"check": gate}, tools={"lookup": lookup, "secret": lambda: "x"})
    out = h.agent.workflow.send("s", "hi")
    assert seen == ["ORD-1"]
    assert out.kind == "rejected" and "cannot call tool 'secret'" in out.rejected


# ---------------------------------------------------------------- helpers


def _workflow_on_disk(tmp_path: Path, doc: dict, scripts: dict[str, str]) -> Path:
    folder = tmp_path / "workflows" / "demo"
    (folder / "hooks").mkdir(parents=True)
    (folder / "workflow.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    for name, source in scripts.items():
        (folder / "hooks" / name).write_text(textwrap.dedent(source), encoding="utf-8")
    return folder
