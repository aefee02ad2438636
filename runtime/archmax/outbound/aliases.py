"""Aliases: every Message-ID we sent under, mapped to the session that sent it.

Rule source: issue 12 item 2 (our Message-ID and the one SES assigned are recorded as aliases of
the session, so a reply threaded only to them lands in the same session). An alias is a small
create-only record keyed by ``sha256(<normalised id>)``, beside the sessions it points into:

* filesystem: ``<store root>/.aliases/<sha256>.json``;
* S3: ``<prefix>/.aliases/<sha256>.json`` in the sessions bucket;
* memory: a dict per store.

``.aliases``, never ``aliases``: session folders escape a leading ``.`` (BEHAVIOUR.md §9.2), so no
session id can name this folder. Ids are hashed, never used as paths: they are untrusted header text.
"""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from pathlib import Path
from typing import Any, Protocol

from archmax.errors import PathExistsError, StoreError
from archmax.inbound.email_ids import normalise_message_id
from archmax.session.ids import validate_session_id

FOLDER = ".aliases"


class AliasIndex(Protocol):
    """Message-ID -> session id."""

    def get(self, message_id: str) -> str | None:
        """The session an id we sent under belongs to, or ``None`` (also for an unusable id)."""

    def put(self, message_id: str, session_id: str) -> None:
        """Record ``message_id`` as an alias of ``session_id`` (idempotent)."""


def alias_key(message_id: str) -> str | None:
    """``<sha256 hex of the normalised id>.json``, or ``None`` when the id is unusable."""
    normal = normalise_message_id(message_id)
    if normal is None:
        return None
    return hashlib.sha256(normal.encode("utf-8")).hexdigest() + ".json"


def _doc(message_id: str, session_id: str) -> bytes:
    return json.dumps({"alias": normalise_message_id(message_id), "session_id": session_id}).encode("utf-8")


def _session_of(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return validate_session_id(json.loads(data)["session_id"])
    except Exception:  # noqa: BLE001 - an unreadable alias threads nothing
        return None


class MemoryAliases:
    """Aliases in a dict (the memory store's)."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def get(self, message_id: str) -> str | None:
        """See :class:`AliasIndex`."""
        key = alias_key(message_id)
        return self._ids.get(key) if key else None

    def put(self, message_id: str, session_id: str) -> None:
        """See :class:`AliasIndex`."""
        key = alias_key(message_id)
        if key:
            self._ids.setdefault(key, validate_session_id(session_id))


class FileAliases:
    """Aliases under ``<root>/.aliases/`` (the filesystem store's root)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.folder = Path(root) / FOLDER

    def get(self, message_id: str) -> str | None:
        """See :class:`AliasIndex`."""
        key = alias_key(message_id)
        if key is None:
            return None
        try:
            return _session_of((self.folder / key).read_bytes())
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read alias {message_id!r}: {exc}") from exc

    def put(self, message_id: str, session_id: str) -> None:
        """See :class:`AliasIndex`. Written to a temporary file and linked in: a reader never sees half of one."""
        key = alias_key(message_id)
        if key is None:
            return
        target = self.folder / key
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temp = self.folder / f".{key}.{os.getpid()}.tmp"
            temp.write_bytes(_doc(message_id, validate_session_id(session_id)))
            try:
                os.link(temp, target)  # create-only: the first writer's alias stands
            except FileExistsError:
                pass
            finally:
                temp.unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot record alias {message_id!r}: {exc}") from exc


class S3Aliases:
    """Aliases under ``<prefix>/.aliases/`` in the sessions bucket.

    Args:
        client: A boto3 S3 client.
        bucket: The sessions bucket.
        prefix: The sessions prefix (``SESSIONS_PREFIX``), ``""`` for the bucket root.
    """

    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        self._s3 = client
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""

    def _key(self, name: str) -> str:
        return f"{self.prefix}{FOLDER}/{name}"

    def get(self, message_id: str) -> str | None:
        """See :class:`AliasIndex`.

        Raises:
            StoreError: S3 failed (other than a missing object).
        """
        from archmax.stores.aws.errors import aws_call

        name = alias_key(message_id)
        if name is None:
            return None
        answer = aws_call(
            self._s3.get_object, operation="read alias", missing_ok=True, Bucket=self.bucket, Key=self._key(name)
        )
        data = answer["Body"].read() if answer is not None else None
        return _session_of(data)

    def put(self, message_id: str, session_id: str) -> None:
        """See :class:`AliasIndex`; create-only (``If-None-Match: *``), so the first writer's alias stands.

        Raises:
            StoreError: S3 failed.
        """
        from archmax.stores.aws.errors import aws_call

        name = alias_key(message_id)
        if name is None:
            return
        try:
            aws_call(
                self._s3.put_object,
                operation="record alias",
                Bucket=self.bucket,
                Key=self._key(name),
                Body=_doc(message_id, validate_session_id(session_id)),
                ContentType="application/json",
                IfNoneMatch="*",
            )
        except PathExistsError:
            pass  # recorded before (a resend): the first alias stands


_MEMORY: weakref.WeakKeyDictionary[Any, MemoryAliases] = weakref.WeakKeyDictionary()


def aliases_for(store: Any, *, s3_client: Any = None, prefix: str | None = None) -> AliasIndex:
    """The alias index kept beside ``store``'s sessions.

    Args:
        store: A store whose ``location`` (:class:`~archmax.stores.base.StoreLocation`) names a
            folder (``FilesystemStore``: ``<root>/.aliases/``) or a bucket (``AwsStore``, with
            ``s3_client``: ``<key root>.aliases/`` in it); any other store (a ``MemoryStore``):
            aliases in this process's memory, one index per store object.
        s3_client: For a store in a bucket: the S3 client to use.
        prefix: For a store in a bucket: its key prefix (``SESSIONS_PREFIX``); ``None`` takes the
            store's own (``location.key_root``), so the CLI's index is the one the functions keep.
    """
    location = store.location
    if location.root is not None:
        return FileAliases(location.root)
    if location.bucket is not None and s3_client is not None:
        if prefix is None:  # the store's own key root: `.aliases/` sits beside its session folders
            prefix = location.key_root
        return S3Aliases(s3_client, location.bucket, prefix)
    try:
        return _MEMORY.setdefault(store, MemoryAliases())
    except TypeError:  # a store object that cannot be a weak key: an index of its own
        return MemoryAliases()
