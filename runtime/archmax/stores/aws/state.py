"""The AWS store's state: its clients, names and the per-instance caches every other part reads.

Rule source: DESIGN.md §3 (AWS store). :class:`AwsState` is the base of the store's parts, each in
its own module by job: :mod:`~archmax.stores.aws.reads` (item and chunk reads, guarded reads,
the held-mail hint), :mod:`~archmax.stores.aws.commit` (the conditional commit),
:mod:`~archmax.stores.aws.files` (session files, delete, specs, the held-mail note) and
:mod:`~archmax.stores.aws.store` (listings; the assembled ``AwsStore``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from archmax.stores.aws.clients import LazyClient
from archmax.stores.aws.layout import Keys
from archmax.stores.aws.plan import Plan, Segment

CHUNK_CACHE_BYTES = 32 * 1024 * 1024
PLANS_CACHE_SIZE = 1024
DELETE_BATCH = 1000


class AwsState:
    """What every part of ``AwsStore`` shares; see :class:`~archmax.stores.aws.store.AwsStore` for the arguments."""

    def __init__(
        self,
        table_name: str,
        bucket: str,
        prefix: str = "",
        *,
        dynamodb_client: Any = None,
        s3_client: Any = None,
        finished_ttl_days: int | None = None,
    ) -> None:
        # Clients the host did not inject are built on first use (a cold start builds none it does not need).
        dynamodb_client = dynamodb_client if dynamodb_client is not None else LazyClient("dynamodb")
        s3_client = s3_client if s3_client is not None else LazyClient("s3")
        self.table_name = table_name
        self.bucket = bucket
        self.keys = Keys(prefix)
        self.finished_ttl_days = finished_ttl_days
        self._ddb = dynamodb_client
        self._s3 = s3_client
        self._lock = threading.Lock()
        # Chunk objects are immutable (unique keys), so their bytes can be kept without invalidation.
        self._chunks: OrderedDict[str, bytes] = OrderedDict()
        self._chunk_bytes = 0  # bytes of the chunks and segment items kept
        # Segment items are immutable too (unique tokens): kept by (session id, token), in the same byte budget.
        self._segment_cache: OrderedDict[tuple[str, str], Segment] = OrderedDict()
        # The plan of the version last seen per session: lets a commit skip a GetItem and send only changes.
        self._plans: OrderedDict[str, Plan] = OrderedDict()
        # Sessions a checked read found absent (GuardedReads, issue 10) and no commit of this instance created since.
        self._absent: OrderedDict[str, None] = OrderedDict()
        # Per thread: (session id, version, quarantine hint) of the item this thread last read (held_mail_hint).
        self._read = threading.local()
