"""Record a support-inbox session against a real adapter with ``--record``, replay it offline (issue 5).

The "real" model is :class:`~archmax.models.openai.OpenAIModel` configured only through the
environment (``ARCHMAX_MODEL``-style ``--model openai:gpt-4o-mini``, ``ARCHMAX_API_BASE_URL``,
``ARCHMAX_API_KEY``) and talking HTTP to a chat-completions server on 127.0.0.1 that the test
starts, so the recording goes through the whole adapter: tool definitions out, provider tool-call
ids and JSON-string arguments back. The session spans two CLI commands (``run`` parks, ``deliver``
completes), each a fresh model, both appending to one cassette. The replay runs the same commands
with ``--model scripted:<cassette>`` on a fresh store with the server answering nothing.

Rule source: issue 5 ("a recorded cassette of the support-inbox example replays to the same
outcome, trail and transcript"), DESIGN.md §5 (the model is configuration), BEHAVIOUR.md §10.4
(the cassette is a script of entries with ``expect_state``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax import create_agent
from archmax.cli import main
from archmax.models.openai import wire_id
from archmax.stores.filesystem import FilesystemStore

from ._chat_server import ChatServer, completion, tool_call

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
SUPPORT_INBOX = EXAMPLES / "workflows" / "support-inbox"

SESSION = "AAQk-rec-1"
FIRST_EMAIL = "My grinder has not arrived and I need it before Monday."
REPLY = "Sorry, it is ORD-1001."
QUESTION = "Hi Dana,\n\nWhich order is this about? Could you send the order number (ORD-...)?"
ANSWER = "Hi Dana,\n\nYour order ORD-1001 left our warehouse this morning and arrives on Thursday."

# What the provider answers, in call order, in the chat-completions wire format: provider call
# ids (never call_<n>), arguments as JSON strings, a question and a wait in one message.
PROVIDER_ANSWERS = [
    completion(
        {
            "content": None,
            "tool_calls": [tool_call("call_Xq81", "archmax_advance", {"to": "clarify", "reason": "No order number."})],
        },
        finish="tool_calls",
        usage={"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930},
    ),
    completion(
        {
            "content": QUESTION,
            "tool_calls": [tool_call("call_Ab02", "archmax_wait", {"reason": "the customer's order number"})],
        },
        finish="tool_calls",
        usage={"prompt_tokens": 1000, "completion_tokens": 40, "total_tokens": 1040},
    ),
    completion(
        {
            "content": None,
            "tool_calls": [
                tool_call("call_Zz93", "archmax_advance", {"to": "answer", "reason": "The reply names ORD-1001."})
            ],
        },
        finish="tool_calls",
        usage={"prompt_tokens": 1100, "completion_tokens": 30, "total_tokens": 1130},
    ),
    completion(
        {"content": ANSWER},
        usage={"prompt_tokens": 1200, "completion_tokens": 50, "total_tokens": 1250},
    ),
]


@pytest.fixture
def server():
    s = ChatServer().start()
    yield s
    s.stop()


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(*args)`` runs ``archmax`` in-process and returns ``(exit code, parsed --json stdout, stderr)``."""
    monkeypatch.delenv("ARCHMAX_MODEL", raising=False)

    def run(*args: str) -> tuple[int, Any, str]:
        capsys.readouterr()
        code = main([*args, "--json"])
        out = capsys.readouterr()
        return code, json.loads(out.out) if out.out.strip() else None, out.err

    return run


def session_commands(cli, store: Path, model: str, record: Path | None = None) -> list[tuple[int, Any, str]]:
    """send (park on the question) then deliver the customer's reply (complete), as two processes would."""
    flags = ["--root", str(EXAMPLES), "--store", str(store), "--model", model]
    if record is not None:
        flags += ["--record", str(record)]
    variables = json.dumps({"conversation_id": SESSION})
    first = cli("run", "support-inbox", FIRST_EMAIL, "--trigger", "email_received", "--variables", variables, *flags)
    second = cli(
        "deliver",
        SESSION,
        "--trigger",
        "email_reply",
        "--message",
        REPLY,
        "--variables",
        json.dumps({"reply_body": REPLY}),
        *flags,
    )
    return [first, second]


def trail(store: Path) -> list[dict[str, Any]]:
    """The session's trail without its timestamps."""
    record = FilesystemStore(store).load(SESSION)
    return [step.model_dump(exclude={"ts"}) for step in record.trail]


