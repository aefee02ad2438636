"""Where each checkpoint chunk of a session lives, and where the next one goes (issue 10, DESIGN.md §3).

The session item's ``chunks`` list has one entry per version ``base .. version``:

* ``{"S": token}``: the chunk is the S3 object ``checkpoints/<version>-<token>.json`` (full
  snapshots, and deltas too large to travel inline);
* ``{"M": {"t": token, "b": <chunk JSON text>}}``: a small chunk carried **inside** the item, written by the
  same conditional UpdateItem that commits the version (no S3 call): a delta, or a full snapshot at
  ``base`` of at most ``INLINE_MAX_BYTES`` (a new session's first version, so a start is one write);
* ``{"M": {"t": token, "g": segment}}``: a delta that was inline, moved with its neighbours into
  one S3 *segment* object ``checkpoints/seg-<segment>.json`` when the item's inline budget ran out.

So a commit is one UpdateItem while its delta fits the item's inline budget; about one in
``INLINE_BUDGET / delta`` commits also puts a segment; a full snapshot is written when the delta
bytes since the last one exceed :func:`snapshot_due`'s threshold (which grows with the snapshot's
own size, so the amortised bytes per commit do not grow with the transcript). Every entry carries
its commit attempt's unique token: a writer that lost its response recognises its own write.

Rule source: BEHAVIOUR.md §9.3 (deltas; "the bytes a commit writes should not grow with the length
of the transcript"), DESIGN.md §3 "The commit protocol".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

INLINE_MAX_BYTES = 8 * 1024
"""A delta up to this size may travel inside the item."""

INLINE_BUDGET_BYTES = 24 * 1024
"""Inline deltas the item holds at most; then they move to one S3 segment (a write costs WCUs by item size)."""

SNAPSHOT_MIN_BYTES = 64 * 1024
"""Delta bytes since the last full snapshot before a new one is written, at the least ..."""

SNAPSHOT_FACTOR = 2
"""... or this many times the last snapshot's size, whichever is larger."""

MAX_ENTRIES = 400
"""Versions since the last snapshot at most (bounds the item and a cold load)."""


def entry_token(entry: dict[str, Any]) -> str:
    """The commit attempt's token of one ``chunks`` entry."""
    return entry["S"] if "S" in entry else entry["M"]["t"]["S"]


def entry_inline(entry: dict[str, Any]) -> bytes | None:
    """The chunk bytes an inline entry carries, else ``None``."""
    inline = entry.get("M", {}).get("b")
    return None if inline is None else inline["S"].encode("utf-8")


def entry_segment(entry: dict[str, Any]) -> str | None:
    """The segment token of an entry moved to a segment, else ``None``."""
    seg = entry.get("M", {}).get("g")
    return None if seg is None else seg["S"]


def s3_entry(token: str) -> dict[str, Any]:
    """The entry of a chunk held as its own S3 object."""
    return {"S": token}


def inline_entry(token: str, data: bytes) -> dict[str, Any]:
    """The entry of a delta carried inside the item (chunk JSON is always UTF-8 text: stored as a string)."""
    return {"M": {"t": {"S": token}, "b": {"S": data.decode("utf-8")}}}


def segment_entry(token: str, segment: str) -> dict[str, Any]:
    """The entry of a delta moved into segment object ``segment``."""
    return {"M": {"t": {"S": token}, "g": {"S": segment}}}


def segment_bytes(chunks: dict[str, bytes]) -> bytes:
    """A segment object: ``{token: chunk JSON text}`` as UTF-8 JSON."""
    return json.dumps({t: data.decode("utf-8") for t, data in chunks.items()}, separators=(",", ":")).encode()


def segment_chunks(data: bytes) -> dict[str, bytes]:
    """The ``{token: chunk bytes}`` a segment object holds."""
    return {t: text.encode("utf-8") for t, text in json.loads(data).items()}


def _n(item: dict[str, Any], attr: str) -> int:
    value = item.get(attr)
    return int(value["N"]) if value else 0


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
            inline_bytes=sum(len(b) for e in entries if (b := entry_inline(e)) is not None),
            delta_bytes=_n(item, "delta_bytes"),
            full_bytes=_n(item, "full_bytes"),
            attrs={k: v for k, v in item.items() if k not in ("pk", "chunks", "base")},
        )

    def snapshot_due(self, delta: int) -> bool:
        """Whether the next chunk should be a full snapshot instead of a ``delta``-byte delta."""
        threshold = max(SNAPSHOT_MIN_BYTES, SNAPSHOT_FACTOR * self.full_bytes)
        return self.delta_bytes + delta > threshold or len(self.entries) >= MAX_ENTRIES

    def fits_inline(self, delta: int) -> bool:
        """Whether a ``delta``-byte chunk can travel inside the item now."""
        return delta <= INLINE_MAX_BYTES and self.inline_bytes + delta <= INLINE_BUDGET_BYTES
