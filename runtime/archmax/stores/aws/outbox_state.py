"""The AWS store's outbox entry state: one small item per entry in the sessions table (issue 24 goal 2).

Rule source: issue 20 items 1-3 and 5 (claim before sending, each outcome recorded once, the
sweep takes over an expired claim) and issue 24 ("sent-state and aliases without a marker object
per send"). Where the default keeps create-only files listed from S3
(:mod:`archmax.stores.outbox_files`), each entry here is one item, written only by conditional
UpdateItems, so one write both claims and de-duplicates::

    pk            S   <session id> US "outbox" US <session created_at> US <entry id>  (US = U+001F,
                      which no session id holds (§4.1), so the key never names a session; no index
                      key, no ``status``: the stream's filter and every index ignore it)
    claim_owner   S   the last claimer's token
    claim_until   S   the instant that claim stops holding the entry ("" once released)
    sent          S   the sent record's JSON (``outbound.dispatch.Sent``), written once
    failed        S   the failed record's JSON, written once

Calls: a claim is one UpdateItem (its failed condition returns the item: settled or held, no
read); an outcome is one UpdateItem; :meth:`outbox_outcomes` is one BatchGetItem per 100 entries
(eventually consistent: a settle just made may read as unknown, which keeps the entry — the safe
side). Items are small (well under 1 KB: one write unit each) and, like the files they replace,
kept as long as the table keeps them: an entry may stay in a parked session's record for months,
and a sent state that expired under it would let the sweep send it again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from archmax.errors import CommitConflictError
from archmax.session.ids import validate_session_id
from archmax.stores.aws.errors import aws_call, conflict_item
from archmax.stores.aws.state import AwsState
from archmax.stores.base import OutboxClaim, OutboxOutcome

SEPARATOR = "\x1f"
BATCH_GET = 100
"""Keys per BatchGetItem (DynamoDB's limit)."""


def _prefix(session_id: str, created_at: str) -> str:
    return f"{session_id}{SEPARATOR}outbox{SEPARATOR}{created_at}{SEPARATOR}"


def entry_key(session_id: str, created_at: str, entry_id: str) -> dict[str, Any]:
    """The key of the entry's state item.

    The session's ``created_at`` is in it: a session deleted and started again under the same id
    repeats entry ids, and ``delete`` cannot list these items.
    """
    return {"pk": {"S": _prefix(session_id, created_at) + entry_id}}


class AwsOutboxState(AwsState):
    """The outbox-state members of :class:`~archmax.stores.aws.store.AwsStore` (see the module docstring)."""

    def _update_entry(
        self, operation: str, session_id: str, created_at: str, entry_id: str, **request: Any
    ) -> CommitConflictError | None:
        """One conditional UpdateItem of an entry's item; the condition's failure is returned, not raised.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        try:
            aws_call(
                self._ddb.update_item,
                operation=operation,
                session_id=session_id,
                TableName=self.table_name,
                Key=entry_key(session_id, created_at, entry_id),
                **request,
            )
        except CommitConflictError as exc:
            return exc
        return None

    def outbox_claim(
        self, session_id: str, entry_id: str, *, created_at: str, owner: str, now: str, until: str
    ) -> OutboxClaim:
        """One conditional UpdateItem: claimed unless settled or held by a live claim (see the port).

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        conflict = self._update_entry(
            "outbox_claim", session_id, created_at, entry_id,
            UpdateExpression="SET #owner = :owner, #until = :until",
            ConditionExpression=(
                "attribute_not_exists(#sent) AND attribute_not_exists(#failed)"
                " AND (attribute_not_exists(#until) OR #until <= :now)"
            ),
            ExpressionAttributeNames={
                "#owner": "claim_owner", "#until": "claim_until", "#sent": "sent", "#failed": "failed",
            },
            ExpressionAttributeValues={":owner": {"S": owner}, ":until": {"S": until}, ":now": {"S": now}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )  # fmt: skip
        if conflict is None:
            return OutboxClaim.CLAIMED
        found = conflict_item(conflict) or {}
        if "sent" in found:
            return OutboxClaim.SENT
        return OutboxClaim.FAILED if "failed" in found else OutboxClaim.HELD

    def outbox_release(self, session_id: str, entry_id: str, *, created_at: str, owner: str, now: str) -> None:
        """One conditional UpdateItem: ``claim_until`` emptied while ``owner`` holds the unsettled entry.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        # a failed condition: taken over or settled meanwhile, nothing of ours to let go
        self._update_entry(
            "outbox_release", session_id, created_at, entry_id,
            UpdateExpression="SET #until = :released",
            ConditionExpression="#owner = :owner AND attribute_not_exists(#sent) AND attribute_not_exists(#failed)",
            ExpressionAttributeNames={
                "#owner": "claim_owner", "#until": "claim_until", "#sent": "sent", "#failed": "failed",
            },
            ExpressionAttributeValues={":owner": {"S": owner}, ":released": {"S": ""}},
        )  # fmt: skip

    def outbox_record(
        self, session_id: str, entry_id: str, outcome: OutboxOutcome, body: str, *, created_at: str
    ) -> bool:
        """One conditional UpdateItem: the outcome's attribute set unless present; False when it was.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        conflict = self._update_entry(
            "outbox_record", session_id, created_at, entry_id,
            UpdateExpression="SET #outcome = :body",
            ConditionExpression="attribute_not_exists(#outcome)",
            ExpressionAttributeNames={"#outcome": outcome.value},
            ExpressionAttributeValues={":body": {"S": body}},
        )  # fmt: skip
        return conflict is None

    def outbox_outcomes(
        self, session_id: str, entry_ids: Iterable[str], *, created_at: str
    ) -> dict[str, OutboxOutcome]:
        """The settled ones among ``entry_ids``: one eventually consistent BatchGetItem per 100 entries.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        wanted = list(dict.fromkeys(entry_ids))
        prefix = _prefix(session_id, created_at)
        found: dict[str, OutboxOutcome] = {}
        for start in range(0, len(wanted), BATCH_GET):
            keys = [entry_key(session_id, created_at, entry_id) for entry_id in wanted[start : start + BATCH_GET]]
            while keys:
                answer = aws_call(
                    self._ddb.batch_get_item,
                    operation="outbox_outcomes",
                    session_id=session_id,
                    RequestItems={
                        self.table_name: {
                            "Keys": keys,
                            "ProjectionExpression": "#pk, #sent, #failed",
                            "ExpressionAttributeNames": {"#pk": "pk", "#sent": "sent", "#failed": "failed"},
                        }
                    },
                )
                for item in answer.get("Responses", {}).get(self.table_name, []):
                    entry_id = item["pk"]["S"][len(prefix) :]
                    if "sent" in item:
                        found[entry_id] = OutboxOutcome.SENT
                    elif "failed" in item:
                        found[entry_id] = OutboxOutcome.FAILED
                keys = answer.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
        return found

    def outbox_result(self, session_id: str, entry_id: str, *, created_at: str) -> str | None:
        """The sent record's JSON: one GetItem (strongly consistent), or ``None`` while unsent.

        Raises:
            InvalidSessionIdError: for an id failing §4.1.
            StoreError: on an AWS failure.
        """
        validate_session_id(session_id)
        answer = aws_call(
            self._ddb.get_item,
            operation="outbox_result",
            session_id=session_id,
            TableName=self.table_name,
            Key=entry_key(session_id, created_at, entry_id),
            ConsistentRead=True,
        )
        sent = (answer.get("Item") or {}).get("sent")
        return None if sent is None else sent["S"]


__all__ = ["AwsOutboxState", "entry_key"]
