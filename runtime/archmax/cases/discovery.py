"""Finding and reading case files under a workflow's ``tests/`` folder.

Rule source: BEHAVIOUR.md §10.1: cases are ``workflows/<slug>/tests/**/*.test.yaml`` and
``*.test.yml``, found recursively and run in path order; other files are ignored; the case id
is the path relative to ``tests/`` without the extension; the filter is a substring of the path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from archmax.cases.schema import Case, parse_case
from archmax.errors import CaseSpecError
from archmax.spec.yaml_io import parse_yaml

TESTS_DIR = "tests"
SUFFIXES = (".test.yaml", ".test.yml")


@dataclass(frozen=True)
class CaseFile:
    """A discovered case file.

    Attributes:
        id: Path relative to ``tests/`` without ``.test.yaml``/``.test.yml`` (``timer/wake``).
        path: The file.
        display: The path relative to the workflow folder (``tests/timer/wake.test.yaml``), used in messages.
    """

    id: str
    path: Path
    display: str


def discover_cases(workflow_dir: str | Path, filter: str | None = None) -> list[CaseFile]:
    """Every case file of a workflow, in path order.

    Args:
        workflow_dir: The workflow folder (``workflows/<slug>``).
        filter: Keep only files whose path relative to the workflow folder
            (``tests/timer/wake.test.yaml``) contains this substring; ``None`` or ``""`` keeps all.

    Returns:
        The case files sorted by their path relative to ``tests/``; ``[]`` without a ``tests/`` folder.
    """
    tests = Path(workflow_dir) / TESTS_DIR
    if not tests.is_dir():
        return []
    found = []
    for file in tests.rglob("*"):
        name = file.name
        suffix = next((s for s in SUFFIXES if name.endswith(s) and len(name) > len(s)), None)
        if suffix is None or not file.is_file():
            continue
        rel = file.relative_to(tests).as_posix()
        display = f"{TESTS_DIR}/{rel}"
        if filter and filter not in display:
            continue
        found.append(CaseFile(id=rel[: -len(suffix)], path=file, display=display))
    return sorted(found, key=lambda c: c.display)


def read_case(case_file: CaseFile) -> Case:
    """Read and validate one case file.

    Raises:
        CaseSpecError: unreadable file, invalid YAML, or an invalid case (naming the file and the key).
    """
    try:
        text = case_file.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseSpecError(case_file.display, f"cannot read the file: {exc}") from None
    doc, problems = parse_yaml(text, case_file.display)
    if problems:
        raise CaseSpecError(case_file.display, problems[0].message.removeprefix(f"{case_file.display} "))
    return parse_case(doc, path=case_file.display, tests_dir=_tests_dir(case_file), case_id=case_file.id)


def _tests_dir(case_file: CaseFile) -> Path:
    depth = case_file.id.count("/") + 1
    folder = case_file.path
    for _ in range(depth):
        folder = folder.parent
    return folder
