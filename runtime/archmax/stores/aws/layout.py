"""Where an ``AwsStore`` keeps things: S3 keys under the prefix, and the index shards of an id.

Rule source: BEHAVIOUR.md §9.2 (one id, one folder: ``<root>/<folder>/...``, ``_specs/<hash>.json``),
DESIGN.md §3 (sparse due-parks index on ``due_shard`` + ``resume_at``; sparse stale-leases index on
``lease_shard`` + ``lease_expires_at``; sparse open-parks index on ``park_key`` + ``parked_at``, BEHAVIOUR.md §5.11).

Checkpoint chunk keys carry a per-attempt token after the 10-digit version
(``checkpoints/0000000005-<token>.json``): two writers racing for version 5 each put their own
object, so the loser can never overwrite the body the winner's item points at. The item lists
the tokens of the chunks a load reads; an object no item lists is garbage, never state. Segment
items (:mod:`archmax.stores.aws.segments`) follow the same rule, keyed by a commit attempt's token.
"""

from __future__ import annotations

import hashlib
import re
import uuid

from archmax.session.ids import folder_name

DUE_SHARDS: tuple[str, ...] = ("0", "1", "2", "3")
"""The ``due_shard`` values: a few partitions for the due-parks index, each queried by the sweep."""

_TOKEN = re.compile(r"^[0-9a-f]{8,32}$")


def normalise_prefix(prefix: str) -> str:
    """The key root for ``prefix``: ``""`` or ``"<prefix>/"`` with stray slashes removed."""
    prefix = (prefix or "").strip("/")
    return f"{prefix}/" if prefix else ""


LEASE_SHARDS: tuple[str, ...] = ("0", "1", "2", "3")
"""The ``lease_shard`` values: a few partitions for the stale-leases index, each queried by the sweep."""


def _shard(session_id: str, shards: tuple[str, ...]) -> str:
    return shards[hashlib.sha256(session_id.encode("utf-8")).digest()[0] % len(shards)]


OUTBOX_SHARDS: tuple[str, ...] = ("0", "1", "2", "3")
"""The ``outbox_shard`` values: a few partitions for the outbox-pending index, each queried by the sweep."""


def outbox_shard(session_id: str) -> str:
    """The outbox-pending shard of a session: stable, spread evenly by a hash of the id."""
    return _shard(session_id, OUTBOX_SHARDS)


PARK_SHARDS: tuple[str, ...] = ("0", "1", "2", "3")
"""The shards of each workflow in the open-parks index (its hash key is ``<workflow>#<shard>``)."""


def park_key(workflow: str, session_id: str) -> str:
    """The open-parks index hash key of a parked session: its workflow and a shard spread by a hash of the id."""
    return f"{workflow}#{_shard(session_id, PARK_SHARDS)}"


def due_shard(session_id: str) -> str:
    """The due-parks shard of a session: stable, spread evenly by a hash of the id."""
    return _shard(session_id, DUE_SHARDS)


def lease_shard(session_id: str) -> str:
    """The stale-leases shard of a session: stable, spread evenly by a hash of the id."""
    return _shard(session_id, LEASE_SHARDS)


def new_chunk_token() -> str:
    """A fresh token naming one commit attempt's chunk object."""
    return uuid.uuid4().hex[:16]


class Keys:
    """S3 keys of one store (one bucket, one prefix).

    Args:
        prefix: The key root (``""`` for the bucket root); slashes around it are ignored.
    """

    def __init__(self, prefix: str = "") -> None:
        self.root = normalise_prefix(prefix)

    def folder(self, session_id: str) -> str:
        """``<root><folder>/`` of a valid id (validates it: §4.1)."""
        return f"{self.root}{folder_name(session_id)}/"

    def file(self, session_id: str, path: str) -> str:
        """The key of a session file at a checked relative ``path``."""
        return self.folder(session_id) + path

    def chunk(self, session_id: str, version: int, token: str) -> str:
        """``<root><folder>/checkpoints/<10-digit version>-<token>.json`` (body: :mod:`archmax.stores.aws.bodies`)."""
        if not _TOKEN.match(token):
            raise ValueError(f"bad chunk token {token!r}")
        return f"{self.folder(session_id)}checkpoints/{version:010d}-{token}.json"

    def segment(self, session_id: str, token: str) -> str:
        """``<root><folder>/checkpoints/seg-<token>.json``: small deltas moved out of the item together.

        Written before issue 24 and still read; deltas now move to segment items of the sessions
        table (:mod:`archmax.stores.aws.segments`), which a snapshot's commit deletes once unlisted.
        """
        if not _TOKEN.match(token):
            raise ValueError(f"bad segment token {token!r}")
        return f"{self.folder(session_id)}checkpoints/seg-{token}.json"

    def spec(self, spec_hash: str) -> str:
        """``<root>_specs/<hash>.json`` of a checked hash."""
        return f"{self.root}_specs/{spec_hash}.json"
