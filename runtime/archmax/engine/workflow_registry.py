"""The workflows a session may call as sub-workflows, and the tool each is offered as (§5.10).

Rule source: BEHAVIOUR.md §5.10 (the child is ``workflows/<slug>/`` beside the caller's, or one given
at assembly; its parameters are the child's ``manual`` trigger ``requires``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from archmax.engine.runtime import Runtime
from archmax.errors import WorkflowSpecError
from archmax.models.base import ToolSpec
from archmax.spec import Workflow, load_workflow
from archmax.spec.governance import SUBWORKFLOW_PREFIX

_JSON_TYPES = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string", "format": "date"},
    "date-time": {"type": "string", "format": "date-time"},
    "object": {"type": "object"},
    "array": {"type": "array"},
    "file": {"type": "string", "description": "A path of a file in your session (it is copied to the sub-workflow)."},
}


class WorkflowRegistry:
    """The workflows a session may call, and one runtime per workflow, built on first use.

    A child is ``workflows/<slug>/`` beside the calling workflow's folder, or the folder given at
    assembly (``create_agent(..., workflows={slug: path})``) (§5.10).
    """

    def __init__(
        self,
        make_runtime: Callable[[Workflow], Runtime],
        paths: Mapping[str, str | os.PathLike[str] | Workflow] | None = None,
    ) -> None:
        self._make_runtime = make_runtime
        self._paths = dict(paths or {})
        self._runtimes: dict[str, Runtime] = {}
        self.mocks: dict[str, Callable[[dict[str, Any]], Any]] = {}
        """Test-case mocks of ``archmax_workflow_<slug>`` tools: a match answers instead of a child (§10.1)."""

    def add(self, runtime: Runtime) -> None:
        """Register an already-built runtime (the assembled agent's own)."""
        self._runtimes.setdefault(runtime.workflow.slug, runtime)

    def runtime(self, slug: str, beside: Workflow) -> Runtime:
        """The runtime of workflow ``slug``.

        Raises:
            WorkflowSpecError: no such workflow, or it does not load.
        """
        if slug not in self._runtimes:
            given = self._paths.get(slug)
            if isinstance(given, Workflow):
                spec = given
            elif given is not None:
                spec = load_workflow(Path(given))
            elif beside.root is not None and (beside.root.parent / slug / "workflow.yaml").is_file():
                spec = load_workflow(beside.root.parent / slug)
            else:
                raise WorkflowSpecError([], source=slug) from None
            self._runtimes[slug] = self._make_runtime(spec)
        return self._runtimes[slug]

    def tool_spec(self, slug: str, beside: Workflow) -> ToolSpec:
        """The tool the model is offered: parameters from the child's ``manual`` trigger ``requires`` (§5.10)."""
        name = SUBWORKFLOW_PREFIX + slug
        try:
            child = self.runtime(slug, beside).workflow
        except WorkflowSpecError:
            return ToolSpec(name=name, description=f"Run the '{slug}' workflow (not available).")
        decl = child.trigger_decl("manual")
        props: dict[str, Any] = {}
        for spec in (decl.requires if decl else []) or []:
            schema = dict(_JSON_TYPES.get(spec.type or "", {}))
            if spec.description:
                schema["description"] = spec.description
            props[spec.name] = schema
        title = child.title or slug
        description = f"Run the '{slug}' workflow ({title}) as a sub-workflow and get its result."
        return ToolSpec(
            name=name,
            description=description,
            parameters={"type": "object", "properties": props, "required": list(props)},
        )
