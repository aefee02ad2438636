"""Fixtures for the CLI tests: run ``archmax.cli.main`` in-process, workspaces, script files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from archmax.cli import main

from ._support import CHORES, EXAMPLES, REFUNDS, Run, make_workspace


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """``cli("run", ...)`` runs ``main`` in-process and returns its exit code, stdout and stderr."""
    monkeypatch.delenv("ARCHMAX_MODEL", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")

    def run(*args: str) -> Run:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def script(tmp_path: Path) -> Callable[[list[dict[str, Any]]], str]:
    """``script([...entries])`` writes a scripted-model file and returns its ``--model`` value."""
    count = 0

    def write(entries: list[dict[str, Any]]) -> str:
        nonlocal count
        count += 1
        path = tmp_path / f"script-{count}.yaml"
        path.write_text(yaml.safe_dump(entries, sort_keys=False), encoding="utf-8")
        return f"scripted:{path}"

    return write


@pytest.fixture
def chores(tmp_path: Path) -> list[str]:
    """Flags for a one-workflow workspace (``chores``) and its own store."""
    root = make_workspace(tmp_path / "chores-ws", chores=CHORES)
    return ["--root", str(root), "--store", str(tmp_path / "chores-store")]


@pytest.fixture
def refunds(tmp_path: Path) -> list[str]:
    """Flags for a workspace with a human state (``refunds``) beside ``chores``, and its own store."""
    root = make_workspace(tmp_path / "refunds-ws", refunds=REFUNDS, chores=CHORES)
    return ["--root", str(root), "--store", str(tmp_path / "refunds-store")]


@pytest.fixture
def examples(tmp_path: Path) -> list[str]:
    """Flags for the shipped examples (read in place) with a fresh store."""
    return ["--root", str(EXAMPLES), "--store", str(tmp_path / "examples-store")]
