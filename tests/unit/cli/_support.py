"""Helpers for the CLI tests: small workspaces and the shipped examples' paths.

The examples under ``examples/`` are read in place (``EXAMPLES``); every test gets its own store
folder under ``tmp_path``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
EMAILS = EXAMPLES / "workflows" / "support-inbox" / "emails"

REFUNDS = {
    "title": "Refunds",
    "states": {
        "intake": {
            "instructions": "Read the request and send it to review.",
            "triggers": {"refund_requested": {"description": "A customer asks for a refund."}},
            "transitions": [{"to": "review", "description": "A person must approve it."}],
        },
        "review": {
            "type": "human",
            "instructions": "Approve or refuse the refund.",
            "approvers": ["finance@example.com"],
            "transitions": [
                {"to": "refunded", "description": "The refund is approved.", "type": "approve"},
                {"to": "refused", "description": "The refund is refused.", "type": "reject"},
            ],
        },
        "refunded": {"summary": "The money went back."},
        "refused": {"summary": "No refund."},
    },
}

CHORES = {
    "title": "Chores",
    "states": {
        "work": {
            "instructions": "Do the chore.",
            "triggers": {"manual": {"description": "Someone asks."}},
            "budget": {"maxTurns": 2},
        },
    },
}


@dataclass
class Run:
    """What one ``archmax`` invocation did."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def make_workspace(root: Path, **workflows: dict[str, Any]) -> Path:
    """A workspace ``root/workflows/<slug>/workflow.yaml`` per keyword (``_`` in names becomes ``-``)."""
    for slug, doc in workflows.items():
        folder = root / "workflows" / slug.replace("_", "-")
        folder.mkdir(parents=True)
        (folder / "workflow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return root


INBOX_SCRIPT = f"scripted:{EXAMPLES / 'workflows' / 'support-inbox' / 'model.yaml'}"
BANK_SCRIPT = f"scripted:{EXAMPLES / 'workflows' / 'bank-check' / 'model.yaml'}"
