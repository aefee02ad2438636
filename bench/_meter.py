"""Counting AWS calls and the billing units they cost, with botocore event hooks.

:class:`Meter` attaches to boto3 clients (``before-call`` / ``after-call`` hooks, any service) and
keeps two things per window: the calls (``service.Operation``, as :class:`_aws.CallCounter`
counts them: a retried request once) and a :class:`cost.Bill`. DynamoDB units need item sizes as
DynamoDB bills them: the meter reads the item before and after each write, and each item a
``GetItem`` reads in full, through its own *unmetered* client (a projection does not make a read
cheaper; the larger of old and new image prices a write). Request bodies and answers are read from
the JSON on the wire, so a boto3 resource layer on top changes nothing.

Calls that never reach a boto3 client are noted by hand: :meth:`Meter.note_call` (the waker's
``lambda:Invoke``, made in-process here), :meth:`Meter.invoked` (a Lambda invocation billed).

Every billed write is also kept by kind (:attr:`Meter.writes`): which function wrote which kind of
item (:func:`item_kind`), how large it was, and what the table and each index billed, so a report can
say where the write units go.

Rule source: DESIGN.md §7 (round trips counted with botocore's event hooks); issue 24 goals 1, 5.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from cost import Bill, IndexShape, index_shapes, item_size, read_units, s3_request_class, write_units

_UID = "bench-meter"
_SEPARATOR = "\x1f"  # archmax's key separator (stores/aws/layout.py): no session id holds it


def item_kind(table: str, key: dict[str, Any]) -> str:
    """What an item is, from its table and key: ``sessions item`` for a session's own item (``bench-``
    dropped from the table's name), else the key's second part (``sessions segment``, ``sessions outbox``)."""
    parts = str(next(iter(key.get("pk", {}).values()), "")).split(_SEPARATOR)
    return f"{table.removeprefix('bench-')} {parts[1] if len(parts) > 1 else 'item'}"


class WriteKind:
    """Write units billed to one ``(function, operation, item kind)`` in a window."""

    def __init__(self) -> None:
        self.writes = 0
        self.table_units = 0
        self.index_units: Counter[str] = Counter()
        self.largest = 0
        """The largest billed image (bytes: the larger of old and new)."""

    def add(self, table_units: int, index_units: dict[str, int], size: int) -> None:
        self.writes += 1
        self.table_units += table_units
        self.index_units.update({name: n for name, n in index_units.items() if n})
        self.largest = max(self.largest, size)


_SINGLE_WRITES = {"PutItem": "Item", "UpdateItem": "Key", "DeleteItem": "Key"}


def _error_code(http_response: Any) -> str:
    """The error code of a failed answer (JSON ``__type`` or the S3 XML ``<Code>``), else the HTTP status."""
    content = http_response.content or b""
    try:
        kind = json.loads(content).get("__type", "")
        if kind:
            return kind.rsplit("#", 1)[-1]
    except ValueError:
        start, end = content.find(b"<Code>"), content.find(b"</Code>")
        if 0 <= start < end:
            return content[start + 6 : end].decode()
    return str(http_response.status_code)


class Meter:
    """Calls and billing units of the clients it is attached to, since the last :meth:`reset`.

    Args:
        shadow: An unmetered DynamoDB client on the same endpoint (reads item images for billing).
    """

    def __init__(self, shadow: Any) -> None:
        self._shadow = shadow
        self._lock = threading.Lock()
        self._tables: dict[str, tuple[tuple[str, ...], list[IndexShape]]] = {}
        self.calls: Counter[str] = Counter()
        self.bill = Bill()
        self.failed: Counter[str] = Counter()
        """Calls answered with an error (``service.Operation: Code``), also in :attr:`calls`."""
        self.ended_failed: Counter[str] = Counter()
        """:attr:`failed` of the window the last :meth:`reset` ended."""
        self.running: str | None = None
        """The function whose invocation is running (set by the caller): its calls go to :attr:`by_function`."""
        self.by_function: Counter[str] = Counter()
        """Calls made while :attr:`running` named a function, by ``"<function> <service>.<Operation>"``."""
        self.ended_by_function: Counter[str] = Counter()
        """:attr:`by_function` of the window the last :meth:`reset` ended."""
        self.writes: dict[tuple[str, str, str], WriteKind] = {}
        """Write units by ``(function or "-", operation, item kind)`` (:func:`item_kind`)."""
        self.ended_writes: dict[tuple[str, str, str], WriteKind] = {}
        """:attr:`writes` of the window the last :meth:`reset` ended."""

    # ------------------------------------------------------------------ windows

    def reset(self) -> tuple[Counter[str], Bill]:
        """Start a new window; returns the calls and bill of the one that ended."""
        with self._lock:
            calls, bill, self.ended_failed = self.calls, self.bill, self.failed
            self.ended_by_function, self.ended_writes = self.by_function, self.writes
            self.calls, self.bill, self.failed, self.by_function = Counter(), Bill(), Counter(), Counter()
            self.writes = {}
        return calls, bill

    def note_call(self, name: str) -> None:
        """Count a call made outside the metered clients (``"lambda.Invoke"``)."""
        with self._lock:
            self.calls[name] += 1
            if self.running is not None:
                self.by_function[f"{self.running} {name}"] += 1

    def invoked(self, function: str) -> None:
        """Bill one Lambda invocation of ``function``."""
        with self._lock:
            self.bill.invoke(function)

    # ------------------------------------------------------------------ hooks

    def attach(self, client: Any) -> Any:
        """Meter ``client`` from now on; returns it."""
        client.meta.events.register("before-call", self._before, unique_id=_UID + "-before")
        client.meta.events.register("after-call", self._after, unique_id=_UID + "-after")
        return client

    def _before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        service, op = model.service_model.service_name, model.name
        with self._lock:
            self.calls[f"{service}.{op}"] += 1
            if self.running is not None:
                self.by_function[f"{self.running} {service}.{op}"] += 1
        if service == "dynamodb":
            body = json.loads(params.get("body") or b"{}")
            context["bench_body"] = body
            context["bench_old"] = [(t, key, self._image(t, key)) for t, key, _kind in self._targets(op, body)]
        elif service == "events" and op == "PutEvents":
            body = json.loads(params.get("body") or b"{}")
            with self._lock:
                self.bill.eventbridge_entries += len(body.get("Entries", ()))

    def _after(self, model: Any, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        service, op = model.service_model.service_name, model.name
        ok = http_response.status_code < 300
        if not ok:
            code = _error_code(http_response)
            with self._lock:
                self.failed[f"{service}.{op}: {code}"] += 1
        if service == "s3":
            kind = s3_request_class(op)
            with self._lock:
                if kind == "put":
                    self.bill.s3_put += 1
                elif kind == "get":
                    self.bill.s3_get += 1
        elif service == "sesv2" and op == "SendEmail" and ok:
            with self._lock:
                self.bill.ses_messages += 1
        elif service == "dynamodb" and "bench_body" in context:
            answer = json.loads(http_response.content or b"{}")
            wru, rru = self._dynamodb_units(op, context["bench_body"], context["bench_old"], answer, ok)
            with self._lock:
                self.bill.wru += wru
                self.bill.rru += rru

    # ------------------------------------------------------------------ DynamoDB

    def _schema(self, table: str) -> tuple[tuple[str, ...], list[IndexShape]]:
        if table not in self._tables:
            description = self._shadow.describe_table(TableName=table)["Table"]
            keys = tuple(k["AttributeName"] for k in description["KeySchema"])
            self._tables[table] = (keys, index_shapes(description))
        return self._tables[table]

    def _key(self, table: str, item: dict[str, Any]) -> dict[str, Any]:
        keys, _ = self._schema(table)
        return {k: item[k] for k in keys}

    def _image(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        return self._shadow.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

    def _targets(self, op: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
        """``(table, key, kind)`` of every item a write operation touches (kind: write or check)."""
        if op in _SINGLE_WRITES:
            table = body["TableName"]
            return [(table, self._key(table, body[_SINGLE_WRITES[op]]), "write")]
        if op == "TransactWriteItems":
            out = []
            for entry in body.get("TransactItems", ()):
                ((action, spec),) = entry.items()
                table = spec["TableName"]
                key = self._key(table, spec["Item"]) if action == "Put" else spec["Key"]
                out.append((table, key, "check" if action == "ConditionCheck" else "write"))
            return out
        if op == "BatchWriteItem":
            out = []
            for table, requests in body.get("RequestItems", {}).items():
                for request in requests:
                    if "PutRequest" in request:
                        out.append((table, self._key(table, request["PutRequest"]["Item"]), "write"))
                    else:
                        out.append((table, request["DeleteRequest"]["Key"], "write"))
            return out
        return []

    def _kept(self, op: str, table: str, key: dict[str, Any], units: int, indexed: dict[str, int], size: int) -> None:
        with self._lock:
            where = (self.running or "-", op, item_kind(table, key))
            self.writes.setdefault(where, WriteKind()).add(units, indexed, size)

    def _dynamodb_units(
        self,
        op: str,
        body: dict[str, Any],
        old: list[tuple[str, dict[str, Any], Any]],
        answer: dict[str, Any],
        ok: bool,
    ) -> tuple[float, float]:
        if old:
            transactional = op == "TransactWriteItems"
            kinds = [kind for _t, _k, kind in self._targets(op, body)]
            cancelled = not ok and answer.get("__type", "").endswith(
                ("ConditionalCheckFailedException", "TransactionCanceledException")
            )
            if not ok and not cancelled:
                return 0.0, 0.0
            wru = 0
            for (table, key, before), kind in zip(old, kinds, strict=True):
                if not ok or kind == "check":  # billed on the item as it stands
                    size = item_size(before)
                    units = write_units(size, size, transactional=transactional)
                    self._kept(op, table, key, units, {}, size)
                    wru += units
                    continue
                after = self._image(table, key)
                old_size, new_size = item_size(before), item_size(after)
                units = write_units(old_size, new_size, transactional=transactional)
                indexed = {index.name: index.write_units(before, after) for index in self._schema(table)[1]}
                self._kept(op, table, key, units, indexed, max(old_size, new_size))
                wru += units + sum(indexed.values())
            return float(wru), 0.0
        if not ok:
            return 0.0, 0.0
        if op == "GetItem":
            full = self._image(body["TableName"], body["Key"])
            return 0.0, read_units(item_size(full), consistent=bool(body.get("ConsistentRead")))
        if op == "BatchGetItem":
            rru = 0.0
            for table, spec in body.get("RequestItems", {}).items():
                for key in spec.get("Keys", ()):
                    rru += read_units(item_size(self._image(table, key)), consistent=bool(spec.get("ConsistentRead")))
            return 0.0, rru
        if op == "TransactGetItems":
            rru = 0.0
            for entry in body.get("TransactItems", ()):
                spec = entry["Get"]
                rru += read_units(
                    item_size(self._image(spec["TableName"], spec["Key"])), consistent=True, transactional=True
                )
            return 0.0, rru
        if op in ("Query", "Scan"):
            overhead = 100 if body.get("IndexName") else 0
            size = sum(item_size(item) + overhead for item in answer.get("Items", ()))
            consistent = bool(body.get("ConsistentRead")) and not body.get("IndexName")
            return 0.0, read_units(size, consistent=consistent)
        return 0.0, 0.0  # control plane (DescribeTable, CreateTable...): not billed per request
