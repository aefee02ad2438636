"""``archmax sessions``: ``--log``, ``--open``, ``--status`` (issue 15 item 2)."""

from __future__ import annotations

import re
from pathlib import Path

from ._support import BANK_SCRIPT, EMAILS, INBOX_SCRIPT, REFUNDS, make_workspace

INSTANT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"


def _inbox_conversation(cli, examples, *, reply: bool = True) -> str:
    first = cli(
        *examples, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox", "--model", INBOX_SCRIPT
    )
    assert first.code == 0, first.err
    sid = first.err.split("waiting: session '", 1)[1].split("'", 1)[0]
    if reply:
        second = cli(
            *examples, "email", str(EMAILS / "02-reply.eml"), "--workflow", "support-inbox", "--model", INBOX_SCRIPT
        )
        assert second.code == 0, second.err
    return sid


def _kinds(out: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"^{INSTANT}  ([A-Z_-]+) ", out, re.M)]


def test_log_tells_the_story_of_an_email_conversation_in_order(cli, examples):
    sid = _inbox_conversation(cli, examples)
    run = cli(*examples, "sessions", sid, "--log")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0] == f"session '{sid}'  workflow support-inbox  completed (finished)"
    assert re.fullmatch(rf"completed at {INSTANT} in 'answer'", lines[1])
    assert lines[2] == "path: intake → clarify → answer"
    assert _kinds(run.out) == ["TURN", "ADVANCE", "PARK", "DELIVERY", "ADVANCE", "COMPLETED"]
    assert "parked for input in 'clarify': the customer's order number" in run.out
    assert "delivery 'email_reply' resumed 'clarify'" in run.out
    # the delivery's note is a runtime event, the customer's words a person's line, after the delivery
    delivery = run.out.index("DELIVERY")
    note = run.out.index("runtime event (event): [event] 'email_reply' arrived")
    person = run.out.index("person: It's ORD-1001.")
    assert delivery < note < person
    assert "archmax_note" not in run.out  # derived views skip the note pair (seed, BEHAVIOUR.md §7)
    assert "agent: Hi Dana," in run.out
    assert re.search(r"^  conversation_id \(locked\) = ", run.out, re.M)
    assert "usage: " in run.out and "epoch" not in run.out


def test_log_of_a_parked_session_says_what_it_waits_for(cli, examples):
    sid = _inbox_conversation(cli, examples, reply=False)
    lines = cli(*examples, "sessions", sid, "--log").out.splitlines()
    assert lines[0].endswith("awaiting_input (open)")
    assert re.fullmatch(rf"waiting since {INSTANT} for input in 'clarify': the customer's order number", lines[1])


def test_log_json_is_the_story_model_without_note_calls(cli, examples):
    sid = _inbox_conversation(cli, examples)
    story = cli(*examples, "sessions", sid, "--log", "--json").json()
    assert story["session_id"] == sid and story["exit"]["status"] == "completed"
    assert [e["kind"] for e in story["timeline"]] == ["turn", "advance", "park", "delivery", "advance", "completed"]
    roles = [e["role"] for e in story["conversation"]]
    assert roles.count("runtime") == 1 and roles.count("person") == 2
    assert all(e["tool"] != "archmax_note" for e in story["conversation"] if e["role"] == "tool")
    assert all(re.fullmatch(INSTANT, e["at"]) for e in story["timeline"] + story["conversation"])
    seqs = [e["seq"] for e in story["timeline"] + story["conversation"]]
    assert sorted(seqs) == list(range(1, len(seqs) + 1))


def test_log_shows_a_decision_with_its_comment_and_the_parks_at_the_human_state(cli, tmp_path, script):
    root = make_workspace(tmp_path / "ws", refunds=REFUNDS)
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    model = script(
        [
            {"call": {"archmax_advance": {"to": "review", "reason": "needs a person"}}},
            {"say": "With finance."},
            {"say": "Refund sent."},
        ]
    )
    cli(*flags, "run", "Refund please", "--session", "r-1", "--trigger", "refund_requested", "--model", model)
    parked = cli(*flags, "sessions", "r-1", "--log")
    assert re.search(
        rf"waiting since {INSTANT} for a person's decision at 'review' \(choices: refunded, refused\)", parked.out
    )
    assert _kinds(parked.out) == ["TURN", "ADVANCE", "PARK"]
    cli(*flags, "decide", "r-1", "--to", "refunded", "--comment", "receipt checked", "--model", model)
    done = cli(*flags, "sessions", "r-1", "--log")
    assert _kinds(done.out) == ["TURN", "ADVANCE", "PARK", "DECISION", "COMPLETED"]
    assert "a person decided → 'refunded': receipt checked" in done.out
    assert "runtime event (decision): [decision] A person chose approve → 'refunded'" in done.out
    assert "agent (park message): With finance." in done.out


