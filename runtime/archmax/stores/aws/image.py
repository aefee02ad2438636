"""What a sessions-table stream record's ``NewImage`` tells the outbound function, without reading the session.

Rule source: issue 24 goal 2 ("events from the stream without a session read where the image
carries them"), DESIGN.md §3 "The change stream" (sending is keyed by session id, version and
index: the commit is the single source of truth). The template streams ``NEW_IMAGE``: the whole
item as the write left it (attributes as :mod:`archmax.stores.aws.item` lists them). Two facts
are read from it:

* **nothing recorded**: a commit that records outbox entries sets ``outbox_version`` to its own
  version in the same write (:func:`archmax.stores.common.outbox_mark`), so an item image whose
  ``outbox_version`` is absent or older than its ``version`` recorded no entry at that version
  (a commit that recorded none, or the sender's own ``outbox_settled`` update);
* **the committed record**: while the version's chunk travels inline in the item (a small delta,
  or a new session's first snapshot: :mod:`archmax.stores.aws.plan` keeps the newest chunk inline
  when older ones move to a segment item), that chunk holds every field of the record but the
  transcript, outbox included (:mod:`archmax.stores.codec`). Inline chunks are packed (zlib,
  binary): a Lambda stream event carries binary values as base64 text, boto3 as bytes; both read.

An image without ``chunks`` (a synthetic or projected record) tells neither: the caller loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from archmax.errors import StoreError
from archmax.session.records import Checkpoint
from archmax.stores.aws.plan import entry_inline, entry_versions
from archmax.stores.codec import chunk_from_bytes


def _number(image: Mapping[str, Any], attr: str) -> int | None:
    value = image.get(attr)
    try:
        return int(value["N"]) if isinstance(value, Mapping) else None
    except (KeyError, TypeError, ValueError):
        return None


def _chunks(image: Mapping[str, Any]) -> list[Any] | None:
    chunks = image.get("chunks")
    entries = chunks.get("L") if isinstance(chunks, Mapping) else None
    return entries if isinstance(entries, list) else None


def recorded_nothing(image: Mapping[str, Any]) -> bool:
    """Whether the item image shows that its version recorded no outbox entry (no send can be owed for it).

    Args:
        image: A stream record's ``NewImage`` in DynamoDB's JSON form (``{"version": {"N": "7"}, ...}``).

    Returns:
        True only for an image of the whole item (it carries ``chunks`` and ``version``) whose
        ``outbox_version`` is absent or not its ``version``; False when the image cannot tell.
    """
    version = _number(image, "version")
    if version is None or _chunks(image) is None:
        return False
    return _number(image, "outbox_version") != version


def record_of_image(session_id: str, image: Mapping[str, Any]) -> Checkpoint | None:
    """The committed record of the image's version, transcript left out, when its chunk travels inline.

    Args:
        session_id: The stream record's ``Keys.pk``.
        image: The record's ``NewImage`` in DynamoDB's JSON form.

    Returns:
        The record (``messages`` and ``trail`` empty; every other field, the outbox included, as
        committed), or ``None`` when the image does not carry it (the chunk is an S3 object or in
        a segment, the image has no ``chunks``, or what it carries does not decode as this
        session's version): the caller then loads the session.
    """
    version, base, entries = _number(image, "version"), _number(image, "base"), _chunks(image)
    if version is None or base is None or not entries:
        return None
    try:
        if base + sum(entry_versions(e) for e in entries) - 1 != version:
            return None
        inline = entry_inline(entries[-1])
        if inline is None:
            return None
        chunk = chunk_from_bytes(inline)
        record = Checkpoint.model_validate({**chunk["record"], "messages": [], "trail": []})
    except (StoreError, KeyError, TypeError, ValueError, AttributeError, ValidationError):
        return None
    if record.session_id != session_id or record.version != version:
        return None
    return record


__all__ = ["record_of_image", "recorded_nothing"]
