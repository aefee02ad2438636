"""The DynamoDB item of one session: what a commit writes, under which condition, and how to read it back.

Rule source: BEHAVIOUR.md §9.1 (commit creates ``expected_version + 1`` or fails), §9.2 (one item per
session keyed by the raw id), §3.12 (lease owner on commit); DESIGN.md §3 (item attributes, sparse
due-parks index, sparse stale-leases index, TTL on finished sessions); CONVENTIONS.md (conditions built from named parts,
``ReturnValuesOnConditionCheckFailure=ALL_OLD``, epoch seconds only at the DynamoDB edge).

Item attributes::

    pk                 S   the raw session id
    version            N   the committed version (monotonic)
    base               N   the version of the full chunk a load starts from
    chunks             L   the chunks of versions base..version: an S3 chunk's token, a small chunk
                           carried inline, or a run of versions in a segment item (``plan``, ``segments``)
    delta_bytes, full_bytes  N  delta bytes since base, and the size of the full chunk at base
    status, workflow   S
    position           S   the current state (absent when none)
    updated_at, created_at  S  instant strings
    message_count, trail_count  N   what the next delta chunk continues from
    lease_owner        S   only while a lease is held
    lease_expires_at   S   the lease's expiry while one is held; on a ``running`` item without a
                           lease, its ``updated_at`` (so the stale-leases index finds it)
    lease_shard        S   only while ``running`` (the stale-leases index's hash key)
    channel, state, reason, parked_at  S   park summary, only while a park record is present
    due_shard, resume_at  S   only while parked on input with a resume_at (the sparse index keys)
    park_key           S   only while parked: ``<workflow>#<shard>`` (the open-parks index's hash key,
                           ranged on ``parked_at``; the oldest park per workflow, BEHAVIOUR.md §5.11)
    ttl                N   epoch seconds, only on finished sessions
    outbox_shard, outbox_version  S, N  only while the outbox may hold an entry not yet sent (issue 20
                           item 2): set by every commit that records outbox entries (``outbox_version``
                           its version), removed by the sender once every entry is sent
                           (:func:`outbox_settled_request`), never removed by a commit
    quarantine_hint    SS  delivery ids of mail that may be held in the session's quarantine (issue 10,
                           issue 13 item 1): a superset of what is held, kept by the quarantine, never
                           written or removed by a commit; absent when nothing may be held
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from archmax.clock import parse_instant
from archmax.session.records import PARKED_STATUSES, Checkpoint, Lease, SessionStatus, is_finished
from archmax.stores.aws.layout import due_shard, lease_shard, outbox_shard, park_key
from archmax.stores.base import SessionHead
from archmax.stores.common import outbox_mark as _common_outbox_mark

DUE_INDEX = "due-parks"
"""The sparse GSI the sweep queries for due parks (template.yaml ``SessionsTable``)."""

STALE_INDEX = "stale-leases"
"""The sparse GSI the sweep queries for running sessions whose lease expired (template.yaml ``SessionsTable``)."""

OUTBOX_INDEX = "outbox-pending"
"""The sparse GSI the sweep queries for sessions with outbox entries to send (template.yaml ``SessionsTable``)."""

PARKS_INDEX = "open-parks"
"""The sparse GSI the sweep queries for a workflow's oldest park (template.yaml ``SessionsTable``)."""

QUARANTINE_HINT = "quarantine_hint"
"""The item's string set of possibly-held mail ids (see the attribute table): commits never touch it."""

_OPTIONAL = (
    "position",
    "lease_owner",
    "lease_expires_at",
    "lease_shard",
    "channel",
    "state",
    "reason",
    "parked_at",
    "park_key",
    "due_shard",
    "resume_at",
    "ttl",
)


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(int(value))}


