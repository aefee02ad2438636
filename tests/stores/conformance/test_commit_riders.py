"""Conformance, ``Capability.COMMIT_RIDERS``: a commit writes the inbox's riders in its own transaction.

Rule source: issue 10 (mark-done + release in the commit's transaction), issue 23 (riders are an
explicit ``commit(..., riders=...)`` argument). The claim's riders are required: when one fails,
the commit is a conflict and nothing is written. A store without the capability ignores riders
(the caller then writes them itself) and its commit lands as ever.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax.errors import CommitConflictError
from archmax.session.records import SessionStatus
from archmax.stores.base import Capability
from archmax.stores.riders import Riders

from .conftest import lacks, make_record, requires


def _check(store: Any, key: str, *, holds: bool) -> dict[str, Any]:
    """A ``ConditionCheck`` on another item of the sessions table: ``holds`` or fails (the store's own table)."""
    bare = getattr(store, "_inner", store)  # the protocol-only wrapper keeps the real store here (tests only)
    return {
        "ConditionCheck": {
            "TableName": bare.table_name,
            "Key": {"pk": {"S": key}},
            "ConditionExpression": "attribute_not_exists(#pk)" if holds else "attribute_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": "pk"},
        }
    }


def _ended(session_id: str, delivery_id: str) -> Any:
    record = make_record(session_id, 2, status=SessionStatus.AWAITING_INPUT, messages=2)
    record.delivery_ids = [delivery_id]
    return record


def test_the_claim_and_the_end_of_the_turn_carry_their_riders(store, session_id):
    requires(store, Capability.COMMIT_RIDERS)
    riders = Riders(
        session_id=session_id,
        delivery_id="d-1",
        on_claim=[_check(store, f"{session_id}~claim", holds=True)],
        on_done=[_check(store, f"{session_id}~done", holds=True)],
    )
    store.commit(session_id, make_record(session_id, 1, lease_owner="me"), 0, riders=riders)
    assert riders.claimed and not riders.done
    store.commit(session_id, _ended(session_id, "d-1"), 1, lease_owner="me", riders=riders)
    assert riders.done and store.head(session_id).version == 2


def test_a_claim_with_nothing_riding_it_is_noted_as_landed(store, session_id):
    """Issue 24: the AWS drain rides nothing on the claim (a plain write), yet needs to know it landed."""
    requires(store, Capability.COMMIT_RIDERS)
    riders = Riders(session_id=session_id, delivery_id="d-1", on_done=[_check(store, f"{session_id}~done", holds=True)])
    store.commit(session_id, make_record(session_id, 1, lease_owner="me"), 0, riders=riders)
    assert riders.claimed and not riders.done
    store.commit(session_id, _ended(session_id, "d-1"), 1, lease_owner="me", riders=riders)
    assert riders.done and store.head(session_id).version == 2


def test_a_required_rider_that_fails_makes_the_claim_a_conflict_that_wrote_nothing(store, session_id):
    requires(store, Capability.COMMIT_RIDERS)
    riders = Riders(session_id=session_id, delivery_id="d-1", on_claim=[_check(store, "nobody", holds=False)])
    with pytest.raises(CommitConflictError):
        store.commit(session_id, make_record(session_id, 1, lease_owner="me"), 0, riders=riders)
    assert not riders.claimed and store.head(session_id) is None


def test_an_optional_rider_that_fails_lets_the_commit_land_alone(store, session_id):
    requires(store, Capability.COMMIT_RIDERS)
    store.commit(session_id, make_record(session_id, 1, lease_owner="me"), 0)
    riders = Riders(session_id=session_id, delivery_id="d-1", on_done=[_check(store, "nobody", holds=False)])
    store.commit(session_id, _ended(session_id, "d-1"), 1, lease_owner="me", riders=riders)
    assert not riders.done and store.head(session_id).version == 2


def test_riders_of_another_session_never_ride(store, session_id):
    requires(store, Capability.COMMIT_RIDERS)
    riders = Riders(session_id="someone-else", delivery_id="d-1", on_claim=[_check(store, "nobody", holds=False)])
    store.commit(session_id, make_record(session_id, 1, lease_owner="me"), 0, riders=riders)
    assert not riders.claimed and store.head(session_id).version == 1


def test_without_the_capability_riders_are_ignored_and_the_commit_lands(store, session_id):
    lacks(store, Capability.COMMIT_RIDERS)
    riders = Riders(session_id=session_id, delivery_id="d-1", on_claim=[{"Anything": {}}], on_done=[{"Anything": {}}])
    store.commit(session_id, make_record(session_id, 1, lease_owner="me"), 0, riders=riders)
    store.commit(session_id, _ended(session_id, "d-1"), 1, lease_owner="me", riders=riders)
    assert not riders.claimed and not riders.done
    assert store.head(session_id).version == 2
