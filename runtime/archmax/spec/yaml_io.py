"""Reading ``workflow.yaml``: a safe YAML loader whose timestamps stay strings.

Rule source: BEHAVIOUR.md §9.4 ("YAML timestamps load as strings") and §2.5 (an unreadable
document is a load error like any other).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from archmax.errors import Diagnostic

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"


class SpecLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` minus the timestamp resolver, refusing duplicate mapping keys.

    ``2025-03-01`` loads as the string ``"2025-03-01"``, so the spec hash never depends on how a
    date happens to be re-serialised. A duplicate key is an error instead of PyYAML's silent
    last-one-wins: a trigger id written twice on one state would otherwise vanish unnoticed.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Build a mapping as ``SafeLoader`` does, after refusing a key written twice.

        Keys compare by Python equality (``1``, ``1.0`` and ``true`` collide). Merge keys (``<<``) and
        non-scalar keys are left to ``SafeLoader``.

        Args:
            node: The YAML mapping node.
            deep: Whether to construct nested values now (PyYAML's flag).

        Returns:
            The constructed mapping.

        Raises:
            yaml.constructor.ConstructorError: a duplicate key, marked at its second occurrence;
                :func:`parse_yaml` turns it into an error diagnostic (§2.5).
        """
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node, deep=True)
            # Python equality, not YAML's: 1, 1.0 and true would collapse into one dict key.
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _timestamp_text(loader: SpecLoader, node: yaml.ScalarNode) -> str:
    """An explicit ``!!timestamp`` tag keeps its text too."""
    return loader.construct_scalar(node)


SpecLoader.add_constructor(_TIMESTAMP, _timestamp_text)


def parse_yaml(text: str, source: str = "workflow.yaml") -> tuple[Any, list[Diagnostic]]:
    """Parse one YAML document with :class:`SpecLoader`.

    Args:
        text: The document's text.
        source: A name for messages (the file path).

    Returns:
        ``(document, [])`` on success; ``(None, [Diagnostic("", <message>)])`` when the text is
        not valid YAML (the message names the line and column).
    """
    try:
        return yaml.load(text, Loader=SpecLoader), []
    except yaml.YAMLError as exc:
        return None, [Diagnostic("", f"{source} is not valid YAML: {_yaml_problem(exc)}")]


def read_yaml_file(file: Path) -> tuple[Any, list[Diagnostic]]:
    """Read and parse a workflow file.

    Args:
        file: Path of ``workflow.yaml``.

    Returns:
        ``(document, diagnostics)``: a missing or unreadable file, or bad YAML, gives
        ``(None, [one error diagnostic])``.
    """
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, [Diagnostic("", f"cannot read {file}: {reason}")]
    return parse_yaml(text, str(file))


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return problem
