"""Adversarial: hostile command lines against ``archmax``.

Rule source: BEHAVIOUR.md §11 — exit 2 for a usage error, "which covers bad flags, bad JSON, a
non-object ``--variables``, a malformed or unreadable ``--file``", and an ``error: <message>`` line
(never a traceback); a refused command writes nothing to the store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from archmax import FilesystemStore
from archmax.cli import main

CHAT = {"title": "Chat", "states": {"chat": {"triggers": {"manual": None}}}}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.delenv("ARCHMAX_MODEL", raising=False)
    root = tmp_path / "ws"
    (root / "workflows" / "chat").mkdir(parents=True)
    (root / "workflows" / "chat" / "workflow.yaml").write_text(yaml.safe_dump(CHAT), encoding="utf-8")
    script = tmp_path / "model.yaml"
    script.write_text(yaml.safe_dump([{"say": "hello back"}] * 4), encoding="utf-8")
    store = tmp_path / "store"
    flags = ["--root", str(root), "--store", str(store), "--model", f"scripted:{script}"]
    return {"flags": flags, "store": store, "tmp": tmp_path}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _stored(ws: dict[str, object]) -> list[str]:
    store = ws["store"]
    return FilesystemStore(store).list() if Path(store).exists() else []  # type: ignore[arg-type]


def test_variables_nested_beyond_the_json_parsers_limit_are_a_usage_error(ws, capsys):
    deep = Path(ws["tmp"]) / "deep.json"  # type: ignore[arg-type]
    deep.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    code, _out, err = _run(capsys, "run", "hi", "--session", "s1", "--variables", f"@{deep}", *ws["flags"])
    assert code == 2
    assert err.startswith("error: --variables") and "Traceback" not in err
    assert _stored(ws) == []


def test_a_variables_file_that_is_not_utf8_is_a_usage_error(ws, capsys):
    bad = Path(ws["tmp"]) / "bad.json"  # type: ignore[arg-type]
    bad.write_bytes(b'\xff\xfe{"a": 1}')
    code, _out, err = _run(capsys, "run", "hi", "--session", "s1", "--variables", f"@{bad}", *ws["flags"])
    assert code == 2
    assert err.startswith("error: --variables")
    assert _stored(ws) == []


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_variables_holding_a_non_json_number_are_refused_not_stored_as_null(ws, capsys, literal):
    code, _out, err = _run(capsys, "run", "hi", "--session", "s1", "--variables", f'{{"x": {literal}}}', *ws["flags"])
    assert code == 2
    assert err.startswith("error:")
    assert _stored(ws) == []


def test_a_file_whose_own_name_is_not_a_usable_attachment_name_is_a_usage_error(ws, capsys):
    odd = Path(ws["tmp"]) / "line\nbreak.txt"  # type: ignore[operator]
    odd.write_text("content", encoding="utf-8")
    code, _out, err = _run(capsys, "run", "hi", "--session", "s1", "--file", f"doc={odd}", *ws["flags"])
    assert code == 2
    assert err.startswith("error: --file")
    assert _stored(ws) == []


@pytest.mark.parametrize("bad", ["../x", "a/../../b", "_specs", "..\\..\\x", ""])
def test_hostile_session_ids_on_every_session_command_exit_2_and_write_nothing(ws, capsys, bad):
    commands = [
        ["run", "hi", "--session", bad],
        ["deliver", bad, "--trigger", "timer"],
        ["decide", bad, "--to", "chat"],
        ["reply", bad, "hello"],
        ["sessions", bad],
    ]
    for argv in commands:
        code, _out, err = _run(capsys, *argv, *ws["flags"])
        assert code == 2, (argv, err)
        assert err.startswith("error:") and "Traceback" not in err
    assert _stored(ws) == []
    assert not Path(ws["store"]).exists()  # type: ignore[arg-type]  # not even the store's own folders
