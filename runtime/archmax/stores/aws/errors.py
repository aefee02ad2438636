"""The one boundary where botocore errors become archmax errors (CONVENTIONS: foreign errors stop at one boundary).

Rule source: CONVENTIONS.md ("one small mapping turns error codes into archmax errors, raise ... from
exc"), BEHAVIOUR.md §9.1 (conflicts, create-only writes, missing files read as ``None``).

| AWS error code                                   | kind       | archmax result                       |
| ------------------------------------------------ | ---------- | ------------------------------------ |
| ConditionalCheckFailedException                  | conflict   | :class:`CommitConflictError`         |
| PreconditionFailed (S3 ``If-None-Match: *``)     | exists     | :class:`PathExistsError`             |
| NoSuchKey, NotFound, 404                         | missing    | ``None`` (the caller reads "absent") |
| ThrottlingException, SlowDown, ...               | throttled  | :class:`StoreError` ("throttled")    |
| anything else, and every non-HTTP botocore error | other      | :class:`StoreError`                  |

Nothing outside ``archmax.stores.aws`` imports botocore because of this module.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # botocore is imported when a call fails: a handler's import makes no AWS call (issue 10)
    from botocore.exceptions import ClientError

from archmax.errors import ArchmaxError, CommitConflictError, PathExistsError, StoreError


class ErrorKind(StrEnum):
    """What an AWS error code means to a store."""

    CONFLICT = "conflict"
    EXISTS = "exists"
    MISSING = "missing"
    THROTTLED = "throttled"
    OTHER = "other"


ERROR_KINDS: dict[str, ErrorKind] = {
    "ConditionalCheckFailedException": ErrorKind.CONFLICT,
    "PreconditionFailed": ErrorKind.EXISTS,
    "NoSuchKey": ErrorKind.MISSING,
    "NotFound": ErrorKind.MISSING,
    "404": ErrorKind.MISSING,
    "ThrottlingException": ErrorKind.THROTTLED,
    "Throttling": ErrorKind.THROTTLED,
    "ProvisionedThroughputExceededException": ErrorKind.THROTTLED,
    "RequestLimitExceeded": ErrorKind.THROTTLED,
    "SlowDown": ErrorKind.THROTTLED,
    "TooManyRequestsException": ErrorKind.THROTTLED,
}
"""Every AWS error code the store gives a meaning to; any other code is :attr:`ErrorKind.OTHER`."""


def error_code(exc: ClientError) -> str:
    """The ``Error.Code`` of a ``ClientError`` (``""`` when the response has none)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def error_kind(exc: ClientError) -> ErrorKind:
    """The :class:`ErrorKind` of a ``ClientError``, looked up in :data:`ERROR_KINDS`."""
    return ERROR_KINDS.get(error_code(exc), ErrorKind.OTHER)


def conflict_item(conflict: CommitConflictError) -> dict[str, Any] | None:
    """The item a failed conditional write returned (``ALL_OLD``: no extra call), or ``None``.

    The store writes no transaction (issue 24: nothing rides a commit), so this is a plain write's ``Item``.
    """
    response = getattr(conflict.__cause__, "response", None)
    if not isinstance(response, dict):
        return None
    item = response.get("Item")
    return item if isinstance(item, dict) and item else None


def found_in_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a conflict reports about the stored item: ``{version, status, lease_owner}`` (those present), or None."""
    if not item:
        return None
    found: dict[str, Any] = {}
    if "version" in item:
        found["version"] = int(item["version"]["N"])
    for name in ("status", "lease_owner"):
        if name in item:
            found[name] = item[name]["S"]
    return found


def map_client_error(
    exc: ClientError,
    *,
    operation: str,
    session_id: str | None = None,
    expected_version: int | None = None,
    path: str | None = None,
) -> ArchmaxError | None:
    """Turn one ``ClientError`` into the archmax error a caller sees, or ``None`` for "absent".

    Args:
        exc: The botocore error.
        operation: What the store was doing (``"commit"``, ``"get"``, ...), for the message.
        session_id: The session concerned, carried by the error.
        expected_version: For a commit, the version the writer read.
        path: For a file write, the session-relative path (or the key) concerned.

    Returns:
        The archmax error to raise (``raise mapped from exc``), or ``None`` when the code means the
        object or item does not exist.
    """
    kind = error_kind(exc)
    if kind is ErrorKind.CONFLICT:
        return CommitConflictError(
            session_id or "",
            expected_version if expected_version is not None else -1,
            found_in_item(cast("dict[str, Any] | None", exc.response.get("Item"))),
        )
    if kind is ErrorKind.EXISTS:
        return PathExistsError(path or "", session_id=session_id)
    if kind is ErrorKind.MISSING:
        return None
    what = "throttled" if kind is ErrorKind.THROTTLED else "failed"
    return StoreError(f"AWS {operation} {what}: {error_code(exc) or 'unknown error'}: {exc}", session_id=session_id)


def aws_call(
    method: Callable[..., Any],
    /,
    *,
    operation: str,
    missing_ok: bool = False,
    session_id: str | None = None,
    expected_version: int | None = None,
    path: str | None = None,
    **params: Any,
) -> Any:
    """Call one boto3 client method with every botocore error mapped (see :func:`map_client_error`).

    Args:
        method: A bound client method, e.g. ``s3.get_object``.
        operation: What the store is doing, for messages.
        missing_ok: Return ``None`` instead of raising when the code means "absent".
        session_id: The session, carried by the raised error.
        expected_version: The version a commit expected, carried by a conflict.
        path: The session file involved, carried by the raised error.
        **params: The request parameters.

    Returns:
        The response, or ``None`` for an absent object/item when ``missing_ok``.

    Raises:
        CommitConflictError: a DynamoDB condition failed.
        PathExistsError: an S3 create-only write found the key.
        StoreError: throttling, an absent object without ``missing_ok``, or any other failure.
    """
    try:
        return method(**params)
    except Exception as exc:
        from botocore.exceptions import BotoCoreError, ClientError

        if isinstance(exc, ClientError):
            _raise_mapped(exc, operation, missing_ok, session_id, expected_version, path)
            return None
        if isinstance(exc, BotoCoreError):
            raise StoreError(f"AWS {operation} failed: {exc}", session_id=session_id) from exc
        raise


def _raise_mapped(
    exc: ClientError,
    operation: str,
    missing_ok: bool,
    session_id: str | None,
    expected_version: int | None,
    path: str | None,
) -> None:
    """Raise what :func:`map_client_error` makes of ``exc``; return only for "absent" with ``missing_ok``."""
    mapped = map_client_error(
        exc, operation=operation, session_id=session_id, expected_version=expected_version, path=path
    )
    if mapped is None:
        if missing_ok:
            return
        mapped = StoreError(f"AWS {operation} found nothing: {exc}", session_id=session_id)
    raise mapped from exc
