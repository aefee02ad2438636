"""Loading a workflow: root keys, then states, then the stripped spec and its hash.

Rule source: BEHAVIOUR.md §2.1 (root keys), §2.5 (``WorkflowSpecError`` with every diagnostic,
warnings never raise), §9.4 (spec hash).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from archmax.errors import Diagnostic, WorkflowSpecError
from archmax.spec.check_hooks import custom_kinds
from archmax.spec.check_states import states_block
from archmax.spec.check_tools import tool_rules
from archmax.spec.checks import Collector, at, is_non_blank, optional_text, unknown_keys
from archmax.spec.hashing import spec_hash, strip_metadata
from archmax.spec.model import ToolRule, Workflow
from archmax.spec.yaml_io import read_yaml_file

ROOT_KEYS = (
    "title",
    "instructions",
    "disabled",
    "metadata",
    "states",
    "tools",
    "policy",
    "tests",
    "settings",
    "skills",
    "mounts",
    "extensions",
    "runtime",
)
_ROOT_TOOL_KEYS = ("allow_always", "forbid_always")
_POLICY_KEYS = ("forbid_tools",)
WORKFLOW_FILE = "workflow.yaml"


def workflow_from_dict(doc: Any, slug: str, root: Path | None = None) -> Workflow:
    """Validate a loaded document and build the :class:`Workflow` (§2).

    Args:
        doc: The parsed YAML document (a mapping; YAML timestamps as strings).
        slug: The workflow slug (its folder name).
        root: The workflow folder, if any (hooks resolve under ``root/hooks``).

    Returns:
        The workflow, its load warnings in ``.warnings``.

    Raises:
        WorkflowSpecError: One or more error diagnostics; ``.diagnostics`` holds all of them,
            warnings included, and ``str(error)`` has one ``<path>: <message>`` line per error.

    Example:
        >>> wf = workflow_from_dict({"states": {"a": {"triggers": {"manual": None}}}}, "demo")
        >>> wf.entry_state_for("manual")
        'a'
    """
    workflow, diagnostics = _build(doc, slug, root)
    if workflow is None:
        raise WorkflowSpecError(diagnostics, source=str(root) if root else slug)
    return workflow


def load_workflow(path: str | os.PathLike[str]) -> Workflow:
    """Load and validate ``workflows/<slug>/workflow.yaml`` (§2, §2.5).

    Args:
        path: The workflow folder, or its ``workflow.yaml``; the slug is the folder's name.

    Returns:
        The validated :class:`Workflow`.

    Raises:
        WorkflowSpecError: The file is missing or unreadable, is not valid YAML, or the document
            has error diagnostics (all of them are in ``.diagnostics``).
    """
    file, root = _locate(path)
    doc, problems = read_yaml_file(file)
    if problems:
        raise WorkflowSpecError(problems, source=str(file))
    workflow, diagnostics = _build(doc, root.name, root)
    if workflow is None:
        raise WorkflowSpecError(diagnostics, source=str(file))
    return workflow


def validate_workflow(path: str | os.PathLike[str]) -> list[Diagnostic]:
    """Every diagnostic of a workflow, errors and warnings, without raising (``archmax validate``, §11).

    Args:
        path: The workflow folder, or its ``workflow.yaml``.

    Returns:
        Diagnostics in the order found; empty for a clean workflow. An unreadable file or bad
        YAML is one error diagnostic with an empty path.
    """
    file, root = _locate(path)
    doc, problems = read_yaml_file(file)
    if problems:
        return problems
    workflow, diagnostics = _build(doc, root.name, root)
    return diagnostics


def _locate(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(workflow.yaml, folder)`` for a folder or file argument."""
    given = Path(path)
    if given.is_dir():
        return given / WORKFLOW_FILE, given
    return given, given.parent


def _build(doc: Any, slug: str, root: Path | None) -> tuple[Workflow | None, list[Diagnostic]]:
    out = Collector()
    if not isinstance(doc, dict):
        out.error("", "the workflow document must be a mapping of keys (title, instructions, states, ...)")
        return None, out.items
    unknown_keys(doc, ROOT_KEYS, "", out)
    title = optional_text(doc, "title", "", out)
    instructions = doc.get("instructions")
    if "instructions" in doc and not is_non_blank(instructions):
        out.error("instructions", "must be a non-empty string")
    disabled = doc.get("disabled", False)
    if not isinstance(disabled, bool):
        out.error("disabled", "must be a boolean (true or false)")
    if "states" not in doc:
        out.error("states", "is required")
        states = {}
    else:
        states = states_block(doc["states"], out)
    hook_kinds = custom_kinds(doc.get("extensions"), states, out)
    allow_always, forbid_always = _root_tools(doc.get("tools"), out)
    forbid_always += _policy(doc.get("policy"), out)
    spec = _json_ready(strip_metadata(doc), "", out)
    if out.errors:
        return None, out.items
    workflow = Workflow.model_construct(
        slug=slug,
        root=root,
        title=title,
        instructions=instructions if isinstance(instructions, str) else None,
        disabled=disabled,
        states=states,
        allow_always=allow_always,
        forbid_always=forbid_always,
        hook_kinds=hook_kinds,
        spec=spec,
        spec_hash=spec_hash(spec),
        warnings=[d for d in out.items if d.severity == "warning"],
    )
    return workflow, out.items


def _root_tools(value: Any, out: Collector) -> tuple[list[ToolRule], list[ToolRule]]:
    if value is None:
        return [], []
    if not isinstance(value, dict):
        out.error("tools", "must be a mapping {allow_always?, forbid_always?}")
        return [], []
    unknown_keys(value, _ROOT_TOOL_KEYS, "tools", out)
    allow = tool_rules(value.get("allow_always"), "tools.allow_always", out, forbid=False)
    forbid = tool_rules(value.get("forbid_always"), "tools.forbid_always", out, forbid=True)
    return allow, forbid


def _policy(value: Any, out: Collector) -> list[ToolRule]:
    if value is None:
        return []
    if not isinstance(value, dict):
        out.error("policy", "must be a mapping {forbid_tools?}")
        return []
    unknown_keys(value, _POLICY_KEYS, "policy", out)
    return tool_rules(value.get("forbid_tools"), "policy.forbid_tools", out, forbid=True)


def _json_ready(value: Any, path: str, out: Collector) -> Any:
    """A copy of ``value`` that ``json.dumps(sort_keys=True)`` accepts.

    Scalar keys become strings the way ``json.dumps`` writes them (``1`` → ``"1"``, ``true`` →
    ``"true"``), so mixed key types cannot break sorting; a value YAML can build but JSON cannot
    hold (``!!binary``, ``!!set``, a non-scalar key) is an error at its path.
    """
    if isinstance(value, dict):
        ready: dict[str, Any] = {}
        for key, item in value.items():
            name = _json_key(key)
            if name is None:
                out.error(path or "", f"key {key!r} has no JSON form")
                continue
            ready[name] = _json_ready(item, at(path, name), out)
        return ready
    if isinstance(value, (list, tuple)):
        return [_json_ready(item, at(path, i), out) for i, item in enumerate(value)]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            out.error(path, f"{value!r} has no JSON form")
        return value
    out.error(path, f"a {type(value).__name__} value has no JSON form")
    return None


def _json_key(key: Any) -> str | None:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return repr(key)
    return None
