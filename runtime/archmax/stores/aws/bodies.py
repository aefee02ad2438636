"""The bodies of checkpoint chunk objects on S3: gzip-compressed when written, either form when read (issue 24).

A chunk too large for the item or a segment item (a full snapshot of a long transcript) is one S3
object, ``checkpoints/<version>-<token>.json`` (:mod:`archmax.stores.aws.layout`). Its JSON repeats
its keys message after message, so it is put gzip-compressed (``Content-Encoding: gzip``): the
bytes a snapshot commit writes drop several-fold, which keeps a cycle's written bytes from growing
with the transcript (BEHAVIOUR.md §9.3; issue 24's "cycle bytes written at ~10 → ~1,000 msgs" row).

Objects written before this, plain JSON, are still read: the form is told from the body's first two
bytes (gzip's magic ``1f 8b``, which no JSON text starts with), never from object metadata. Only the
store's own checkpoint objects are compressed; a session's ``artifacts/``, ``scratchpad/`` and
``_specs/`` files stay as written (the user's portable files, BEHAVIOUR.md §9.2).
"""

from __future__ import annotations

import gzip
import zlib

from archmax.errors import StoreError

GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of every gzip member (RFC 1952 §2.3.1)."""

CONTENT_ENCODING = "gzip"
"""The ``Content-Encoding`` a compressed chunk object is put with (informative: reads go by the bytes)."""

LEVEL = 6
"""zlib's default trade-off: most of the gain of 9 at a fraction of its CPU."""


def encode_body(data: bytes) -> bytes:
    """The S3 body of a chunk's JSON bytes ``data``: one gzip member, deterministic (``mtime`` 0)."""
    return gzip.compress(data, compresslevel=LEVEL, mtime=0)


def decode_body(body: bytes, *, key: str = "", session_id: str | None = None) -> bytes:
    """The chunk JSON bytes of an S3 chunk body: gunzipped when it starts with gzip's magic, else as read.

    Args:
        body: The object's bytes as read.
        key: The object's key (for the error message).
        session_id: The session (for the error).

    Raises:
        StoreError: for a gzip body that does not decompress (truncated, corrupt, bad checksum).
    """
    if not body.startswith(GZIP_MAGIC):
        return body  # plain JSON: written before issue 24's compression, or an old S3 segment object
    try:
        return gzip.decompress(body)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise StoreError(f"checkpoint chunk {key} does not decompress: {exc}", session_id=session_id) from exc


__all__ = ["CONTENT_ENCODING", "GZIP_MAGIC", "decode_body", "encode_body"]