def transcript(store: Path) -> list[dict[str, Any]]:
    """The session's transcript without ids: roles, contents, tool names and args, result statuses.

    Call ids differ by design (the provider's ``call_Xq81`` replays as ``call_1``), so a tool message
    keeps the position of the call it answers instead of its id.
    """
    record = FilesystemStore(store).load(SESSION)
    positions: dict[str, int] = {}
    out = []
    for message in record.messages:
        for call in message.tool_calls:
            positions[call.id] = len(positions)
        out.append(
            {
                "role": message.role,
                "content": message.content,
                "calls": [(c.name, c.args) for c in message.tool_calls],
                "answers": positions.get(message.tool_call_id) if message.tool_call_id else None,
                "name": message.name,
                "status": message.status,
                "archmax": message.archmax,
                "handoff": message.handoff,
            }
        )
    return out


def outcome_of(result: tuple[int, Any, str]) -> tuple[int, str, str | None]:
    code, outcome, _err = result
    return code, outcome["kind"], outcome.get("reply")


@pytest.fixture
def recorded(tmp_path, server, cli, monkeypatch):
    """A support-inbox session recorded through OpenAIModel: (store, cassette, command results)."""
    monkeypatch.setenv("ARCHMAX_API_BASE_URL", server.base_url)
    monkeypatch.setenv("ARCHMAX_API_KEY", "sk-test")
    for body in PROVIDER_ANSWERS:
        server.answer(200, body)
    store, cassette = tmp_path / "recorded-store", tmp_path / "cassettes" / "support-inbox.yaml"
    results = session_commands(cli, store, "openai:gpt-4o-mini", record=cassette)
    return store, cassette, results


def test_recording_a_real_adapter_run_keeps_the_session_and_writes_one_entry_per_model_call(recorded, server):
    store, cassette, results = recorded

    assert [outcome_of(r)[:2] for r in results] == [(0, "parked"), (0, "completed")]
    assert results[0][1]["reply"] == QUESTION
    assert results[1][1]["reply"] == ANSWER
    assert len(server.requests) == 4 and server.answers == []
    # The adapter really sent the state's tools and, on resume, the wait's result and the reply.
    first_tools = {t["function"]["name"] for t in server.requests[0]["body"]["tools"]}
    assert {"archmax_advance", "archmax_wait"} <= first_tools
    resumed = json.dumps(server.requests[2]["body"]["messages"])
    assert wire_id("call_Ab02") in resumed and REPLY in resumed

    entries = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    assert entries == [
        {"call": [{"archmax_advance": {"to": "clarify", "reason": "No order number."}}], "expect_state": "intake"},
        {
            "say": QUESTION,
            "call": [{"archmax_wait": {"reason": "the customer's order number"}}],
            "expect_state": "clarify",
        },
        {
            "call": [{"archmax_advance": {"to": "answer", "reason": "The reply names ORD-1001."}}],
            "expect_state": "clarify",
        },
        {"say": ANSWER, "expect_state": "answer"},
    ]


def test_a_priced_model_s_usage_and_estimated_cost_add_up_in_the_checkpoint_and_the_summary(recorded, cli):
    store, _cassette, results = recorded
    tokens_in, tokens_out = 900 + 1000 + 1100 + 1200, 30 + 40 + 30 + 50
    cost = (tokens_in * 0.15 + tokens_out * 0.60) / 1_000_000  # gpt-4o-mini list price, USD per 1M tokens

    usage = FilesystemStore(store).load(SESSION).usage
    code, summary, _err = cli("sessions", SESSION, "--root", str(EXAMPLES), "--store", str(store))

    assert (usage.input_tokens, usage.output_tokens) == (tokens_in, tokens_out)
    assert usage.cost_usd == pytest.approx(cost)
    assert code == 0
    assert summary["usage"]["input_tokens"] == tokens_in and summary["usage"]["output_tokens"] == tokens_out
    assert summary["usage"]["cost_usd"] == pytest.approx(cost)
    # Each operation reports what it spent: the run two calls, the delivery the other two.
    first, second = (r[1]["usage"] for r in results)
    assert (first["input_tokens"], second["input_tokens"]) == (1900, 2300)
    assert first["cost_usd"] + second["cost_usd"] == pytest.approx(cost)


def test_cassette_replays_in_the_cli_to_the_same_outcomes_trail_and_transcript(recorded, server, cli, tmp_path):
    store, cassette, results = recorded
    asked = len(server.requests)

    replayed_store = tmp_path / "replayed-store"
    replayed = session_commands(cli, replayed_store, f"scripted:{cassette}")

    assert [outcome_of(r) for r in replayed] == [outcome_of(r) for r in results]
    assert len(server.requests) == asked  # offline: the provider was not called again
    assert trail(replayed_store) == trail(store)
    assert transcript(replayed_store) == transcript(store)
    assert [s["to"] for s in trail(store)] == ["intake", "clarify", "clarify", "answer"]


