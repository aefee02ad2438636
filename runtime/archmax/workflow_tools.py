"""A workflow's host tools: the one convention by which every host loads them.

Convention: a workflow folder may hold ``tools.py`` defining ``TOOLS``, a list of callables (or
:class:`~archmax.HostTool` objects). The CLI, ``archmax serve`` and the Lambda functions (through
:mod:`archmax.hosting.wiring`) all load it with :func:`load_tools`; the workflow still has to grant
a tool (``tools: {allow: [...]}``) for the model to be offered it.

A grant that no tool provides is a typo the author must see before a session runs, not a
``blocked`` call mid-turn: :func:`tool_diagnostics` names each one, ``archmax validate`` prints
them, and :func:`load_checked_tools` (what the hosts call at start-up) raises. Control tools
(``archmax_*``) are the runtime's own and never need a module. Rule source: BEHAVIOUR.md §2.3
(tool governance), issue 11 item 3.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from archmax.errors import Diagnostic, WorkflowSpecError
from archmax.spec.model import Workflow

TOOLS_FILE = "tools.py"


def _problem(file: Path, message: str) -> WorkflowSpecError:
    return WorkflowSpecError([Diagnostic(path=TOOLS_FILE, message=message)], source=str(file))


def load_tools(workflow_dir: str | Path) -> list[Any]:
    """The ``TOOLS`` list of ``<workflow_dir>/tools.py``, or ``[]`` when the folder has no such file.

    The module is imported under a name derived from the folder (``archmax_workflow_tools_<slug>``),
    so two workflows' tools never share a module; its folder is not put on ``sys.path``.

    Raises:
        WorkflowSpecError: the file cannot be imported (its exception is chained) or defines no
            ``TOOLS`` list (path ``tools.py``).
    """
    folder = Path(workflow_dir)
    file = folder / TOOLS_FILE
    if not file.is_file():
        return []
    module_name = "archmax_workflow_tools_" + re.sub(r"\W", "_", folder.resolve().name)
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise _problem(file, f"cannot import host tools from '{file}'")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the author's module: any failure is theirs to fix, so say which file
        raise _problem(file, f"importing '{file}' failed: {type(exc).__name__}: {exc}") from exc
    tools = getattr(module, "TOOLS", None)
    if not isinstance(tools, list | tuple):
        raise _problem(file, f"'{file}' must define TOOLS, a list of callables")
    return list(tools)


def load_workspace_tools(workflow_dir: str | Path) -> list[Any]:
    """A workflow's tools, then the new ones of the sibling workflows it may run as sub-workflows (§5.10).

    A child session runs with its caller's agent, so each ``workflows/<slug>/tools.py`` beside the
    caller (in folder order) adds the tools whose names are new. A tool is still offered only where
    a workflow's allow lists grant it (§2.3).

    Raises:
        WorkflowSpecError: as :func:`load_tools`, for any of the folders.
    """
    folder = Path(workflow_dir)
    tools = load_tools(folder)
    names = set(tool_names(tools))
    for sibling in sorted(p for p in folder.parent.iterdir() if p.is_dir() and p.resolve() != folder.resolve()):
        if not (sibling / "workflow.yaml").is_file():
            continue
        for tool, name in zip(extra := load_tools(sibling), tool_names(extra), strict=True):
            if name not in names:
                names.add(name)
                tools.append(tool)
    return tools


def tool_names(tools: list[Any]) -> list[str]:
    """The names the host registers ``tools`` under (a ``HostTool``'s ``name``, else ``__name__``)."""
    return [str(getattr(tool, "name", None) or getattr(tool, "__name__", "")) for tool in tools]


def tool_diagnostics(spec: Workflow, provided: list[str]) -> list[Diagnostic]:
    """One error per grant (root ``tools.allow_always``, a state's ``tools.allow``) no host tool provides.

    Args:
        spec: The loaded workflow.
        provided: The host tools' names (:func:`tool_names`).

    Returns:
        Diagnostics with paths such as ``states.check-bank.tools.allow.0``, in file order; ``[]``
        when every grant is a control tool (``archmax_*``) or is provided.
    """
    known = ", ".join(sorted(provided)) or f"none: the workflow has no {TOOLS_FILE} with TOOLS"
    found: list[Diagnostic] = []

    def check(rules: list[Any], path: str) -> None:
        for index, rule in enumerate(rules):
            if rule.tool.startswith("archmax_") or rule.tool in provided:
                continue
            found.append(Diagnostic(path=f"{path}.{index}", message=f"no host tool '{rule.tool}' (provided: {known})"))

    check(spec.allow_always, "tools.allow_always")
    for slug, state in spec.states.items():
        check(state.allow_rules, f"states.{slug}.tools.allow")
    return found


def load_checked_tools(spec: Workflow) -> list[Any]:
    """:func:`load_workspace_tools` of the workflow's folder, refusing grants no tool provides (a host's start-up).

    Raises:
        WorkflowSpecError: what :func:`load_tools` raises, or one line per grant no host tool
            provides (:func:`tool_diagnostics`).
    """
    tools = load_workspace_tools(spec.root) if spec.root is not None else []  # children run with these too
    problems = tool_diagnostics(spec, tool_names(tools))
    if problems:
        raise WorkflowSpecError(problems, source=str(spec.root))
    return tools
