"""The workflow spec: ``workflows/<slug>/workflow.yaml`` loaded, validated and hashed.

Rule source: BEHAVIOUR.md §2 (the spec) and §9.4 (the spec hash).
"""

from archmax.errors import Diagnostic, WorkflowSpecError
from archmax.spec.governance import CONTROL_TOOLS
from archmax.spec.hashing import canonical_json, spec_hash, strip_metadata
from archmax.spec.loader import load_workflow, validate_workflow, workflow_from_dict
from archmax.spec.model import (
    Budget,
    ReturnSpec,
    State,
    ToolRule,
    Transition,
    TriggerDecl,
    TriggerRef,
    Workflow,
)
from archmax.spec.value_types import VALUE_TYPES, check_value_type
from archmax.spec.yaml_io import SpecLoader, parse_yaml

__all__ = [
    "CONTROL_TOOLS",
    "VALUE_TYPES",
    "Budget",
    "Diagnostic",
    "ReturnSpec",
    "SpecLoader",
    "State",
    "ToolRule",
    "Transition",
    "TriggerDecl",
    "TriggerRef",
    "Workflow",
    "WorkflowSpecError",
    "canonical_json",
    "check_value_type",
    "load_workflow",
    "parse_yaml",
    "spec_hash",
    "strip_metadata",
    "validate_workflow",
    "workflow_from_dict",
]