def test_cassette_replays_in_process_through_archmax_model(recorded, tmp_path, monkeypatch):
    store, cassette, _results = recorded
    monkeypatch.setenv("ARCHMAX_MODEL", f"scripted:{cassette}")
    replayed_store = tmp_path / "in-process-store"
    agent = create_agent(SUPPORT_INBOX, FilesystemStore(replayed_store))  # model=None reads ARCHMAX_MODEL

    parked = agent.workflow.send(SESSION, FIRST_EMAIL, trigger="email_received", variables={"conversation_id": SESSION})
    done = agent.workflow.deliver(SESSION, trigger="email_reply", message=REPLY, variables={"reply_body": REPLY})

    assert (parked.kind, parked.reply, done.kind, done.reply) == ("parked", QUESTION, "completed", ANSWER)
    assert trail(replayed_store) == trail(store)
    assert transcript(replayed_store) == transcript(store)


def test_a_replay_that_reaches_a_state_the_cassette_did_not_record_fails_naming_the_entry(recorded, cli, tmp_path):
    _store, cassette, _results = recorded
    flags = ["--root", str(EXAMPLES), "--store", str(tmp_path / "stray"), "--model", f"scripted:{cassette}"]

    code, _out, _err = cli(
        "run",
        "support-inbox",
        FIRST_EMAIL,
        "--trigger",
        "email_received",
        "--variables",
        json.dumps({"conversation_id": SESSION}),
        *flags,
    )
    assert code == 0
    # The workflow changed since the recording, as far as the cassette can tell: its last answer
    # was recorded in another state. The replay stops there instead of answering out of place.
    cassette.write_text(cassette.read_text(encoding="utf-8").replace("expect_state: answer", "expect_state: intake"))
    code, _out, err = cli(
        "deliver",
        SESSION,
        "--trigger",
        "email_reply",
        "--message",
        REPLY,
        "--variables",
        json.dumps({"reply_body": REPLY}),
        *flags,
    )
    assert code == 1
    assert "model response 4 expected state 'intake' but the session is in 'answer'" in err


def test_recording_a_replay_writes_the_same_cassette_again(recorded, cli, tmp_path):
    _store, cassette, _results = recorded
    again = tmp_path / "again.yaml"

    session_commands(cli, tmp_path / "again-store", f"scripted:{cassette}", record=again)

    assert yaml.safe_load(again.read_text(encoding="utf-8")) == yaml.safe_load(cassette.read_text(encoding="utf-8"))


def test_the_follow_up_command_printed_at_a_park_keeps_recording_into_the_same_cassette(tmp_path, capsys):
    script = tmp_path / "script.yaml"
    script.write_text(
        yaml.safe_dump([{"say": "Which order?", "call": {"archmax_wait": {"reason": "the order number"}}}]),
        encoding="utf-8",
    )
    cassette = tmp_path / "c.yaml"

    code = main(
        [
            "run", "support-inbox", FIRST_EMAIL, "--trigger", "email_received",
            "--variables", json.dumps({"conversation_id": SESSION}),
            "--root", str(EXAMPLES), "--store", str(tmp_path / "s"),
            "--model", f"scripted:{script}", "--record", str(cassette),
        ]
    )  # fmt: skip

    err = capsys.readouterr().err
    assert code == 0
    next_line = next(line for line in err.splitlines() if line.startswith("next:"))
    assert "archmax deliver" in next_line and f"--record {cassette}" in next_line


def test_an_empty_record_path_a_non_cassette_file_or_a_command_without_model_calls_is_refused(tmp_path, cli):
    workflow = SUPPORT_INBOX / "workflow.yaml"
    before = workflow.read_bytes()
    script = tmp_path / "script.yaml"
    script.write_text("- say: unused\n", encoding="utf-8")
    flags = ["--root", str(EXAMPLES), "--store", str(tmp_path / "s"), "--model", f"scripted:{script}"]
    run = ["run", "support-inbox", FIRST_EMAIL, "--trigger", "email_received"]

    empty = cli(*run, *flags, "--record", " ")
    not_a_cassette = cli(*run, *flags, "--record", str(workflow))
    not_for_sessions = cli("sessions", *flags, "--record", str(tmp_path / "c.yaml"))

    assert empty[0] == 2 and "--record must name a cassette file" in empty[2]
    assert not_a_cassette[0] == 1 and "not a cassette" in not_a_cassette[2]
    assert workflow.read_bytes() == before  # a workflow passed by mistake is left alone
    assert not_for_sessions[0] == 2 and "--record" in not_for_sessions[2]