def test_log_shows_a_timer_park_with_its_resume_at(cli, examples):
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
    story = cli(*examples, "sessions", "b-1", "--log", "--json").json()
    park = [e for e in story["timeline"] if e["kind"] == "park"][-1]
    assert park["channel"] == "input" and park["resume_at"] == story["wait"]["resume_at"]
    assert re.fullmatch(INSTANT, park["resume_at"]) and park["at"] == story["wait"]["since"]


def test_open_writes_the_page_and_says_where(cli, examples, tmp_path):
    sid = _inbox_conversation(cli, examples, reply=False)
    target = tmp_path / "pages" / "one.html"
    run = cli(*examples, "sessions", sid, "--open", str(target))
    assert run.code == 0 and run.out == ""
    assert run.err.strip() == f"page: {target.resolve().as_uri()}"
    html = target.read_text(encoding="utf-8")
    assert 'data-state="clarify" aria-current="step"' in html
    assert "<script" not in html.lower()


def test_open_without_a_file_writes_under_the_temporary_folder(cli, examples, monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    (tmp_path / "tmp").mkdir()
    cli(
        *examples,
        "run",
        "bank-check",
        "Payment due",
        "--session",
        "b/1",
        "--trigger",
        "payment_expected",
        "--variables",
        '{"reference": "INV-1"}',
        "--model",
        BANK_SCRIPT,
    )
    run = cli(*examples, "sessions", "b/1", "--open")
    from archmax.session.ids import portable_folder_name

    written = tmp_path / "tmp" / "archmax-pages" / f"{portable_folder_name('b/1')}.html"  # never a path from the id
    assert "/" not in portable_folder_name("b/1")
    assert run.err.strip() == f"page: {written.resolve().as_uri()}" and written.is_file()


def test_status_and_workflow_filter_the_list(cli, examples):
    sid = _inbox_conversation(cli, examples, reply=False)
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
    both = [s["session_id"] for s in cli(*examples, "sessions", "--status", "awaiting_input", "--json").json()]
    assert sorted(both) == sorted([sid, "b-1"])
    only = cli(*examples, "sessions", "--status", "awaiting_input", "--workflow", "bank-check").out
    assert only.splitlines()[0].startswith("b-1  awaiting_input")
    assert sid not in only
    none = cli(*examples, "sessions", "--status", "completed")
    assert none.code == 0 and none.out == "" and none.err.strip() == "no sessions"


def test_view_flags_used_where_they_mean_nothing_are_usage_errors(cli, examples):
    assert cli(*examples, "sessions", "--log").code == 2
    wrong = cli(*examples, "sessions", "x", "--status", "completed")
    assert wrong.code == 2 and "--status filters the list" in wrong.err
    bad = cli(*examples, "sessions", "--status", "parked")
    assert bad.code == 2 and "invalid choice" in bad.err


def test_untrusted_words_are_escaped_on_the_page(cli, tmp_path, script):
    root = make_workspace(tmp_path / "ws", refunds=REFUNDS)
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    model = script([{"say": "<img src=x onerror=alert(1)>"}])
    cli(
        *flags,
        "run",
        "<script>alert(1)</script>",
        "--session",
        "x-1",
        "--trigger",
        "refund_requested",
        "--model",
        model,
    )
    page = tmp_path / "x.html"
    cli(*flags, "sessions", "x-1", "--open", str(page))
    html = page.read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "default-src 'none'" in html
    assert Path(page).stat().st_size > 0


def test_log_shows_hook_verdicts_and_the_after_note_as_a_runtime_event(cli, tmp_path, script):
    root = make_workspace(
        tmp_path / "ws",
        polite={
            "states": {
                "a": {"triggers": {"manual": None}, "after": {"script": "hooks/polite.py", "max_iterations": 1}}
            },
        },
    )
    (root / "workflows" / "polite" / "hooks").mkdir()
    (root / "workflows" / "polite" / "hooks" / "polite.py").write_text(
        "def hook(ctx):\n"
        "    said = [m for m in ctx.messages if m.role == 'assistant' and m.content]\n"
        "    if 'please' in said[-1].content:\n"
        "        return {'verdict': 'ok'}\n"
        "    return {'verdict': 'correct', 'reason': 'say please'}\n",
        encoding="utf-8",
    )
    flags = ["--root", str(root), "--store", str(tmp_path / "store")]
    model = script([{"say": "Do it."}, {"say": "Do it, please."}])
    run = cli(*flags, "run", "Ask nicely", "--session", "h-1", "--model", model)
    assert run.code == 0, run.err
    log = cli(*flags, "sessions", "h-1", "--log").out
    assert _kinds(log) == ["TURN", "HOOK", "HOOK", "COMPLETED"]
    assert "after hook of 'a': correct: say please" in log and "after hook of 'a': ok" in log
    assert "runtime event (after): [after] The 'a' completion check did not pass: say please." in log
