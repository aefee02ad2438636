"""The cost model: billing units as AWS counts them, and their price at us-east-1 list prices.

Pure arithmetic (no AWS, no clock): ``bench/_meter.py`` feeds it what each counted call read or
wrote, ``bench/cycle.py`` prints the result. Units, per AWS's billing pages:

* **DynamoDB on-demand** (Standard table class). A write is billed 1 WRU per 1 KB (rounded up) of
  the *larger* of the item before and after it; a transactional write 2×; a conditional write that
  fails still bills the existing item (minimum 1). A read is 1 RRU per 4 KB (rounded up) strongly
  consistent, 0.5 eventually consistent, 2 transactional; a read of a missing item still bills the
  minimum. A Query bills the *sum* of the item sizes it reads, rounded up once. A write that
  changes what a global secondary index holds also writes the index (1 KB units of the index entry:
  its keys, projected attributes and 100 bytes; a changed index key is a delete plus a put).
* **S3 Standard**: PUT/COPY/POST/LIST class (ListObjectsV2 included) and GET/HEAD class; DELETE is free.
  A 404 is billed like any request.
* **Lambda**: a request per invocation plus GB-seconds (memory × billed duration); an async
  ``lambda:Invoke`` is the invoked function's request (the API call itself has no price).
* **EventBridge** PutEvents: per entry (64 KB chunks; every entry here is smaller).
* **DynamoDB Streams**: GetRecords made by a Lambda event source mapping are free; only other
  readers pay (per 100,000 stream read request units).
* **SES**: per outbound message.

Rule source: issue 24 goal 1 (a cost model pricing the billing units counted, its price table and
assumptions printed); the AWS pricing pages named in :data:`PRICES_AS_OF`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

KB = 1024
WRITE_UNIT_BYTES = 1 * KB
READ_UNIT_BYTES = 4 * KB
INDEX_ENTRY_OVERHEAD = 100
"""Bytes DynamoDB adds to each global secondary index entry (its size is keys + projection + 100)."""

PRICES_AS_OF = (
    "us-east-1 list prices as published in 2025 (DynamoDB on-demand after the November 2024 cut,"
    " Standard table class; S3 Standard; Lambda arm64, first tier; EventBridge custom events; SES outbound);"
    " free tiers ignored"
)


@dataclass(frozen=True)
class Prices:
    """Dollars per billing unit (one unit, not per million)."""

    dynamodb_wru: float = 0.625 / 1e6
    dynamodb_rru: float = 0.125 / 1e6
    streams_rru: float = 0.02 / 1e5  # only readers that are not Lambda triggers
    s3_put_class: float = 0.005 / 1e3  # PUT, COPY, POST, LIST
    s3_get_class: float = 0.0004 / 1e3  # GET, HEAD, and every other non-free request
    lambda_request: float = 0.20 / 1e6
    lambda_gb_second: float = 0.0000133334  # arm64 (template.yaml: Architectures arm64)
    eventbridge_entry: float = 1.00 / 1e6
    ses_message: float = 0.10 / 1e3


PRICES = Prices()


@dataclass(frozen=True)
class LambdaAssumptions:
    """What an invocation is billed for besides its request.

    ``memory_mb`` is template.yaml's ``Globals.Function.MemorySize``; ``per_function`` a function's
    own ``MemorySize`` where the template sets one (by the bench's function name: ``"outbound"``...);
    ``duration_ms`` is an assumed billed duration of the handler's own work (AWS calls, serialising),
    the model's wait excluded: it is the same on every system compared, so it is left out of every row alike.
    """

    memory_mb: int = 1024
    duration_ms: float = 100.0
    per_function: Mapping[str, int] = field(default_factory=dict)

    def memory_of(self, function: str) -> int:
        """MB the template gives ``function`` (its own MemorySize, else the Globals one)."""
        return self.per_function.get(function, self.memory_mb)

    def gb_seconds_of(self, function: str) -> float:
        """GB-seconds one invocation of ``function`` is billed for."""
        return self.memory_of(function) / 1024 * self.duration_ms / 1000

    @property
    def gb_seconds(self) -> float:
        """GB-seconds one invocation at the Globals memory is billed for."""
        return self.memory_mb / 1024 * self.duration_ms / 1000


S3_FREE = frozenset({"DeleteObject", "DeleteObjects"})
S3_PUT_CLASS = frozenset(
    {
        "PutObject", "CopyObject", "PostObject", "ListObjects", "ListObjectsV2", "ListObjectVersions",
        "ListBuckets", "ListMultipartUploads", "ListParts", "CreateMultipartUpload", "UploadPart",
        "UploadPartCopy", "CompleteMultipartUpload", "PutObjectTagging", "PutObjectAcl",
    }
)  # fmt: skip


def s3_request_class(operation: str) -> str | None:
    """``"put"``, ``"get"`` or ``None`` (free) for an S3 operation name, as S3 Standard bills it."""
    if operation in S3_FREE:
        return None
    return "put" if operation in S3_PUT_CLASS else "get"


# ---------------------------------------------------------------------- DynamoDB item sizes


def _number_size(text: str) -> int:
    """Bytes of a DynamoDB number: about one per two significant digits, plus one (plus one if negative)."""
    negative = text.startswith("-")
    mantissa = text.lstrip("+-").lower().split("e", 1)[0]
    digits = mantissa.replace(".", "").lstrip("0").rstrip("0") or "0"
    return math.ceil(len(digits) / 2) + 1 + (1 if negative else 0)


def _blob_size(value: Any) -> int:
    return len(value.encode("utf-8")) if isinstance(value, str) else len(bytes(value))


def value_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value in DynamoDB's typed form (``{"S": "x"}``, ``{"M": {...}}``...)."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "N":
        return _number_size(str(inner))
    if kind == "B":
        return _blob_size(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in inner)
    if kind == "NS":
        return sum(_number_size(str(n)) for n in inner)
    if kind == "BS":
        return sum(_blob_size(b) for b in inner)
    if kind == "L":  # 3 bytes for the list, 1 per element
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":  # 3 bytes for the map, 1 per element, and each key's name
        return 3 + sum(1 + len(k.encode("utf-8")) + value_size(v) for k, v in inner.items())
    raise ValueError(f"not a DynamoDB attribute value type: {kind!r}")


def item_size(item: Mapping[str, Mapping[str, Any]] | None) -> int:
    """Bytes DynamoDB bills an item on: each attribute's name (UTF-8) plus its value; 0 for no item."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def write_units(old_size: int, new_size: int, *, transactional: bool = False) -> int:
    """WRU of one item write: 1 per 1 KB (rounded up) of the larger image, minimum 1; 2× in a transaction.

    A delete passes ``new_size=0``; a failed conditional write passes the existing item as both.
    """
    units = max(1, math.ceil(max(old_size, new_size) / WRITE_UNIT_BYTES))
    return units * (2 if transactional else 1)


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    """RRU of reading ``size`` bytes (one item, or a Query's sum): per 4 KB rounded up, minimum one unit.

    Strongly consistent 1, eventually consistent 0.5, transactional 2 RRU per 4 KB.
    """
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    if transactional:
        return units * 2.0
    return units * (1.0 if consistent else 0.5)


@dataclass(frozen=True)
class IndexShape:
    """A global secondary index as billing sees it: its key attributes and what it projects."""

    name: str
    keys: tuple[str, ...]
    table_keys: tuple[str, ...]
    projection: str  # ALL, KEYS_ONLY or INCLUDE
    include: tuple[str, ...] = ()

    def entry(self, item: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The index entry ``item`` makes (``None``: the item is not in this sparse index)."""
        if not item or any(k not in item for k in self.keys):
            return None
        if self.projection == "ALL":
            return dict(item)
        names = {*self.keys, *self.table_keys, *(self.include if self.projection == "INCLUDE" else ())}
        return {k: v for k, v in item.items() if k in names}

    def write_units(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> int:
        """WRU this index is billed when an item goes from ``old`` to ``new``.

        Not in the index before or after: 0; entered: a put; left: a delete; same keys: an update if
        a projected attribute changed (else nothing); a changed index key: a delete plus a put.
        """
        before, after = self.entry(old), self.entry(new)
        if before == after:
            return 0
        size = lambda e: item_size(e) + INDEX_ENTRY_OVERHEAD  # noqa: E731
        if before is None:
            return write_units(0, size(after))
        if after is None:
            return write_units(size(before), 0)
        if all(before[k] == after[k] for k in self.keys):
            return write_units(size(before), size(after))
        return write_units(size(before), 0) + write_units(0, size(after))


def index_shapes(description: Mapping[str, Any]) -> list[IndexShape]:
    """The global secondary indexes of a ``DescribeTable`` answer's ``Table``."""
    table_keys = tuple(k["AttributeName"] for k in description["KeySchema"])
    shapes = []
    for gsi in description.get("GlobalSecondaryIndexes") or ():
        projection = gsi.get("Projection", {})
        shapes.append(
            IndexShape(
                name=gsi["IndexName"],
                keys=tuple(k["AttributeName"] for k in gsi["KeySchema"]),
                table_keys=table_keys,
                projection=projection.get("ProjectionType", "ALL"),
                include=tuple(projection.get("NonKeyAttributes", ())),
            )
        )
    return shapes


# ---------------------------------------------------------------------- a bill


@dataclass
class Bill:
    """Billing units accumulated over some calls (one cycle, or many to average)."""

    wru: float = 0.0
    rru: float = 0.0
    s3_put: int = 0
    s3_get: int = 0
    lambda_requests: int = 0
    eventbridge_entries: int = 0
    ses_messages: int = 0
    streams_rru_paid: float = 0.0
    invocations: Counter[str] = field(default_factory=Counter)

    def add(self, other: Bill) -> None:
        """Add ``other``'s units to this bill."""
        self.wru += other.wru
        self.rru += other.rru
        self.s3_put += other.s3_put
        self.s3_get += other.s3_get
        self.lambda_requests += other.lambda_requests
        self.eventbridge_entries += other.eventbridge_entries
        self.ses_messages += other.ses_messages
        self.streams_rru_paid += other.streams_rru_paid
        self.invocations.update(other.invocations)

    def invoke(self, function: str) -> None:
        """One Lambda invocation of ``function`` (a request and its GB-seconds)."""
        self.lambda_requests += 1
        self.invocations[function] += 1

    def dollars(self, prices: Prices = PRICES, lam: LambdaAssumptions | None = None) -> dict[str, float]:
        """Dollars by line (DynamoDB writes, reads, S3 PUT/GET, Lambda requests and GB-s, ...)."""
        lam = lam or LambdaAssumptions()
        return {
            "DynamoDB writes": self.wru * prices.dynamodb_wru,
            "DynamoDB reads": self.rru * prices.dynamodb_rru,
            "S3 PUT/COPY/POST/LIST": self.s3_put * prices.s3_put_class,
            "S3 GET/HEAD": self.s3_get * prices.s3_get_class,
            "Lambda requests": self.lambda_requests * prices.lambda_request,
            "Lambda GB-s": self.gb_seconds(lam) * prices.lambda_gb_second,
            "EventBridge entries": self.eventbridge_entries * prices.eventbridge_entry,
            "SES messages": self.ses_messages * prices.ses_message,
            "Streams reads (not Lambda)": self.streams_rru_paid * prices.streams_rru,
        }

    def gb_seconds(self, lam: LambdaAssumptions) -> float:
        """GB-seconds of this bill's invocations, each at its function's memory (requests not named by function at the Globals memory)."""
        named = sum(self.invocations.values())
        by_function = sum(n * lam.gb_seconds_of(fn) for fn, n in self.invocations.items())
        return by_function + max(self.lambda_requests - named, 0) * lam.gb_seconds

    def total(self, prices: Prices = PRICES, lam: LambdaAssumptions | None = None) -> float:
        """Dollars for everything on this bill."""
        return sum(self.dollars(prices, lam).values())

    def scaled(self, factor: float) -> Bill:
        """This bill × ``factor`` (e.g. 1/n to average n cycles)."""
        return Bill(
            wru=self.wru * factor,
            rru=self.rru * factor,
            s3_put=self.s3_put * factor,  # type: ignore[arg-type]  # averages are fractional
            s3_get=self.s3_get * factor,  # type: ignore[arg-type]
            lambda_requests=self.lambda_requests * factor,  # type: ignore[arg-type]
            eventbridge_entries=self.eventbridge_entries * factor,  # type: ignore[arg-type]
            ses_messages=self.ses_messages * factor,  # type: ignore[arg-type]
            streams_rru_paid=self.streams_rru_paid * factor,
            invocations=Counter({k: v * factor for k, v in self.invocations.items()}),  # type: ignore[misc]
        )


def per_million(bill: Bill, cycles: float = 1, prices: Prices = PRICES, lam: LambdaAssumptions | None = None) -> float:
    """Dollars per 1,000,000 cycles, ``bill`` covering ``cycles`` of them."""
    return bill.total(prices, lam) / cycles * 1e6


def price_table(prices: Prices = PRICES, lam: LambdaAssumptions | None = None) -> list[str]:
    """The price table and the assumptions, as printable lines."""
    lam = lam or LambdaAssumptions()

    def usd(x: float, per: float) -> str:
        return f"${Decimal(str(round(x * per, 10))).normalize():f}"

    return [
        f"Prices: {PRICES_AS_OF}.",
        f"  DynamoDB on-demand write request unit   {usd(prices.dynamodb_wru, 1e6)} per million"
        " (1 KB of the larger of old/new item; transactions 2×; index writes billed too)",
        f"  DynamoDB on-demand read request unit    {usd(prices.dynamodb_rru, 1e6)} per million"
        " (4 KB; strongly consistent 1, eventually 0.5, transactional 2)",
        f"  DynamoDB Streams GetRecords             {usd(prices.streams_rru, 1e5)} per 100,000 read units"
        " — free when a Lambda trigger reads (the outbound function here): counted 0",
        f"  S3 Standard PUT/COPY/POST/LIST          {usd(prices.s3_put_class, 1e3)} per 1,000",
        f"  S3 Standard GET/HEAD (and 404s)         {usd(prices.s3_get_class, 1e3)} per 1,000; DELETE free",
        f"  Lambda requests                         {usd(prices.lambda_request, 1e6)} per million"
        " (an async lambda:Invoke is the invoked function's request)",
        f"  Lambda arm64 GB-second                  {usd(prices.lambda_gb_second, 1)}"
        f" × {lam.memory_mb} MB (template.yaml Globals MemorySize) × {lam.duration_ms:g} ms assumed per invocation"
        f" = {usd(lam.gb_seconds * prices.lambda_gb_second, 1e6)} per million invocations"
        + "".join(
            f"; {fn} {mb} MB (its own MemorySize): {usd(lam.gb_seconds_of(fn) * prices.lambda_gb_second, 1e6)}"
            for fn, mb in sorted(lam.per_function.items())
        ),
        f"  EventBridge PutEvents                   {usd(prices.eventbridge_entry, 1e6)} per million entries",
        f"  SES outbound                            {usd(prices.ses_message, 1e3)} per 1,000 messages",
        "Assumptions: storage (DynamoDB GB-month, S3 GB-month, PITR; the outbox entry items are kept as long as the table),"
        " data transfer, CloudWatch Logs/EMF ingestion, X-Ray (template.yaml sets Tracing: Active: $5.00 per"
        " million traces recorded past the free sampling reservoir, per traced invocation) and the entry request"
        " (HTTP API $1.00/M, the same on every system) are left out; the model's own cost and wait"
        " are left out (the same model calls on every system); one outbound invocation per cycle (Lambda batches"
        " stream records of one shard, so under load several cycles share one: this is the worst case); a"
        " cancelled transaction is billed as if it had run (2× on each item's current size); an item not found"
        " bills the minimum read; a Query bills the sum of the entries it returns (no filter in these paths),"
        " index entries + 100 bytes.",
    ]


def summarise(bills: Iterable[Bill]) -> Bill:
    """One bill holding the sum of ``bills``."""
    out = Bill()
    for bill in bills:
        out.add(bill)
    return out
