"""Where each checkpoint chunk of a session lives, and where the next one goes (issue 10, issue 24, DESIGN.md §3).

The session item's ``chunks`` list covers the versions ``base .. version`` in order, one entry per
version unless it says otherwise:

* ``{"S": token}``: the chunk is the S3 object ``checkpoints/<version>-<token>.json`` (full
  snapshots and deltas too large for a segment item; gzip-compressed since issue 24, plain JSON
  before: :mod:`archmax.stores.aws.bodies`);
* ``{"M": {"t": token, "b": <chunk JSON text>}}``: a small chunk carried **inside** the item, written by the
  same conditional UpdateItem that commits the version (no other call): a delta, or a full
  snapshot of at most ``INLINE_MAX_BYTES`` (a new session's first version, so a start is one write);
* ``{"M": {"d": token, "n": count}}``: ``count`` consecutive versions whose chunks are in one
  DynamoDB *segment item* of the same table (:mod:`archmax.stores.aws.segments`), named by the
  token of the commit attempt that wrote it: the inline deltas moved out together when the
  item's inline budget ran out, or one chunk too large to ride inline but small enough that a
  PutItem costs less than an S3 PUT (``SEGMENT_MAX_BYTES``);
* ``{"M": {"t": token, "g": segment}}``: a delta moved into an S3 segment object
  ``checkpoints/seg-<segment>.json`` (written before issue 24; still read, never written).

So the item stays small whatever the transcript (issue 24 goal 2: ``INLINE_BUDGET_BYTES`` of inline
deltas at most, and at most ``MAX_SEGMENTS`` segment entries of ~25 bytes): a commit is one
UpdateItem while its delta fits the budget; about one in ``INLINE_BUDGET / delta`` commits also
puts one segment item (a PutItem billed on its size, never an S3 PUT); a full snapshot is written
when the delta bytes since the last one exceed :meth:`Plan.snapshot_due`'s threshold (which grows
with the snapshot's own size, so the amortised bytes per commit do not grow with the transcript),
or the segment entries reach ``MAX_SEGMENTS``. The newest delta always stays inline when it fits
``INLINE_MAX_BYTES``, so the stream's image carries the committed record (:mod:`archmax.stores.aws.image`);
an older inline chunk keeps only what it appended to the transcript (:func:`trimmed`), and every
chunk in the item or a segment item is zlib-packed (:func:`pack`), so the budget holds many deltas.
Every entry carries its commit attempt's unique token (a segment item lists the tokens of the
versions it holds): a writer that lost its response recognises its own write.

Rule source: BEHAVIOUR.md §9.3 (deltas; "the bytes a commit writes should not grow with the length
of the transcript"), DESIGN.md §3 "The commit protocol", issue 24 goal 2 (a session item of ≲ 4 KB).
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from archmax.errors import StoreError
from archmax.stores.codec import chunk_bytes

INLINE_MAX_BYTES = 2 * 1024
"""A chunk up to this size may travel inside the item."""

INLINE_BUDGET_BYTES = 3 * 1024
"""Inline chunks the item holds at most; then the older ones move to one segment item (every write
of the item costs one write unit per KB of it: the claim, the commit and the sender's update)."""

SEGMENT_MAX_BYTES = 8 * 1024
"""A chunk too large to ride inline goes to a segment item up to this size, else to S3: an S3 PUT
costs as much as 8 DynamoDB write units."""

SNAPSHOT_MIN_BYTES = 64 * 1024
"""Delta bytes since the last full snapshot before a new one is written, at the least ..."""

SNAPSHOT_FACTOR = 2
"""... or this many times the last snapshot's size, whichever is larger."""

MAX_ENTRIES = 400
"""Entries since the last snapshot at most (bounds the item and a cold load)."""

MAX_SEGMENTS = 16
"""Segment-item entries since the last snapshot at most: bounds the item (~33 bytes each: with the
3 KB inline budget and ~350 bytes of other attributes it stays under 4 KB) and a
cold load (one BatchGetItem reads them all)."""


def entry_token(entry: dict[str, Any]) -> str:
    """The commit attempt's token of one ``chunks`` entry (a segment item's: the attempt that wrote it)."""
    if "S" in entry:
        return str(entry["S"])
    inner = entry["M"]
    return str(inner["d"]["S"] if "d" in inner else inner["t"]["S"])


def pack(data: bytes) -> bytes:
    """A chunk as an item stores it: zlib-compressed (chunk JSON repeats its keys: a write costs per KB)."""
    return zlib.compress(data, 6)


def unpack(value: dict[str, Any]) -> bytes:
    """The chunk bytes of a stored value: ``{"B": packed}`` (bytes, or base64 text in a stream event) or ``{"S": JSON}``.

    Raises:
        StoreError: for a value that does not unpack.
    """
    if "S" in value:
        return str(value["S"]).encode("utf-8")
    packed = value["B"]
    try:
        return zlib.decompress(base64.b64decode(packed) if isinstance(packed, str) else packed)
    except (zlib.error, ValueError, TypeError) as exc:
        raise StoreError(f"a stored chunk does not unpack: {exc}") from exc


def _blob(value: dict[str, Any]) -> int:
    inner = value.get("B", value.get("S", ""))
    return len(inner.encode("utf-8") if isinstance(inner, str) else inner)


def entry_inline(entry: dict[str, Any]) -> bytes | None:
    """The chunk bytes an inline entry carries, else ``None``.

    Raises:
        StoreError: for an inline value that does not unpack.
    """
    inner = entry.get("M", {})
    value = inner.get("z", inner.get("b"))
    return None if value is None else unpack(value)


def entry_inline_size(entry: dict[str, Any]) -> int:
    """The bytes an inline entry's chunk takes in the item (packed), else 0."""
    inner = entry.get("M", {})
    value = inner.get("z", inner.get("b"))
    return 0 if value is None else _blob(value)


def entry_segment(entry: dict[str, Any]) -> str | None:
    """The S3 segment token of an entry moved to an S3 segment object (before issue 24), else ``None``."""
    seg = entry.get("M", {}).get("g")
    return None if seg is None else seg["S"]


def entry_item_segment(entry: dict[str, Any]) -> tuple[str, int] | None:
    """``(token, count)`` of an entry whose chunks are in a segment item, else ``None``."""
    inner = entry.get("M", {})
    if "d" not in inner:
        return None
    return inner["d"]["S"], int(inner["n"]["N"])


def entry_versions(entry: dict[str, Any]) -> int:
    """How many consecutive versions one entry covers."""
    found = entry_item_segment(entry)
    return 1 if found is None else found[1]


def s3_entry(token: str) -> dict[str, Any]:
    """The entry of a chunk held as its own S3 object."""
    return {"S": token}


def inline_entry(token: str, packed: bytes) -> dict[str, Any]:
    """The entry of a chunk carried inside the item, packed by :func:`pack` (``b``: JSON text, before issue 24)."""
    return {"M": {"t": {"S": token}, "z": {"B": packed}}}


def item_segment_entry(token: str, count: int) -> dict[str, Any]:
    """The entry of ``count`` versions whose chunks are in the segment item ``token``."""
    return {"M": {"d": {"S": token}, "n": {"N": str(count)}}}


def segment_chunks(data: bytes) -> dict[str, bytes]:
    """The ``{token: chunk bytes}`` an S3 segment object (before issue 24) holds."""
    return {t: text.encode("utf-8") for t, text in json.loads(data).items()}


def _n(item: dict[str, Any], attr: str) -> int:
    value = item.get(attr)
    return int(value["N"]) if value else 0


@dataclass(frozen=True)
class Segment:
    """A segment item one commit attempt puts before its conditional UpdateItem.

    ``token`` is the attempt's; ``first`` the version of ``chunks[0]``; ``chunks`` the
    ``(commit token, packed chunk)`` of consecutive versions (:func:`pack`).
    """

    token: str
    first: int
    chunks: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Placement:
    """Where one commit's chunk goes: at most one S3 chunk and one segment item, then the item's entries."""

    entries: list[dict[str, Any]]
    how: str
    """``set`` (the list is replaced) or ``append`` (only the last entry is new)."""
    base: int | None
    """The new chunk base when the list restarts at a snapshot, else ``None``."""
    sizes: dict[str, int]
    s3_chunk: bytes | None = None
    """This version's chunk, to be put as its S3 object first."""
    segment: Segment | None = None
    """The segment item to be put first."""


@dataclass
class Plan:
    """What one version's item says about its chunks (kept per session by a warm store instance)."""

    version: int
    counts: tuple[int, int]  # (message_count, trail_count) of this version
    base: int
    entries: list[dict[str, Any]]
    inline_bytes: int = 0  # bytes of inline entries
    delta_bytes: int = 0  # bytes of deltas since base
    full_bytes: int = 0  # size of the snapshot at base
    attrs: dict[str, Any] = field(default_factory=dict)  # the item's other attributes, as stored

    @classmethod
    def of_item(cls, item: dict[str, Any]) -> Plan:
        """The plan a session item (as GetItem returns it) describes."""
        entries = list(item["chunks"]["L"])
        return cls(
            version=int(item["version"]["N"]),
            counts=(int(item["message_count"]["N"]), int(item["trail_count"]["N"])),
            base=int(item["base"]["N"]),
            entries=entries,
            inline_bytes=inline_size(entries),
            delta_bytes=_n(item, "delta_bytes"),
            full_bytes=_n(item, "full_bytes"),
            attrs={k: v for k, v in item.items() if k not in ("pk", "chunks", "base")},
        )

    def covered(self) -> int:
        """The number of versions the entries cover (``version - base + 1`` in a sound item)."""
        return sum(entry_versions(e) for e in self.entries)

    def segment_tokens(self) -> list[str]:
        """The tokens of the segment items this version's entries list, in order."""
        return [found[0] for e in self.entries if (found := entry_item_segment(e)) is not None]

    def snapshot_due(self, delta: int, packed: int, *, segments_ok: bool = True) -> bool:
        """Whether the next chunk should be a full snapshot instead of a delta of ``delta`` bytes (``packed`` packed).

        Without ``segments_ok`` (a finished session whose item will expire: no segment item may
        outlive it) a delta that does not fit inline makes a snapshot instead.
        """
        threshold = max(SNAPSHOT_MIN_BYTES, SNAPSHOT_FACTOR * self.full_bytes)
        if self.delta_bytes + delta > threshold or len(self.entries) >= MAX_ENTRIES:
            return True
        segments = self.segment_tokens()
        if not segments_ok:
            return bool(segments) or not self.fits_inline(packed)
        return len(segments) >= MAX_SEGMENTS

    def fits_inline(self, delta: int) -> bool:
        """Whether a chunk of ``delta`` bytes packed can travel inside the item now."""
        return delta <= INLINE_MAX_BYTES and self.inline_bytes + delta <= INLINE_BUDGET_BYTES


def locate(base: int, entries: list[dict[str, Any]], version: int) -> tuple[dict[str, Any], int] | None:
    """The entry of ``entries`` (from ``base``) covering ``version``, and the version's offset in it; else ``None``."""
    at = base
    for entry in entries:
        count = entry_versions(entry)
        if at <= version < at + count:
            return entry, version - at
        at += count
    return None


def inline_size(entries: list[dict[str, Any]]) -> int:
    """Bytes the inline chunks among ``entries`` take in the item (packed)."""
    return sum(entry_inline_size(e) for e in entries)


def is_inline(entry: dict[str, Any]) -> bool:
    """Whether ``entry`` carries its chunk inside the item."""
    inner = entry.get("M", {})
    return "z" in inner or "b" in inner


def entry_packed(entry: dict[str, Any]) -> bytes:
    """The packed chunk of an inline entry (one written as JSON text before issue 24 is packed now)."""
    inner = entry["M"]
    if "z" in inner:
        packed = inner["z"]["B"]
        return base64.b64decode(packed) if isinstance(packed, str) else bytes(packed)
    return pack(inner["b"]["S"].encode("utf-8"))


def place_full(version: int, token: str, data: bytes, *, segments_ok: bool, packed: bytes | None = None) -> Placement:
    """A full snapshot's placement: inline when small, a segment item when a PutItem is cheaper, else S3.

    Sizes are packed sizes (what the item is billed on); ``full_bytes`` is the JSON's. ``packed``
    is ``pack(data)`` when the caller has it already (it is then not compressed again).
    """
    sizes = {"delta_bytes": 0, "full_bytes": len(data)}
    packed = pack(data) if packed is None else packed
    if len(packed) <= INLINE_MAX_BYTES:
        return Placement([inline_entry(token, packed)], "set", version, sizes)
    if segments_ok and len(packed) <= SEGMENT_MAX_BYTES:
        segment = Segment(token, version, ((token, packed),))
        return Placement([item_segment_entry(token, 1)], "set", version, sizes, segment=segment)
    return Placement([s3_entry(token)], "set", version, sizes, s3_chunk=data)


def place_delta(
    plan: Plan, version: int, token: str, data: bytes, *, segments_ok: bool, packed: bytes | None = None
) -> Placement:
    """A delta's placement on ``plan`` (see the module docstring; a snapshot that is due is the caller's).

    Inline while the budget holds. Else, with ``segments_ok``: when it fits ``INLINE_MAX_BYTES``, the
    trailing run of inline chunks before it moves to one new segment item and it stays inline (the
    stream's image carries it); a larger one up to ``SEGMENT_MAX_BYTES`` goes to a segment item with
    that run. Anything else goes to S3. Sizes are packed sizes; ``delta_bytes`` counts the JSON's.
    ``packed`` is ``pack(data)`` when the caller has it already (it is then not compressed again).
    """
    sizes = {"delta_bytes": plan.delta_bytes + len(data), "full_bytes": plan.full_bytes}
    packed = pack(data) if packed is None else packed
    entries = [*plan.entries[:-1], trimmed(plan.entries[-1])] if plan.entries else []
    if len(packed) <= INLINE_MAX_BYTES and inline_size(entries) + len(packed) <= INLINE_BUDGET_BYTES:
        return Placement([*entries, inline_entry(token, packed)], "set", None, sizes)  # the common case
    if segments_ok and len(packed) <= SEGMENT_MAX_BYTES:
        return _to_segment(entries, version, token, packed, sizes)
    return Placement([*entries, s3_entry(token)], "set", None, sizes, s3_chunk=data)


def trimmed(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` without its chunk's ``record`` when inline (else ``entry`` itself).

    Once a newer chunk follows, only what a chunk appended to the transcript is ever read
    (``codec.decode_chunks`` takes the record of the last): the item keeps one record, not one per delta.
    """
    data = entry_inline(entry)
    if data is None:
        return entry
    chunk = json.loads(data)
    if not isinstance(chunk, dict) or "record" not in chunk:
        return entry
    del chunk["record"]
    return inline_entry(entry_token(entry), pack(chunk_bytes(chunk)))


def _to_segment(
    entries: list[dict[str, Any]], version: int, token: str, packed: bytes, sizes: dict[str, int]
) -> Placement:
    """The trailing run of inline ``entries`` (one version each) goes to one segment item named ``token``.

    The new chunk stays inline when it fits ``INLINE_MAX_BYTES`` and the inline chunks left before the
    run (a small first snapshot, stranded by a larger chunk since) leave room; else it goes in too.
    """
    start = len(entries)
    while start > 0 and is_inline(entries[start - 1]):
        start -= 1
    kept, moved = entries[:start], entries[start:]
    chunks = [(entry_token(e), entry_packed(e)) for e in moved]
    first = version - len(moved)
    if len(packed) <= INLINE_MAX_BYTES and inline_size(kept) + len(packed) <= INLINE_BUDGET_BYTES:
        entries = [*kept, item_segment_entry(token, len(moved)), inline_entry(token, packed)]
    else:
        chunks.append((token, packed))
        entries = [*kept, item_segment_entry(token, len(chunks))]
    return Placement(entries, "set", None, sizes, segment=Segment(token, first, tuple(chunks)))
