"""Validation of ``before``/``after`` hook declarations (shape only; the engine runs them).

Rule source: BEHAVIOUR.md §2.4. A field holds one hook or an ordered list. Kinds:
``{script: hooks/<f>.py}`` confined to the workflow's ``hooks/`` folder with no ``..``;
``{rubric: {instructions, max_iterations?, model?}}``; any other single-key mapping is a custom
kind declared in root ``extensions: {hooks: [<kind>]}`` (:func:`custom_kinds`) and given an
executor at assembly. A script hook may carry the ``max_iterations`` sidecar (its
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
        phase: ``"before"`` or ``"after"``; ``max_iterations`` on a before hook is a load error,
            since a before hook answers only ok or veto (§2.4).

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
        out.error(path, "a before hook takes no max_iterations: it answers ok or veto")
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


BUILT_IN_KINDS = ("script", "rubric")


def hook_kind(hook: dict[str, Any]) -> str:
    """The kind of a well-formed hook mapping: its one key besides the ``max_iterations`` sidecar."""
    return next(k for k in hook if k != _SIDECAR)


def custom_kinds(extensions: Any, states: dict[str, Any], out: Collector) -> list[str]:
    """Check root ``extensions.hooks`` and that every custom hook kind a state uses is declared there (§2.4).

    Args:
        extensions: The root ``extensions`` value as written (free-form apart from ``hooks``).
        states: The loaded states (slug → :class:`State`).
        out: Where problems go: a malformed ``extensions.hooks`` list, and each undeclared kind
            at ``states.<s>.<phase>[.<i>]``.

    Returns:
        The declared custom kinds, in document order.
    """
    declared: list[str] = []
    listed = extensions.get("hooks") if isinstance(extensions, dict) else None
    if listed is not None:
        if not isinstance(listed, list) or not all(is_non_blank(k) for k in listed):
            out.error("extensions.hooks", "must be a list of hook kind names")
        else:
            declared = [k for k in listed if k not in BUILT_IN_KINDS]
    for slug, state in states.items():
        for phase in ("before", "after"):
            hooks_ = getattr(state, phase)
            for index, hook in enumerate(hooks_):
                kind = hook_kind(hook)
                if kind not in BUILT_IN_KINDS and kind not in declared:
                    where = at(at("states", slug), phase)
                    out.error(
                        at(where, index) if len(hooks_) > 1 else where,
                        f"hook kind '{kind}' is not declared in extensions.hooks",
                    )
    return declared
