"""A refused ``archmax`` command changes nothing in the workspace: no store folder, no ``.inbox/``, no lock file.

Each case runs the CLI as a user would, in a workspace whose store is the default ``<root>/sessions``,
and compares the whole workspace (every path, every file's bytes) before and after. The exit code and
the ``error:`` line are the documented ones (BEHAVIOUR.md §11: 2 for a usage error, 1 for any other
``ArchmaxError``). Rule source: BEHAVIOUR.md §3.3 (validate every input before writing anything), §11.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ._support import CHORES, EXAMPLES, INBOX_SCRIPT, REFUNDS, make_workspace
from .test_session_commands import REFUND_SCRIPT

OFF = {**CHORES, "title": "Chores, switched off", "disabled": True}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with ``refunds`` (a human state), ``chores``, ``off`` (disabled) and ``support-inbox``."""
    root = make_workspace(tmp_path / "ws", refunds=REFUNDS, chores=CHORES, off=OFF)
    shutil.copytree(EXAMPLES / "workflows" / "support-inbox", root / "workflows" / "support-inbox")
    return root


def listing(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (``None`` for a folder)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in root.rglob("*")}


def refused(cli, root: Path, argv: list[str], code: int, error: str) -> None:
    """Run ``archmax --root <root> <argv>`` and check it is refused as documented and writes nothing."""
    before = listing(root)
    run = cli("--root", str(root), *argv)
    assert (run.code, run.out) == (code, ""), run.err
    assert run.err.startswith(f"error: {error}"), run.err
    assert "Traceback" not in run.err
    assert listing(root) == before


NEW_WORKSPACE = [
    (["run", "chores", "hi", "--trigger", "nosuch"], 1, "trigger 'nosuch' is not declared by the workflow"),
    (["run", "chores", "hi", "--session", ""], 2, "invalid session id ''"),
    (["run", "chores", "hi", "--session", "_specs"], 2, "invalid session id '_specs'"),
    (["run", "chores", "hi", "--session", "a/../b"], 2, "invalid session id 'a/../b'"),
    (["run", "no-such-flow", "hi"], 2, "no workflow 'no-such-flow'"),
    (["run", "chores", "hi", "--variables", "{bad"], 2, "--variables is not valid JSON"),
    (["run", "chores", "hi", "--variables", "[1]"], 2, "--variables must be a JSON object, not list"),
    (["run", "chores", "hi", "--variables", '{"Bad": 1}'], 2, "variable name 'Bad' passed to run is not usable"),
    (["run", "chores", "hi", "--session-path", "Bad.x"], 2, "the session path 'Bad.x'"),
    (["run", "chores", "hi", "--file", "doc=/no/such/file"], 2, "--file 'doc=/no/such/file': cannot read"),
    (["run", "off", "hi"], 1, "workflow 'off' is disabled"),
    (["run", "off", "hi", "--session", "s1"], 1, "workflow 'off' is disabled"),
    (["run", "chores", "--session", "s1"], 2, "session 's1': the message is empty"),
    (["run", "chores", "hi", "--session", "s1", "--delivery-id", " "], 1, "delivery id ' ' is not usable"),
    (["deliver", "nosuch", "--trigger", "x"], 1, "session 'nosuch' is not parked awaiting an event"),
    (["deliver", "", "--trigger", "x"], 2, "invalid session id ''"),
    (["decide", "nosuch", "--to", "x"], 1, "session 'nosuch' is not parked awaiting a decision"),
    (["reply", "nosuch", "hello"], 1, "session 'nosuch' is not parked awaiting a decision"),
    (["reply", "nosuch", "hello", "--park-id", "bogus"], 1, "session 'nosuch' is not parked awaiting a decision"),
    (["reply", "_specs", "hello"], 2, "invalid session id '_specs'"),
    (["sessions", "nosuch"], 1, "session 'nosuch' does not exist in this store"),
]


