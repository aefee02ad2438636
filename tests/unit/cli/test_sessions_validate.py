"""``archmax sessions`` and ``archmax validate`` (BEHAVIOUR.md §11)."""

from __future__ import annotations

from pathlib import Path

from ._support import BANK_SCRIPT, INBOX_SCRIPT, REFUNDS, make_workspace


def _park_inbox(cli, flags, sid="c-1"):
    cli(
        *flags,
        "run",
        "support-inbox",
        "About the thing",
        "--trigger",
        "email_received",
        "--variables",
        f'{{"conversation_id": "{sid}"}}',
        "--model",
        INBOX_SCRIPT,
    )


def test_sessions_lists_one_line_per_session_with_its_wait(cli, examples):
    _park_inbox(cli, examples)
    run = cli(*examples, "sessions")
    assert run.code == 0
    assert run.out.splitlines() == [
        "c-1  awaiting_input  open  state=clarify  awaiting=clarify  vars=conversation_id,trigger",
        "  waiting for: the customer's order number",
    ]


def test_sessions_shows_the_due_instant_of_a_timer_park(cli, examples):
    cli(
        *examples,
        "run",
        "bank-check",
        "Payment due",
        "--session",
        "b-1",
        "--trigger",
        "payment_expected",
        "--variables",
        '{"reference": "INV-1"}',
        "--model",
        BANK_SCRIPT,
    )
    line = cli(*examples, "sessions").out.splitlines()[1]
    assert line.startswith("  waiting for: payment INV-1042 has not posted yet  due=")


def test_sessions_of_one_session_add_spec_hash_and_variable_lines(cli, examples):
    _park_inbox(cli, examples)
    lines = cli(*examples, "sessions", "c-1").out.splitlines()
    assert lines[2].startswith("  spec_hash: ") and len(lines[2].split(": ")[1]) == 32
    assert lines[3:] == ['  conversation_id (locked) = "c-1"', '  trigger (locked) = "email_received"']


def test_sessions_show_a_decision_park_with_its_context(cli, tmp_path, script):
    root = make_workspace(tmp_path / "ws", refunds=REFUNDS)
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    model = script(
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "needs a person"}}},
            {"say": "With finance."},
        ]
    )
    cli(*flags, "run", "Refund please", "--session", "r-1", "--trigger", "refund_requested", "--model", model)
    assert cli(*flags, "sessions").out.splitlines() == [
        "r-1  awaiting_decision  open  state=review  awaiting=review  vars=trigger",
        "  instructions: Approve or refuse the refund.",
        "  approvers: finance@example.com",
        "  transitions:",
        "    - refunded: The refund is approved.",
        "    - refused: The refund is refused.",
    ]


def test_sessions_json_prints_session_summaries(cli, examples):
    _park_inbox(cli, examples, "c-1")
    _park_inbox(cli, examples, "c-2")
    listed = cli(*examples, "sessions", "--json").json()
    assert [s["session_id"] for s in listed] == ["c-1", "c-2"]
    assert listed[0]["wait_reason"] == "the customer's order number"
    one = cli(*examples, "--json", "sessions", "c-2").json()
    assert one["session_id"] == "c-2" and one["classification"] == "open"


def test_sessions_workflow_flag_filters_by_workflow(cli, examples):
    _park_inbox(cli, examples)
    assert cli(*examples, "sessions", "--workflow", "bank-check", "--json").json() == []
    assert len(cli(*examples, "sessions", "--workflow", "support-inbox", "--json").json()) == 1


def test_sessions_of_an_unknown_session_exits_1(cli, examples):
    run = cli(*examples, "sessions", "nobody")
    assert run.code == 1
    assert run.err == "error: session 'nobody' does not exist in this store (archmax sessions lists them)\n"
    assert run.out == ""
    # under --json the error is also on stdout, in the shape every other command uses (user-test finding 10)
    as_json = cli(*examples, "sessions", "nobody", "--json")
    assert as_json.code == 1 and as_json.json() == {
        "error": "NotFound",
        "message": "session 'nobody' does not exist in this store (archmax sessions lists them)",
        "session_id": "nobody",
        "exit": 1,
    }


def test_sessions_of_an_invalid_id_exits_2(cli, examples):
    assert cli(*examples, "sessions", "../etc").code == 2


def test_sessions_in_an_empty_store_prints_nothing_on_stdout(cli, examples):
    run = cli(*examples, "sessions")
    assert (run.code, run.out) == (0, "")


def test_validate_a_clean_workflow_exits_0(cli, examples):
    run = cli(*examples, "validate", "bank-check")
    assert (run.code, run.out) == (0, "")
    assert run.err == "ok: workflow 'bank-check' is valid\n"


def test_validate_prints_path_qualified_diagnostics_and_exits_1(cli, tmp_path):
    broken = {"title": "Broken", "states": {"a": {"transitions": [{"to": "nowhere", "description": "x"}]}}}
    root = make_workspace(tmp_path / "ws", broken=broken)
    run = cli("--root", str(root), "validate")
    assert run.code == 1
    assert run.out.splitlines()[0].startswith("states.a.transitions.0.to: ")


def test_validate_json_prints_ok_and_diagnostics(cli, tmp_path):
    broken = {"title": "Broken", "states": {"a": {"transitions": [{"to": "nowhere", "description": "x"}]}}}
    root = make_workspace(tmp_path / "ws", broken=broken)
    doc = cli("--root", str(root), "validate", "--json").json()
    assert doc["ok"] is False
    assert doc["diagnostics"][0]["path"] == "states.a.transitions.0.to"
    assert doc["diagnostics"][0]["severity"] == "error"


def test_validate_accepts_a_path_to_a_workflow_file(cli, tmp_path):
    root = make_workspace(tmp_path / "ws", refunds=REFUNDS)
    run = cli("validate", str(root / "workflows" / "refunds" / "workflow.yaml"), "--json")
    assert run.json() == {"ok": True, "diagnostics": []}


def test_validate_of_unparseable_yaml_exits_1(cli, tmp_path):
    folder = tmp_path / "ws" / "workflows" / "bad"
    folder.mkdir(parents=True)
    (folder / "workflow.yaml").write_text("states: [unclosed\n", encoding="utf-8")
    run = cli("--root", str(tmp_path / "ws"), "validate", "bad")
    assert run.code == 1
    assert run.out.strip() != ""


def test_default_store_is_the_sessions_folder_under_root(cli, tmp_path, script):
    root = make_workspace(tmp_path / "ws", refunds=REFUNDS)
    model = script([{"call": {"archmax_advance": {"to": "review", "reason": "r"}}}, {"say": "x"}])
    cli("--root", str(root), "run", "Refund", "--session", "r-9", "--trigger", "refund_requested", "--model", model)
    assert any(Path(root / "sessions").iterdir())
    assert cli("--root", str(root), "sessions", "--json").json()[0]["session_id"] == "r-9"
