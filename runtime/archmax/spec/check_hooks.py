"""Validation of ``before``/``after`` hook declarations (shape only; the engine runs them).

Rule source: BEHAVIOUR.md §2.4. A field holds one hook or an ordered list. Kinds:
``{script: hooks/<f>.py}`` confined to the workflow's ``hooks/`` folder with no ``..``;
``{rubric: {instructions, max_iterations?, model?}}``; any other single-key mapping is a custom
kind registered at assembly. A script hook may carry the ``max_iterations`` sidecar (its
correction budget); a rubric keeps its budget inside its declaration.
"""

from __future__ import annotations

from typing import Any

from archmax.spec.checks import NON_BLANK, Collector, at, is_non_blank, unknown_keys

_SIDECAR = "max_iterations"
_RUBRIC_KEYS = ("instructions", "max_iterations", "model", "metadata")


def hooks(value: Any, path: str, out: Collector, *, phase: str) -> list[dict[str, Any]]:
    """Check a ``before``/``after`` field.

    Args:
        value: As written: ``null``, one hook mapping, or a list of them.
        path: ``states.<s>.before`` or ``states.<s>.after``.
        out: Where problems go.
        phase: ``"before"`` or ``"after"``; ``max_iterations`` on a before hook is a warning,
            since a before hook answers only ok or veto.

    Returns:
        The well-formed hooks, each the mapping as written, as a list.
    """
    if value is None:
        return []
    items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
    good: list[dict[str, Any]] = []
    for index, hook in items:
        hook_path = at(path, index)
        if _hook(hook, hook_path, out, phase=phase):
            good.append(hook)
    return good


def _hook(hook: Any, path: str, out: Collector, *, phase: str) -> bool:
    if not isinstance(hook, dict):
        out.error(path, "a hook is a single-key mapping: {script: ...}, {rubric: {...}} or a custom kind")
        return False
    kinds = [k for k in hook if k != _SIDECAR]
    if len(kinds) != 1 or not is_non_blank(kinds[0]):
        out.error(path, "a hook is a single-key mapping: {script: ...}, {rubric: {...}} or a custom kind")
        return False
    kind = kinds[0]
    before = len(out.errors)
    if kind == "script":
        _script(hook["script"], at(path, "script"), out)
        if _SIDECAR in hook and not _non_negative_int(hook[_SIDECAR]):
            out.error(at(path, _SIDECAR), "must be a non-negative integer")
    elif kind == "rubric":
        if _SIDECAR in hook:
            out.error(at(path, _SIDECAR), "a rubric declares max_iterations inside 'rubric'")
        _rubric(hook["rubric"], at(path, "rubric"), out)
    elif _SIDECAR in hook:
        out.error(at(path, _SIDECAR), f"a '{kind}' hook takes no max_iterations")
    if phase == "before" and _declares_budget(hook):
        out.warning(path, "max_iterations has no effect on a before hook: it answers ok or veto")
    return len(out.errors) == before


def _script(value: Any, path: str, out: Collector) -> None:
    """``hooks/<f>.py``: relative, inside ``hooks/``, ``/``-separated, no ``..``, ``.``, or empty segment."""
    message = "must be a path hooks/<file>.py inside the workflow's hooks/ folder, with no '..'"
    if not isinstance(value, str) or "\\" in value or "\x00" in value:
        out.error(path, message)
        return
    segments = value.split("/")
    if (
        len(segments) < 2
        or segments[0] != "hooks"
        or any(s in ("", ".", "..") for s in segments)
        or not segments[-1].endswith(".py")
        or segments[-1] == ".py"
    ):
        out.error(path, message)


def _rubric(value: Any, path: str, out: Collector) -> None:
    if not isinstance(value, dict):
        out.error(path, "must be a mapping {instructions, max_iterations?, model?}")
        return
    unknown_keys(value, _RUBRIC_KEYS, path, out)
    if not is_non_blank(value.get("instructions")):
        out.error(at(path, "instructions"), NON_BLANK if "instructions" in value else "is required")
    if "max_iterations" in value and not _non_negative_int(value["max_iterations"]):
        out.error(at(path, "max_iterations"), "must be a non-negative integer")
    if "model" in value and not is_non_blank(value["model"]):
        out.error(at(path, "model"), NON_BLANK)


def _non_negative_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _declares_budget(hook: dict[str, Any]) -> bool:
    rubric = hook.get("rubric")
    return _SIDECAR in hook or (isinstance(rubric, dict) and _SIDECAR in rubric)
