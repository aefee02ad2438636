"""The stripped spec and its hash.

Rule source: BEHAVIOUR.md §9.4. ``spec`` is the loaded document with ``metadata`` stripped from
the root, from every state and from every inline rubric of ``before``/``after`` (a single hook
stays single, a list stays a list; YAML timestamps are already strings). ``spec_hash`` is the
first 32 hex characters of ``sha256(json.dumps(spec, sort_keys=True, separators=(",", ":"),
ensure_ascii=False).encode("utf-8"))``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

_HOOK_FIELDS = ("before", "after")


def strip_metadata(doc: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a workflow document without its ``metadata`` blocks (§9.4).

    Args:
        doc: The loaded (already validated) document.

    Returns:
        A new dict; ``doc`` is left untouched. Non-mapping states and hooks are copied as they are.
    """
    spec = copy.deepcopy(doc)
    spec.pop("metadata", None)
    states = spec.get("states")
    if isinstance(states, dict):
        for state in states.values():
            if not isinstance(state, dict):
                continue
            state.pop("metadata", None)
            for field in _HOOK_FIELDS:
                hooks = state.get(field)
                for hook in hooks if isinstance(hooks, list) else [hooks]:
                    if isinstance(hook, dict) and isinstance(hook.get("rubric"), dict):
                        hook["rubric"].pop("metadata", None)
    return spec


def canonical_json(spec: Any) -> str:
    """``json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` (§9.4)."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_hash(spec: Any) -> str:
    """First 32 hex characters of the sha256 of :func:`canonical_json` as UTF-8 (§9.4).

    Raises:
        TypeError: ``spec`` holds something JSON cannot encode (the loader refuses such documents).
    """
    return hashlib.sha256(canonical_json(spec).encode("utf-8")).hexdigest()[:32]
