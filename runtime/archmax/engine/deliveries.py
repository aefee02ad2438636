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

A caller parked through its sub-workflow child and the child apply events as one pair (BEHAVIOUR.md §5.10):
a reply forwarded to the child is remembered by the child alone (the caller stays parked, unclaimed).
So a caller's check also asks the child its park delegates to (:func:`applied_in_pair`), and the
caller adopts its child's ids when it next settles with the child (:func:`adopt_child_deliveries`), so
they stay remembered after the caller moved on (issue 22: each event applied once, in one transcript).
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


def applied_in_pair(store: SessionStore, rec: Checkpoint, delivery_id: str) -> bool:
    """Whether ``rec``'s session, or the child its call in flight delegates to (down the chain), applied the id.

    A reply sent to a caller parked at its child's decision is applied by the child and remembered
    there only (§5.10, §3.6); a redelivery to the caller, by any door, is the same event.

    Raises:
        StoreError: a child or a marker could not be read (never read as "not applied").
    """
    seen: set[str] = set()
    current: Checkpoint | None = rec
    while current is not None and current.session_id not in seen:
        if was_applied(store, current, delivery_id):
            return True
        seen.add(current.session_id)
        delegation = current.delegation
        current = store.load(delegation.session_id) if delegation is not None else None
    return False


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
        DuplicateDeliveryError: the session already applied ``delivery_id`` (a no-op), or its child did
            while the session's call to it is in flight (:func:`applied_in_pair`).
        StoreError: a marker (or the delegated child) could not be read.
    """
    if delivery_id is None:
        return
    validate_delivery_id(delivery_id, session_id=rec.session_id if rec is not None else session_id)
    if rec is not None and applied_in_pair(store, rec, delivery_id):
        raise DuplicateDeliveryError(rec.session_id, delivery_id)


def remember_delivery(store: SessionStore, record: Checkpoint, delivery_id: str | None) -> None:
    """Add a firing's ``delivery_id`` to the record its claiming commit writes, so the event is applied once.

    Ids pushed out of the window are written as markers first (see the module docstring).

    Raises:
        StoreError: a marker could not be written; the caller has not committed, so nothing changed.
    """
    if delivery_id is None:
        return
    _keep(store, record, record.delivery_ids + [delivery_id])


def forget_unhanded_forward(store: SessionStore, record: Checkpoint, child: Checkpoint | None) -> None:
    """Drop from ``record`` the id of a forwarded delivery its child never applied, as a new turn abandons the call.

    A caller parked through its child is claimed with the delivery it forwards (``delegation.forward``)
    and remembers its id in that claim; the child applies it next. When the process dies in between,
    the continuation hands it over (:mod:`archmax.engine.subworkflows`), but a firing that takes over
    the dead turn opens a new turn, which abandons the call and the forward with it: the event is in no
    transcript, and its id, kept, would answer the sender's retry ``DuplicateDeliveryError``: lost
    (found by the pair soak: ``accepted but applied 0 times``). Forgetting the id makes the retry a
    fresh firing, applied once where the session now is. Nothing to do when the child applied it (its
    id is then adopted as the pair's, :func:`adopt_child_deliveries`) or the forward had no id.

    Rule source: BEHAVIOUR.md §3.12 (a takeover), §5.10; issue 22 (each event applied once across the pair).

    Raises:
        StoreError: a marker of the child's could not be read.
    """
    d = record.delegation
    fwd = d.forward if d is not None else None
    if fwd is None or fwd.delivery_id is None:
        return
    if child is not None and was_applied(store, child, fwd.delivery_id):
        return
    record.delivery_ids = [i for i in record.delivery_ids if i != fwd.delivery_id]


def adopt_child_deliveries(store: SessionStore, record: Checkpoint, child: Checkpoint | None) -> None:
    """Add the ids ``child`` applied during the call and ``record`` lacks, to the caller's next commit.

    Called while the caller settles with the child (and when a new turn abandons the call), so a
    reply the child applied for the pair stays a duplicate at the caller after it moved on (issue 22).
    The child's own call in flight is walked too, down the chain (a reply forwarded to a grandchild
    is remembered by the grandchild alone until the child settles with it, which an abandoned call
    never does). The adopted ids go before the caller's own (its newest id, which a dead turn's
    redelivery continues, stays newest); the oldest leave the window as markers, as always.

    Raises:
        StoreError: a marker (or a delegated descendant) could not be read or written; the caller has
            not committed.
    """
    seen = {record.session_id}
    while child is not None and child.session_id not in seen:
        seen.add(child.session_id)
        _adopt_markers(store, record, child)
        adopted = [i for i in child.delivery_ids if not was_applied(store, record, i)]
        if adopted:
            _keep(store, record, adopted + record.delivery_ids)
        child = store.load(child.delegation.session_id) if child.delegation is not None else None


def _adopt_markers(store: SessionStore, record: Checkpoint, child: Checkpoint) -> None:
    """Copy the markers of the ids that left ``child``'s window to ``record``'s session, before its commit.

    A child that applied more than the window's ids (many replies forwarded while its caller stayed
    parked) remembers the oldest as markers only; adopting just its window would forget them at the
    caller once the call is over (issue 22). Costs nothing while the child's window never filled.

    Raises:
        StoreError: a marker could not be listed, read or written.
    """
    if len(child.delivery_ids) < DELIVERY_IDS_KEPT:
        return  # no id ever left the child's window
    mine = set(store.list_files(record.session_id, MARKERS))
    for path in store.list_files(child.session_id, MARKERS):
        data = store.get(child.session_id, path) if path not in mine else None
        if data is None:
            continue
        try:
            store.seed(record.session_id, {path: data.decode("utf-8")}, create_only=True)
        except PathExistsError:
            pass  # written by an earlier attempt: the id stays remembered


def _keep(store: SessionStore, record: Checkpoint, ids: list[str]) -> None:
    """Set ``record``'s window to the newest ids of ``ids``, writing a marker for each id leaving it first."""
    for leaving in ids[:-DELIVERY_IDS_KEPT]:
        try:
            store.seed(record.session_id, {marker_path(leaving): leaving}, create_only=True)
        except PathExistsError:
            pass  # written by an earlier attempt: the id stays remembered
    record.delivery_ids = ids[-DELIVERY_IDS_KEPT:]
