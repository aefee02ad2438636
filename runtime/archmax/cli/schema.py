"""``archmax schema``: the JSON Schema of ``workflow.yaml`` or of a test case, or the Markdown reference.

Rule source: issue 15 item 4. Both come from :mod:`archmax.spec.document`, so they cannot drift
from each other; a test keeps those models equal to what the loader and the case parser accept.
"""

from __future__ import annotations

import json
from typing import Any

from archmax.cli.flags import AddCommand


def add_parser(add: AddCommand) -> None:
    """Register ``schema`` with the CLI's parser."""
    p = add(
        "schema",
        "Print the JSON Schema of workflow.yaml (or of a test case) for editors, or the reference as Markdown.",
        description="Print the JSON Schema of workflow.yaml (or of a test case) for editors, or the reference "
        "as Markdown. Save it beside your workflows and name it on the first line of the YAML file: "
        "# yaml-language-server: $schema=../../workflow.schema.json",
    )
    p.add_argument(
        "which",
        nargs="?",
        choices=["workflow", "case"],
        default="workflow",
        help="workflow (workflow.yaml, the default) or case (*.test.yaml)",
    )
    p.add_argument("--markdown", action="store_true", help="print docs/workflow.md, the reference for authors")


def run(cli: Any) -> int:
    """Print the schema (or the reference) on stdout; exit 0."""
    if cli.args.markdown:
        from archmax.spec.reference import render_reference

        cli.out.write(render_reference())
        return 0
    from archmax.spec.document import json_schema

    cli.say(json.dumps(json_schema(cli.args.which), indent=2, ensure_ascii=False))
    return 0
