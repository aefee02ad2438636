"""The error → HTTP status table and the JSON body (DESIGN.md §4; issue 4 item 3)."""

from __future__ import annotations

import inspect
import json

import pytest

from archmax import errors as e
from archmax.hosting.http import ERROR_STATUS, error_response, status_of

# One instance of every error class in errors.py, with the status a caller must see.
CASES = [
    (e.InvalidSessionIdError("../x", "no '..'"), 400),
    (e.InvalidSessionPathError("a.{", "the trigger", "unclosed"), 400),
    (e.InvalidVariableNameError("Bad", "sent to session 's'", session_id="s"), 400),
    (e.InvalidFilePathError("../p", "escapes", session_id="s"), 400),
    (e.InvalidDeliveryIdError("~drain", "reserved", session_id="s"), 400),
    (e.InvalidEventError("no body"), 400),
    (e.InvalidEventError("form bodies are not accepted", status=415), 415),
    (e.EmptyMessageError("s"), 400),
    (e.MissingDeliveryTriggerError("s"), 400),
    (e.UnknownTriggerError("t", ["a"], session_id="s"), 400),
    (e.UnknownSessionTriggerError("t", ["a"], session_id="s"), 400),
    (e.MisspeltTriggerError("email_replly", ["email_reply"], "email_reply", session_id="s"), 400),
    (e.UnknownArtifactError("x", ["trail"], session_id="s"), 400),
    (e.InvalidDecisionTargetError("x", ["a"], session_id="s"), 400),
    (e.UnauthenticatedEventError("no signature"), 401),
    (e.AttachmentLimitError("attachments", 20, 500, session_id="s"), 413),
    (e.UnknownQuarantineError("s", "ses-1"), 404),
    (e.WorkflowDisabledError("wf", session_id="s"), 409),
    (e.OtherWorkflowSessionError("s", "y", "x"), 409),
    (e.SessionNotAwaitingInputError("s", "running"), 409),
    (e.SessionNotParkedError("s", "completed"), 409),
    (e.SessionNotResumableError("s", "running"), 409),
    (e.DeliveryQueuedError("s", "ses-1"), 409),
    (e.CommitConflictError("s", 3, {"version": 4}), 409),
    (e.DuplicateDeliveryError("s", "ses-1"), 200),
    (e.WorkflowSpecError([e.Diagnostic("states", "missing")]), 500),
    (e.ReservedToolNameError("archmax_x"), 500),
    (e.MissingHookExecutorError("wf", ["webhook"]), 500),
    (e.HookToolForbiddenError("secret", "root forbid lists remove it"), 500),
    (e.CaseSpecError("a.test.yaml", "bad"), 500),
    (e.SessionStoreCapabilityError("upload_files", session_id="s"), 500),
    (e.SessionIdMismatchError("order-1", "Order-1"), 500),
    (e.ConfigurationError("no secret", setting="ARCHMAX_REPLY_SECRET"), 500),
    (e.StoreError("disk full"), 503),
    (e.PathExistsError("scratchpad/a"), 503),
    (e.OutboundError("SMTP refused the mail"), 502),
    (e.UnsendableError("no From address"), 502),
    (e.ModelError("provider down"), 502),
    (e.ModelConfigurationError("no model"), 502),
    (e.ModelAccessError("denied"), 502),
    (e.ModelNotFoundError("nope"), 502),
    (e.ModelRequestError("bad request"), 502),
    (e.ModelThrottledError("slow down"), 503),
    (e.ModelScriptError("exhausted"), 502),
    (e.ModelTruncatedError("cut off at max_tokens"), 502),
    (e.ArchmaxError("something"), 500),
    # the group roots: a new subclass nobody listed falls back to its group's status
    (e.CallerError("bad input"), 400),
    (e.SessionStateError("not now", session_id="s", status="running"), 409),
    (e.WorkflowError("fix the workflow"), 500),
    (e.InfrastructureError("platform"), 500),
]


@pytest.mark.parametrize(
    ("exc", "status"), CASES, ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v)
)
def test_each_error_maps_to_its_status_and_a_body_naming_its_class(exc, status):
    code, body = error_response(exc)
    assert code == status == status_of(exc)
    assert body["error"] == type(exc).__name__
    assert body["message"] == str(exc)
    assert body.get("session_id") == exc.session_id
    json.dumps(body)  # the body is JSON as it stands


def test_every_error_class_in_the_tree_is_walked_by_this_table_test():
    tree = {
        cls
        for _, cls in inspect.getmembers(e, inspect.isclass)
        if issubclass(cls, e.ArchmaxError) and cls.__module__ == e.__name__
    }
    walked = {type(exc) for exc, _ in CASES}
    assert tree - walked == set(), "a new error class needs a status decision here"


def test_every_status_in_the_table_is_an_http_status():
    assert all(100 <= code <= 599 for code in ERROR_STATUS.values())


def test_an_error_without_a_session_has_no_session_id_in_its_body():
    _, body = error_response(e.InvalidEventError("no body"))
    assert "session_id" not in body


def test_a_foreign_exception_is_a_500_that_leaks_nothing():
    code, body = error_response(KeyError("secret internals"))
    assert code == 500
    assert body == {"error": "InternalError", "message": "internal error"}


def test_an_unlisted_subclass_takes_the_status_of_its_nearest_listed_ancestor():
    class NewRefusal(e.SessionNotParkedError):
        pass

    assert status_of(NewRefusal("s", "running")) == 409