def item_attributes(record: Checkpoint, *, ttl_days: int | None) -> dict[str, dict[str, Any]]:
    """The attributes a commit of ``record`` sets (besides ``base`` and ``chunks``), as DynamoDB values.

    Args:
        record: The new version's whole record.
        ttl_days: Days after ``record.updated_at`` a finished session's item may expire; ``None``
            never sets ``ttl``.

    Returns:
        ``{attribute name: AttributeValue}``; optional attributes absent here are removed by the commit.
    """
    attrs: dict[str, dict[str, Any]] = {
        "version": _n(record.version),
        "status": _s(str(record.status)),
        "workflow": _s(record.workflow),
        "updated_at": _s(record.updated_at),
        "created_at": _s(record.created_at),
        "message_count": _n(len(record.messages)),
        "trail_count": _n(len(record.trail)),
    }
    if record.position is not None:
        attrs["position"] = _s(record.position)
    if record.lease is not None:
        attrs["lease_owner"] = _s(record.lease.owner)
        attrs["lease_expires_at"] = _s(record.lease.expires_at)
    # The stale-leases index is sparse: only a running session carries its keys, set or removed in
    # this same conditional commit. A running session whose lease was let go (a crashed turn
    # releases it so it can be taken over at once, §3.12) has no expiry of its own: it is keyed
    # at its updated_at, i.e. stale from the moment it was written. head_of_item reads a lease
    # only when lease_owner is present too, so this never reads back as a lease.
    if record.status == SessionStatus.RUNNING:
        attrs["lease_shard"] = _s(lease_shard(record.session_id))
        if record.lease is None:
            attrs["lease_expires_at"] = _s(record.updated_at)
    park = record.pending_input or record.pending_decision
    if park is not None:
        attrs["channel"] = _s(record.channel or "")
        attrs["state"] = _s(park.state)
        if record.pending_input is not None:
            attrs["reason"] = _s(record.pending_input.reason)
        attrs["parked_at"] = _s(record.parked_since or "")
    # The open-parks index is sparse: only a parked session carries its key, ranged on parked_at.
    if record.status in PARKED_STATUSES and record.parked_since:
        attrs["park_key"] = _s(park_key(record.workflow, record.session_id))
    # The due-parks index is sparse: only an input park with a resume_at carries its keys.
    # A park's wake instant: an input park's until, or any park's deadline when it comes first (§5.11).
    if record.status in PARKED_STATUSES and record.wake_at:
        attrs["due_shard"] = _s(due_shard(record.session_id))
        attrs["resume_at"] = _s(record.wake_at)
    if ttl_days is not None and is_finished(record.status):
        expires = parse_instant(record.updated_at) + timedelta(days=ttl_days)
        attrs["ttl"] = _n(int(expires.timestamp()))
    return attrs


def _commit_conditions(
    record: Checkpoint,
    expected_version: int,
    lease_owner: str | None,
    name: Callable[[str], str],
    values: dict[str, Any],
) -> list[str]:
    """The commit's condition parts (values added to ``values``): the version read, and the lease owner.

    The version read is the session's ``version`` and its ``created_at``: a session deleted and
    started over under its id (§3.10) counts its versions from 1 again, so a warm store's remembered
    view of the deleted one would otherwise match the new one's number (issue 24: the claim is the read).
    """
    if expected_version == 0:
        conditions = [f"attribute_not_exists({name('pk')})"]
    else:
        conditions = [f"{name('version')} = :expected", f"{name('created_at')} = :created"]
        values[":expected"] = _n(expected_version)
        values[":created"] = _s(record.created_at)
    if lease_owner is not None:
        conditions.append(f"{name('lease_owner')} = :owner")
        values[":owner"] = _s(lease_owner)
    return conditions


