"""boto3 clients made on first use, so importing a handler builds none (issue 10, cold import).

Building a client loads its service model (tens of milliseconds each); a Lambda function that
builds three at import pays for all three before its first request, even when that request
needs one. :class:`LazyClient` stands in for a client and builds the real one the first time
any attribute is read.

Rule source: DESIGN.md §7 (handler cold-import time against ``import boto3`` alone);
CONVENTIONS.md (botocore errors stop at one boundary: a failed build is a ``StoreError``).
"""

from __future__ import annotations

import threading
from typing import Any


class LazyClient:
    """A boto3 client for ``service``, built with ``boto3.client(service)`` when first used.

    Attribute reads go to the real client (``lazy.get_item(...)``, ``lazy.meta.events``). Safe to
    share between threads: the client is built once.

    Raises (on first use):
        StoreError: boto3 could not build the client (no region, a bad profile).
    """

    def __init__(self, service: str) -> None:
        self._service = service
        self._client: Any = None
        self._lock = threading.Lock()

    def _build(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3

                from archmax.stores.aws.errors import aws_call

                self._client = aws_call(boto3.client, operation="client setup", service_name=self._service)
            return self._client

    def __getattr__(self, name: str) -> Any:
        client = self._client if self._client is not None else self._build()
        return getattr(client, name)

    def __repr__(self) -> str:
        state = "built" if self._client is not None else "not built yet"
        return f"LazyClient({self._service!r}, {state})"
