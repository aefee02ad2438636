"""Inbox bodies in S3: the claim check that lets a firing larger than a DynamoDB item wait in the inbox.

Rule source: the seed (an email's attachments are placed as session files; no event is lost),
DESIGN.md §3 "Inbox" (every firing is durably inboxed before it is acknowledged) and §3 Storage
(S3 holds what does not fit an item), and DynamoDB's 400 KB item limit. When a firing's item would
be too large, :class:`~archmax.hosting.inbox_dynamo.DynamoInbox` writes the firing here first and
keeps only a pointer (the key and the body's sha256) in its item.

Key: ``<prefix>/.inbox/<session folder>/<sha256(delivery id)>-<sha256(body)[:32]>.json``

* ``.inbox``: a session folder never starts with ``.`` (BEHAVIOUR.md §9.2 escapes a leading ``.``
  as ``%2E``), so no session id's folder can hold, list, delete or expire these objects. (A
  plain ``inbox/`` would be the folder of the valid session id ``inbox``.)
* ``<session folder>``: :func:`archmax.session.ids.folder_name`, the store's own folder of the id.
* the delivery id is hashed (it is untrusted text of up to 512 bytes), and the body's hash is part
  of the name, so one key always holds one content: the write is create-only
  (``If-None-Match: *``), and "it exists already" means the same bytes are there (a duplicate put,
  or a put whose DynamoDB write failed and is now retried). A second firing that reuses a delivery
  id with other content gets its own object and can never overwrite the body another item points at.

The template's lifecycle rule expires ``<prefix>/.inbox/``; bodies are not deleted when an item is
marked done, since ``Inbox.get`` still answers done items until their TTL removes them.
"""

from __future__ import annotations

import hashlib
from typing import Any

from archmax.errors import StoreError
from archmax.session.ids import folder_name, validate_delivery_id

INBOX_FOLDER = ".inbox"
"""The folder under the store prefix that holds inbox bodies (never a session folder: see above)."""

_EXISTS = {"PreconditionFailed"}
_MISSING = {"NoSuchKey", "NotFound", "404"}


def body_key(prefix: str, session_id: str, delivery_id: str, body: bytes) -> str:
    """The S3 key of one firing body.

    Args:
        prefix: The store prefix (``SESSIONS_PREFIX``, e.g. ``"sessions"``); ``""`` for the bucket root.
        session_id: A session id (validated by :func:`folder_name`).
        delivery_id: The item's delivery id (validated here).
        body: The serialised firing.

    Returns:
        ``<prefix>/.inbox/<folder>/<64 hex>-<32 hex>.json``.

    Raises:
        InvalidSessionIdError, InvalidDeliveryIdError: before any key is built.
    """
    validate_delivery_id(delivery_id, session_id=session_id)
    root = prefix.strip("/")
    root = f"{root}/" if root else ""
    id_hash = hashlib.sha256(delivery_id.encode("utf-8")).hexdigest()
    content_hash = hashlib.sha256(body).hexdigest()[:32]
    return f"{root}{INBOX_FOLDER}/{folder_name(session_id)}/{id_hash}-{content_hash}.json"


class BodyStore:
    """Create-only writes and verified reads of firing bodies in one bucket.

    Args:
        client: A boto3 S3 client.
        bucket: The sessions bucket (``SESSIONS_BUCKET``).
        prefix: The store prefix the bodies live under (``SESSIONS_PREFIX``).
    """

    def __init__(self, client: Any, bucket: str, prefix: str = "sessions") -> None:
        self._s3 = client
        self.bucket = bucket
        self.prefix = prefix

    def put(self, session_id: str, delivery_id: str, body: bytes) -> tuple[str, str]:
        """Write ``body`` create-only; an existing object under its key holds the same bytes, so it is kept.

        Args:
            session_id: The item's session id.
            delivery_id: The item's delivery id.
            body: The serialised firing (bytes, any size S3 takes in one put).

        Returns:
            ``(key, sha256 hex of body)``: what the item points at.

        Raises:
            StoreError: any S3 failure other than "exists" (the caller then writes no item).
        """
        from botocore.exceptions import BotoCoreError, ClientError

        key = body_key(self.prefix, session_id, delivery_id, body)
        try:
            self._s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType="application/json",
                IfNoneMatch="*",
            )
        except ClientError as exc:
            if _code(exc) not in _EXISTS:
                raise StoreError(
                    f"cannot write the inbox body s3://{self.bucket}/{key}: {exc}", session_id=session_id
                ) from exc
        except BotoCoreError as exc:
            raise StoreError(
                f"cannot write the inbox body s3://{self.bucket}/{key}: {exc}", session_id=session_id
            ) from exc
        return key, hashlib.sha256(body).hexdigest()

    def get(self, key: str, sha256: str, *, session_id: str) -> bytes:
        """Read a body an item points at and check it is the one written.

        Args:
            key: The item's ``body_key``.
            sha256: The item's ``body_sha256``.
            session_id: For the error's context.

        Returns:
            The body bytes.

        Raises:
            StoreError: the object is missing (retryable: the item stays pending), unreadable, or its
                bytes are not the ones the item names.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            data = self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            what = "is missing; the item stays pending" if _code(exc) in _MISSING else f"cannot be read: {exc}"
            raise StoreError(f"the inbox body s3://{self.bucket}/{key} {what}", session_id=session_id) from exc
        if hashlib.sha256(data).hexdigest() != sha256:
            raise StoreError(
                f"the inbox body s3://{self.bucket}/{key} is not the one its item names (sha256 differs)",
                session_id=session_id,
            )
        return data


def _code(exc: Exception) -> str:
    """The AWS error code of a botocore ``ClientError`` (``""`` when it has none)."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))