def commit_request(
    table_name: str,
    record: Checkpoint,
    expected_version: int,
    *,
    lease_owner: str | None,
    chunks: tuple[str, list[dict[str, Any]]],
    base: int | None,
    sizes: dict[str, int],
    ttl_days: int | None,
    previous: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The one conditional ``update_item`` that commits ``record`` (§9.1).

    The condition is built from named parts: ``attribute_not_exists(pk)`` for a first version,
    else ``version = :expected``; and ``lease_owner = :owner`` when ``lease_owner`` is given.

    Args:
        table_name: The sessions table.
        record: The new version's whole record.
        expected_version: The version the writer read (0 for a new session).
        lease_owner: When given, the stored item must hold a lease with this owner (§3.12).
        chunks: ``("append", [entry])`` adds this version's chunk entry to ``chunks``;
            ``("set", entries)`` replaces the list (a full snapshot, or inline deltas moved to a segment).
        base: The new ``base`` (a full snapshot's version), or ``None`` to keep it.
        sizes: Absolute values for the plan's size attributes (``delta_bytes``, ``full_bytes``).
        ttl_days: As :func:`item_attributes`.
        previous: The item's attributes as stored at ``expected_version`` when the writer knows
            them: only attributes that changed are sent (issue 10), and only those present are removed.

    Returns:
        Keyword arguments for ``dynamodb.update_item``.
    """
    attrs = {**item_attributes(record, ttl_days=ttl_days), **{k: _n(v) for k, v in sizes.items()}}
    names: dict[str, str] = {}
    values: dict[str, Any] = {}

    def name(attr: str) -> str:
        names[f"#{attr}"] = attr
        return f"#{attr}"

    sets = []
    for attr, value in attrs.items():
        if previous is not None and previous.get(attr) == value:
            continue
        sets.append(f"{name(attr)} = :{attr}")
        values[f":{attr}"] = value
    how, entries = chunks
    values[":chunk"] = {"L": entries}
    if how == "set":
        sets.append(f"{name('chunks')} = :chunk")
    else:
        sets.append(f"{name('chunks')} = list_append({name('chunks')}, :chunk)")
    if base is not None:
        sets.append(f"{name('base')} = :base")
        values[":base"] = _n(base)
    removes = [name(attr) for attr in _OPTIONAL if attr not in attrs and (previous is None or attr in previous)]

    # The outbox mark is set by every commit that records entries, whatever the plan remembers: the
    # sender may have removed it since (the plan never sees that), and it must never be left unset.
    mark = _common_outbox_mark(record)
    if mark is not None:
        sets.append(f"{name('outbox_shard')} = :outbox_shard, {name('outbox_version')} = :outbox_version")
        values[":outbox_shard"] = _s(outbox_shard(record.session_id))
        values[":outbox_version"] = _n(mark)

    conditions = _commit_conditions(record, expected_version, lease_owner, name, values)
    update = "SET " + ", ".join(sets)
    if removes:
        update += " REMOVE " + ", ".join(removes)
    return {
        "TableName": table_name,
        "Key": {"pk": _s(record.session_id)},
        "UpdateExpression": update,
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def outbox_settled_request(
    table_name: str, session_id: str, version: int, created_at: str | None = None
) -> dict[str, Any]:
    """The ``update_item`` that removes the outbox mark when no commit after ``version`` set it.

    Condition: ``outbox_version <= :version``, and with ``created_at`` the item's ``created_at`` is
    it (the same life of the session: one deleted and started again counts versions afresh). A
    ``ConditionalCheckFailedException`` means a later commit (or another life) recorded entries, or
    the mark is gone already: either way, nothing to do.
    """
    request: dict[str, Any] = {
        "TableName": table_name,
        "Key": {"pk": _s(session_id)},
        "UpdateExpression": "REMOVE #shard, #version",
        "ConditionExpression": "#version <= :version",
        "ExpressionAttributeNames": {"#shard": "outbox_shard", "#version": "outbox_version"},
        "ExpressionAttributeValues": {":version": _n(version)},
    }
    if created_at is not None:
        request["ConditionExpression"] += " AND #created = :created"
        request["ExpressionAttributeNames"]["#created"] = "created_at"
        request["ExpressionAttributeValues"][":created"] = _s(created_at)
    return request


def committed_attributes(
    record: Checkpoint, sizes: dict[str, int], ttl_days: int | None, previous: dict[str, Any] | None
) -> dict[str, Any]:
    """The item's attributes (besides ``pk``, ``base``, ``chunks``) once :func:`commit_request` applied."""
    attrs = {**item_attributes(record, ttl_days=ttl_days), **{k: _n(v) for k, v in sizes.items()}}
    kept = {k: v for k, v in (previous or {}).items() if k not in _OPTIONAL and k not in attrs}
    return {**kept, **attrs}


def _str(item: dict[str, Any], attr: str) -> str | None:
    value = item.get(attr)
    return value["S"] if value else None


def head_of_item(item: dict[str, Any]) -> SessionHead:
    """The :class:`SessionHead` a session item holds (no S3 read)."""
    owner, expires = _str(item, "lease_owner"), _str(item, "lease_expires_at")
    status = SessionStatus(item["status"]["S"])
    return SessionHead(
        session_id=item["pk"]["S"],
        version=int(item["version"]["N"]),
        workflow=item["workflow"]["S"],
        status=status,
        lease=Lease(owner=owner, expires_at=expires) if owner and expires else None,
        resume_at=_str(item, "resume_at") if status in PARKED_STATUSES else None,
        parked_at=_str(item, "parked_at") if status in PARKED_STATUSES else None,
        updated_at=item["updated_at"]["S"],
    )


def quarantine_hint_of_item(item: dict[str, Any]) -> frozenset[str]:
    """The delivery ids the item's ``quarantine_hint`` names (empty when absent: nothing is held)."""
    return frozenset(item.get(QUARANTINE_HINT, {}).get("SS", ()))


def counts_of_item(item: dict[str, Any]) -> tuple[int, int]:
    """``(message_count, trail_count)`` of the stored version: the next delta's starting point."""
    return int(item["message_count"]["N"]), int(item["trail_count"]["N"])
