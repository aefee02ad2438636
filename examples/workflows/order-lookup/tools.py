"""Host tools for the order-lookup workflow, loaded by the ``archmax`` CLI (``TOOLS``).

``lookup_order`` reads ``orders.json`` next to this file (or the file named by ``ORDERS_FILE``).
"""

import json
import os
from pathlib import Path

DEFAULT_ORDERS = Path(__file__).with_name("orders.json")


def lookup_order(order_id: str) -> dict:
    """Look an order up by its id (e.g. ORD-1001): {"found": true, "order": {...}} or {"found": false}."""
    orders = json.loads(Path(os.environ.get("ORDERS_FILE") or DEFAULT_ORDERS).read_text(encoding="utf-8"))
    for order in orders.get("orders", []):
        if order.get("id") == order_id:
            return {"found": True, "order": order}
    return {"found": False, "order_id": order_id}


TOOLS = [lookup_order]
