"""Host tools for the bank-check workflow, loaded by the ``archmax`` CLI (``TOOLS``).

``lookup_transaction`` reads a small JSON bank statement: the file named by the environment
variable ``BANK_STATEMENT``, else ``bank-statement.json`` next to this file. The shipped statement
does not hold INV-1042, so in the demo the payment never posts and the session escalates.
"""

import json
import os
from pathlib import Path

STATEMENT_ENV = "BANK_STATEMENT"
DEFAULT_STATEMENT = Path(__file__).with_name("bank-statement.json")


def lookup_transaction(reference: str) -> dict:
    """Look up an incoming payment on the bank statement by its reference (e.g. INV-1042).

    Returns {"found": true, "transaction": {...}} when it has posted, else {"found": false, ...}.
    """
    path = Path(os.environ.get(STATEMENT_ENV) or DEFAULT_STATEMENT)
    statement = json.loads(path.read_text(encoding="utf-8"))
    for tx in statement.get("transactions", []):
        if tx.get("reference") == reference:
            return {"found": True, "transaction": tx}
    return {
        "found": False,
        "reference": reference,
        "checked": len(statement.get("transactions", [])),
        "note": "no transaction with this reference has posted yet",
    }


TOOLS = [lookup_transaction]
