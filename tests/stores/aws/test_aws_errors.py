"""The botocore -> archmax error boundary, walked code by code.

Rule source: CONVENTIONS.md ("foreign errors stop at one boundary ... a test walks the mapping").
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from archmax.errors import CommitConflictError, PathExistsError, StoreError
from archmax.stores.aws.errors import ERROR_KINDS, ErrorKind, aws_call, map_client_error

EXPECTED = {
    ErrorKind.CONFLICT: CommitConflictError,
    ErrorKind.EXISTS: PathExistsError,
    ErrorKind.MISSING: type(None),
    ErrorKind.THROTTLED: StoreError,
}


def _client_error(code: str, item: dict[str, Any] | None = None) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": f"{code} happened"}}
    if item is not None:
        response["Item"] = item
    return ClientError(response, "AnyOperation")


@pytest.mark.parametrize("code", sorted(ERROR_KINDS))
def test_every_mapped_code_becomes_its_archmax_error(code: str) -> None:
    mapped = map_client_error(_client_error(code), operation="op", session_id="s-1", expected_version=3, path="a.txt")
    assert type(mapped) is EXPECTED[ERROR_KINDS[code]]
    if mapped is not None:
        assert mapped.session_id == "s-1"


def test_throttling_names_itself_in_the_message() -> None:
    mapped = map_client_error(_client_error("ProvisionedThroughputExceededException"), operation="commit")
    assert "throttled" in str(mapped)


def test_an_unknown_code_is_a_store_error_naming_the_code() -> None:
    mapped = map_client_error(_client_error("AccessDenied"), operation="get", session_id="s-1")
    assert type(mapped) is StoreError and "AccessDenied" in str(mapped)


def test_conflict_carries_the_old_item_and_the_expected_version() -> None:
    old = {
        "pk": {"S": "s-1"},
        "version": {"N": "4"},
        "status": {"S": "running"},
        "lease_owner": {"S": "turn-b"},
    }
    mapped = map_client_error(
        _client_error("ConditionalCheckFailedException", old),
        operation="commit",
        session_id="s-1",
        expected_version=3,
    )
    assert isinstance(mapped, CommitConflictError)
    assert mapped.expected_version == 3
    assert mapped.found == {"version": 4, "status": "running", "lease_owner": "turn-b"}


def test_create_only_refusal_names_the_path() -> None:
    mapped = map_client_error(_client_error("PreconditionFailed"), operation="write", path="scratchpad/a.txt")
    assert isinstance(mapped, PathExistsError) and mapped.path == "scratchpad/a.txt"


def _raise(exc: Exception) -> Any:
    def method(**_: Any) -> Any:
        raise exc

    return method


def test_aws_call_keeps_the_botocore_error_as_cause_and_never_lets_it_out() -> None:
    original = _client_error("InternalServerError")
    with pytest.raises(StoreError) as caught:
        aws_call(_raise(original), operation="get")
    assert caught.value.__cause__ is original
    assert not isinstance(caught.value, ClientError)


def test_aws_call_maps_connection_failures_too() -> None:
    with pytest.raises(StoreError) as caught:
        aws_call(_raise(EndpointConnectionError(endpoint_url="http://127.0.0.1:1")), operation="load")
    assert isinstance(caught.value.__cause__, EndpointConnectionError)


def test_missing_is_none_only_when_the_caller_allows_it() -> None:
    assert aws_call(_raise(_client_error("NoSuchKey")), operation="get", missing_ok=True) is None
    with pytest.raises(StoreError):
        aws_call(_raise(_client_error("NoSuchKey")), operation="get")


def test_a_real_missing_object_reads_as_none(aws_store: Any) -> None:
    assert aws_store.get("nobody", "scratchpad/x.txt") is None
    assert aws_store.get_spec("0" * 32) is None
