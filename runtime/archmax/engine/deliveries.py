"""Applied delivery ids, kept for as long as the session lives.

Rule source: README "promises" (a firing with a delivery id is applied once, with no limit), DESIGN.md
§3 "Inbox" (a duplicate is a no-op); issue 9 item 5.

The checkpoint keeps the newest :data:`DELIVERY_IDS_KEPT` ids, committed in the same conditional
commit as the firing that applied them, so an id is never kept without its event nor its event without
the id. Before an id leaves that window, it is written as a marker file
``.archmax/deliveries/<sha256 of the id>`` in the session's folder (create-only; one that exists is
fine), and that write precedes the commit that drops it: if the marker cannot be written the commit is
never tried (a ``StoreError``, retryable), so no id is ever forgotten. A delivery id in neither the
window nor a marker was never applied. Sessions that never apply more than the window's ids write and
read no marker; on AWS the markers are S3 objects, so the session item never grows, and they go with
the session's folder when the session is deleted.
"""

from __future__ import annotations

import hashlib

from archmax.errors import DuplicateDeliveryError, PathExistsError
from archmax.session.ids import validate_delivery_id
from archmax.session.records import DELIVERY_IDS_KEPT, Checkpoint
from archmax.stores.base import SessionStore

MARKERS = ".archmax/deliveries"
"""The session-relative folder of the markers of ids that left the checkpoint's window."""


def marker_path(delivery_id: str) -> str:
    """``.archmax/deliveries/<sha256 hex of the UTF-8 id>``: a safe name for any valid id."""
    return f"{MARKERS}/{hashlib.sha256(delivery_id.encode('utf-8')).hexdigest()}"


def was_applied(store: SessionStore, rec: Checkpoint, delivery_id: str) -> bool:
    """Whether the session applied ``delivery_id``: in the window, else (once the window was full) a marker.

    Raises:
        StoreError: the marker could not be read (never read as "not applied").
    """
    if delivery_id in rec.delivery_ids:
        return True
    if len(rec.delivery_ids) < DELIVERY_IDS_KEPT:
        return False  # no id ever left the window
    return store.get(rec.session_id, marker_path(delivery_id)) is not None


def refuse_duplicate(
    store: SessionStore, rec: Checkpoint | None, delivery_id: str | None, session_id: str | None = None
) -> None:
    """Refuse a firing whose ``delivery_id`` is malformed or was already applied to the session.

    Args:
        store: The session's store (markers of ids older than the window).
        rec: The session's latest checkpoint, or ``None`` when it has none (nothing was applied yet).
        delivery_id: The host's idempotency key (an email's Message-ID, ``Idempotency-Key``, an
            EventBridge event id), or ``None`` for a firing without one.
        session_id: The id named in errors when ``rec`` is ``None``.

    Raises:
        InvalidDeliveryIdError: ``delivery_id`` is blank, not text, over 512 UTF-8 bytes or holds a
            control character (:func:`archmax.session.ids.validate_delivery_id`).
        DuplicateDeliveryError: the session already applied ``delivery_id`` (a no-op).
        StoreError: a marker could not be read.
    """
    if delivery_id is None:
        return
    validate_delivery_id(delivery_id, session_id=rec.session_id if rec is not None else session_id)
    if rec is not None and was_applied(store, rec, delivery_id):
        raise DuplicateDeliveryError(rec.session_id, delivery_id)


def remember_delivery(store: SessionStore, record: Checkpoint, delivery_id: str | None) -> None:
    """Add a firing's ``delivery_id`` to the record its claiming commit writes, so the event is applied once.

    Ids pushed out of the window are written as markers first (see the module docstring).

    Raises:
        StoreError: a marker could not be written; the caller has not committed, so nothing changed.
    """
    if delivery_id is None:
        return
    ids = record.delivery_ids + [delivery_id]
    for leaving in ids[:-DELIVERY_IDS_KEPT]:
        try:
            store.seed(record.session_id, {marker_path(leaving): leaving}, create_only=True)
        except PathExistsError:
            pass  # written by an earlier attempt: the id stays remembered
    record.delivery_ids = ids[-DELIVERY_IDS_KEPT:]
