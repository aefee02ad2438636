"""The AWS store's files (S3 objects under the session folder), delete, spec snapshots and the held-mail note.

Rule source: BEHAVIOUR.md §9.1 (files), §9.4 (spec snapshots create-only), §9.5 (placement's
take-back); issue 10 / issue 13 item 1 (the held-mail hint on the session item).
"""

from __future__ import annotations

import builtins
import json
from typing import Any

from archmax.errors import CommitConflictError, PathExistsError, StoreError
from archmax.session.ids import validate_session_id
from archmax.stores import common as _common
from archmax.stores.aws.commit import AwsCommits
from archmax.stores.aws.errors import aws_call
from archmax.stores.aws.item import QUARANTINE_HINT
from archmax.stores.aws.plan import entry_item_segment
from archmax.stores.aws.segments import delete_segments
from archmax.stores.aws.state import DELETE_BATCH


class AwsFiles(AwsCommits):
    """Files, delete, specs and the held-mail note of :class:`~archmax.stores.aws.store.AwsStore`."""

    def get(self, session_id: str, path: str) -> bytes | None:
        """A session file's bytes, or ``None`` (§9.1).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path or one inside ``checkpoints/``.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        path = _common.check_file_path(path, session_id)
        return self._get_object(self.keys.file(session_id, path), session_id=session_id)

    def seed(self, session_id: str, files: dict[str, str], create_only: bool = False) -> None:
        """Write text files as UTF-8; every path is checked before any is written (§9.1).

        With ``create_only`` each object is put with ``If-None-Match: *``, after a check that no
        path exists (as a file, or as a folder holding files) so a refusal normally writes none.
        S3 has no multi-object transaction: a path created between that check and the puts is
        still refused, but files put before it stay.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe path (nothing is written).
            PathExistsError: with ``create_only``, for a path that exists.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        self._write(session_id, _common.encode_texts(session_id, files), create_only)

    def upload_files(self, session_id: str, files: dict[str, bytes], create_only: bool = False) -> None:
        """Write raw bytes; every path is checked before any is written (§9.1, as :meth:`seed`).

        Raises:
            InvalidSessionIdError / InvalidFilePathError / PathExistsError / StoreError: as :meth:`seed`.
        """
        validate_session_id(session_id)
        self._write(session_id, _common.check_bytes(session_id, files), create_only)

    def list_files(self, session_id: str, prefix: str = "") -> builtins.list[str]:
        """Paths of the session's files under the folder ``prefix`` (all for ``""``), sorted; never checkpoints.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            InvalidFilePathError: for an unsafe prefix.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        folder = _common.check_prefix(prefix, session_id)
        root = self.keys.folder(session_id)
        paths = [key[len(root) :] for key in self._keys_under(root + (folder + "/" if folder else ""), session_id)]
        return sorted(p for p in paths if p.split("/", 1)[0] != _common.CHECKPOINTS)

    def remove_files(self, session_id: str, paths: builtins.list[str]) -> None:
        """Remove session files (not checkpoints); a path that is absent is skipped.

        Not part of the store protocol: the engine uses it, where a store has it, to take back the
        files a firing placed before its claim failed (BEHAVIOUR.md §9.5; issue 9 item 7).

        Raises:
            InvalidSessionIdError / InvalidFilePathError: for a bad id or an unsafe path (nothing removed).
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        keys = [self.keys.file(session_id, _common.check_file_path(path, session_id)) for path in paths]
        for key in keys:  # a firing's few files: one DeleteObject each (absent keys succeed)
            aws_call(self._s3.delete_object, operation="delete", session_id=session_id, Bucket=self.bucket, Key=key)

    # ------------------------------------------------------------------ delete, specs

    def delete(self, session_id: str) -> bool:
        """Remove the item, the segment items it listed, then every object under the session folder; True when anything existed.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        old = aws_call(
            self._ddb.delete_item,
            operation="delete",
            session_id=session_id,
            TableName=self.table_name,
            Key={"pk": {"S": session_id}},
            ReturnValues="ALL_OLD",
        )
        existed = bool(old.get("Attributes"))
        listed = old.get("Attributes", {}).get("chunks", {}).get("L", [])
        segments = [found[0] for e in listed if (found := entry_item_segment(e)) is not None]
        delete_segments(self._ddb, self.table_name, session_id, segments)  # the items listed (issue 24)
        keys = self._keys_under(self.keys.folder(session_id), session_id)
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start : start + DELETE_BATCH]
            answer = aws_call(
                self._s3.delete_objects,
                operation="delete",
                session_id=session_id,
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
            )
            if answer.get("Errors"):
                raise StoreError(f"S3 refused to delete {len(answer['Errors'])} objects", session_id=session_id)
        with self._lock:
            self._plans.pop(session_id, None)
        return existed or bool(keys)

    def get_spec(self, spec_hash: str) -> dict[str, Any] | None:
        """A spec snapshot, or ``None`` (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
            StoreError: on an AWS failure or a snapshot that is not JSON.
        """
        data = self._get_object(self.keys.spec(_common.check_spec_hash(spec_hash)))
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError as exc:
            raise StoreError(f"spec snapshot {spec_hash} is not JSON: {exc}") from exc

    def put_spec(self, spec_hash: str, doc: dict[str, Any]) -> bool:
        """Write ``_specs/<hash>.json`` create-only (``If-None-Match: *``); False when it existed (§9.4).

        Raises:
            InvalidFilePathError: for a hash that is not a safe name.
            StoreError: on an AWS failure.
        """
        key = self.keys.spec(_common.check_spec_hash(spec_hash))
        try:
            aws_call(
                self._s3.put_object,
                operation="put_spec",
                path=key,
                Bucket=self.bucket,
                Key=key,
                Body=_common.spec_bytes(doc),
                ContentType="application/json",
                IfNoneMatch="*",
            )
        except PathExistsError:
            return False
        return True

    # ------------------------------------------------------------------ held mail note (issue 10, issue 13 item 1)

    def note_held_mail(self, session_id: str, delivery_id: str, *, held: bool) -> None:
        """Add ``delivery_id`` to the item's ``quarantine_hint`` string set (``held``), or take it out: one UpdateItem.

        :mod:`archmax.inbound.quarantine` adds an id before it writes the held mail's record and takes
        it out after the release stamp, so the hint is a superset of the held mail and a summary
        whose item has no hint needs no S3 listing (:meth:`held_mail_hint`). The update touches only
        the hint (never ``version``): a racing commit is not disturbed, and commits never drop it.
        A session with no item is left alone: only sessions with a checkpoint hold mail (the send
        handler's admission), and ``sessions.get`` of a session with no item is ``None`` anyway.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        try:
            aws_call(
                self._ddb.update_item,
                operation="quarantine_hint",
                session_id=session_id,
                TableName=self.table_name,
                Key={"pk": {"S": session_id}},
                UpdateExpression=f"{'ADD' if held else 'DELETE'} #hint :ids",
                ConditionExpression="attribute_exists(#version)",
                ExpressionAttributeNames={"#hint": QUARANTINE_HINT, "#version": "version"},
                ExpressionAttributeValues={":ids": {"SS": [delivery_id]}},
            )
        except CommitConflictError:
            pass  # no session item (deleted meanwhile): nothing to hint

    # ------------------------------------------------------------------ internals

    def _exists(self, key: str, session_id: str) -> bool:
        answer = aws_call(
            self._s3.head_object,
            operation="exists",
            missing_ok=True,
            session_id=session_id,
            Bucket=self.bucket,
            Key=key,
        )
        return answer is not None

    def _keys_under(self, key_prefix: str, session_id: str, *, limit: int | None = None) -> builtins.list[str]:
        keys: builtins.list[str] = []
        params: dict[str, Any] = {"Bucket": self.bucket, "Prefix": key_prefix}
        if limit is not None:
            params["MaxKeys"] = limit
        while True:
            page = aws_call(self._s3.list_objects_v2, operation="list_files", session_id=session_id, **params)
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
            if limit is not None and len(keys) >= limit:
                return keys[:limit]
            if not page.get("IsTruncated"):
                return keys
            params["ContinuationToken"] = page["NextContinuationToken"]

    def _write(self, session_id: str, files: dict[str, bytes], create_only: bool) -> None:
        keys = {path: self.keys.file(session_id, path) for path in files}
        if create_only:
            for path, key in keys.items():
                # A single file's own existence is settled by If-None-Match below; several are checked
                # first so a refusal normally writes none. A folder of that name is always checked.
                if (len(keys) > 1 and self._exists(key, session_id)) or self._keys_under(
                    key + "/", session_id, limit=1
                ):
                    raise PathExistsError(path, session_id=session_id)
        for path, data in files.items():
            extra: dict[str, Any] = {"IfNoneMatch": "*"} if create_only else {}
            aws_call(
                self._s3.put_object,
                operation="write",
                session_id=session_id,
                path=path,
                Bucket=self.bucket,
                Key=keys[path],
                Body=data,
                **extra,
            )