@pytest.mark.parametrize(("argv", "code", "error"), NEW_WORKSPACE, ids=[" ".join(c[0]) for c in NEW_WORKSPACE])
def test_a_refusal_in_a_new_workspace_creates_no_store_folder(cli, ws, script, argv, code, error):
    model = script([{"say": "never called"}])
    refused(cli, ws, [*argv, "--model", model] if argv[0] != "sessions" else argv, code, error)
    assert not (ws / "sessions").exists()


@pytest.fixture
def parked(cli, ws, script) -> str:
    """``c-1`` (support-inbox) parked on input and ``r-1`` (refunds) parked on a decision; the model flag."""
    for argv in (
        ["run", "support-inbox", "About the thing", "--session", "c-1", "--trigger", "email_received"],
        ["run", "refunds", "Please refund order 7", "--session", "r-1", "--trigger", "refund_requested"],
    ):
        model = INBOX_SCRIPT if argv[1] == "support-inbox" else script(REFUND_SCRIPT)
        run = cli("--root", str(ws), *argv, "--model", model)
        assert run.code == 0, run.err
    return script([{"say": "never called"}])


PARKED = [
    (["deliver", "c-1", "--trigger", "email_reply", "--park-id", "bogus"], 1, "session 'c-1' is not parked awaiting"),
    (["deliver", "c-1", "--trigger", "emial_reply"], 2, "trigger 'emial_reply' is not one workflow 'support-inbox'"),
    (["deliver", "c-1", "--message", "hi"], 2, "delivery to session 'c-1' carries no trigger id"),
    (["deliver", "c-1", "--trigger", "email_reply", "--variables", '{"X": 1}'], 2, "variable name 'X' delivered"),
    (["deliver", "c-1", "--trigger", "email_reply", "--variables", "{bad"], 2, "--variables is not valid JSON"),
    (["reply", "c-1", "hello"], 1, "session 'c-1' is not parked awaiting a decision"),
    (["reply", "r-1", "hi", "--park-id", "bogus"], 1, "session 'r-1' is not parked awaiting an event: its status is"),
    (["reply", "r-1", " "], 2, "session 'r-1': the message is empty"),
    (["decide", "r-1", "--to", "nowhere"], 1, "'nowhere' is not a valid decision target for session 'r-1'"),
    (["run", "support-inbox", "hi", "--session", "c-1", "--delivery-id", "\x01"], 1, "delivery id"),
    # a session fired through another workflow: refused, not run against the wrong states
    (["run", "chores", "hi", "--session", "c-1"], 2, "session 'c-1' belongs to workflow 'support-inbox', not 'chores'"),
    (["run", "off", "hi", "--session", "c-1"], 2, "session 'c-1' belongs to workflow 'support-inbox', not 'off'"),
    (["deliver", "c-1", "--workflow", "chores", "--trigger", "manual"], 2, "session 'c-1' belongs to workflow"),
    (["reply", "r-1", "hello", "--workflow", "chores"], 2, "session 'r-1' belongs to workflow 'refunds'"),
    (["decide", "r-1", "--to", "refunded", "--workflow", "chores"], 2, "session 'r-1' belongs to workflow 'refunds'"),
]


@pytest.mark.parametrize(("argv", "code", "error"), PARKED, ids=[" ".join(c[0]) for c in PARKED])
def test_a_refusal_on_a_parked_session_changes_no_byte_of_the_workspace(cli, ws, parked, argv, code, error):
    refused(cli, ws, [*argv, "--model", parked], code, error)


def test_the_first_accepted_run_creates_the_store(cli, ws, script):
    run = cli("--root", str(ws), "run", "chores", "hi", "--session", "s1", "--model", script([{"say": "done"}]))
    assert (run.code, run.out) == (0, "done\n"), run.err
    assert (ws / "sessions" / "s1" / "checkpoints").is_dir()
    assert not (ws / "sessions" / ".inbox").exists()  # a direct firing with nothing queued writes no inbox
