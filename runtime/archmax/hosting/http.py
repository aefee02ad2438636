"""The one table from archmax errors to HTTP statuses, and the JSON body every handler answers with.

Rule source: DESIGN.md §4 ("Bad input gets a 4xx with a JSON body naming the problem"), issue 4
item 3 ("typed refusals as 409/400 JSON naming the error class"), BEHAVIOUR.md §3.11 (error table).

An error's status is that of the nearest class in its MRO listed in :data:`ERROR_STATUS`; the
root :class:`ArchmaxError` (500) catches the rest. Anything that is not an archmax error is a bug:
500 with a generic message, so nothing internal leaks to a caller.
"""

from __future__ import annotations

from typing import Any

from archmax import errors as e

ERROR_STATUS: dict[type[e.ArchmaxError], int] = {
    # the caller sent something unusable: 400
    e.CallerError: 400,
    e.InvalidSessionIdError: 400,
    e.InvalidSessionPathError: 400,
    e.InvalidVariableNameError: 400,
    e.InvalidFilePathError: 400,
    e.InvalidDeliveryIdError: 400,
    e.InvalidEventError: 400,
    e.EmptyMessageError: 400,
    e.MissingDeliveryTriggerError: 400,
    e.UnknownTriggerError: 400,
    e.MisspeltTriggerError: 400,
    e.UnknownSessionTriggerError: 400,
    e.InvalidDecisionTargetError: 400,
    e.AttachmentLimitError: 413,
    e.UnknownQuarantineError: 404,
    # the session (or workflow) is not in a state that allows it: 409
    e.SessionStateError: 409,
    e.SessionNotAwaitingInputError: 409,
    e.SessionNotParkedError: 409,
    e.SessionNotResumableError: 409,
    e.CommitConflictError: 409,
    e.WorkflowDisabledError: 409,
    e.OtherWorkflowSessionError: 409,
    # applied the first time: a redelivery is a success that changed nothing
    e.DuplicateDeliveryError: 200,
    # the deployment is wrong (workflow, store capability): 500
    e.WorkflowError: 500,
    e.InfrastructureError: 500,
    e.SessionStoreCapabilityError: 500,
    e.SessionIdMismatchError: 500,
    e.ConfigurationError: 500,
    # a dependency failed: the store 503 (retry), the model provider 502 / 503 when throttled
    e.StoreError: 503,
    e.OutboundError: 502,
    e.ModelError: 502,
    e.ModelThrottledError: 503,
    e.ArchmaxError: 500,
}
"""Error class → HTTP status; looked up along the raised error's MRO (nearest class wins)."""


def status_of(exc: BaseException) -> int:
    """The HTTP status for an error: the nearest class of its MRO in :data:`ERROR_STATUS`, else 500.

    An :class:`~archmax.errors.InvalidEventError` carries its own status (400, or 415 for a media type).
    A delivery, decision or reply to a session that does not exist (no status) is 404, not 409.
    """
    if isinstance(exc, e.InvalidEventError):
        return int(exc.status)
    missing = exc.status is None and not exc.lost_race if isinstance(exc, e.SessionStateError) else False
    if isinstance(exc, (e.SessionNotAwaitingInputError, e.SessionNotParkedError)) and missing:
        return 404  # the session does not exist: not a conflict with its state (issue 15)
    for cls in type(exc).__mro__:
        if cls in ERROR_STATUS:
            return ERROR_STATUS[cls]
    return 500


def error_response(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The status and JSON body a handler answers an error with.

    Args:
        exc: The error raised by an operation.

    Returns:
        ``(status, {"error": <class name>, "message": <text>, "session_id": <id>?})``; ``session_id``
        only when the error names one. A non-archmax error gives ``(500, {"error": "InternalError",
        "message": "internal error"})``: its text is not for callers.

    Example:
        >>> error_response(e.EmptyMessageError("chat-1"))
        (400, {'error': 'EmptyMessageError', 'message': "session 'chat-1': the message is empty", 'session_id': 'chat-1'})
    """
    if not isinstance(exc, e.ArchmaxError):
        return 500, {"error": "InternalError", "message": "internal error"}
    body: dict[str, Any] = {"error": type(exc).__name__, "message": str(exc)}
    if exc.session_id is not None:
        body["session_id"] = exc.session_id
    return status_of(exc), body
