"""An accept whose session is moved by another writer while its put is on the way still inboxes the firing (AWS).

Rule source: issue 23 ("under a concurrent deliver and accept on AWS, ``Host.accept`` raises
``UnboundLocalError``"), issue 24 (the put carries no check of the session: the firing is
classified on a read and the drain applies it on what the session is then). Here another writer
commits the session each time an inbox put is on its way, deterministically: the writer runs at
the ``TransactWriteItems`` call, as a concurrent delivery landing first would.
"""

from __future__ import annotations

from typing import Any

from archmax.session.records import SessionStatus

from .test_host import FIRST_TURN, SID, email

_EVENT = "before-parameter-build.dynamodb.TransactWriteItems"


def _moves_the_session_before_each_put(aws: Any) -> tuple[list[int], Any]:
    """Register a writer that commits the session again just before every inbox put; returns its log."""
    other = aws.store()  # another process's store: its own memory of the session
    moved: list[int] = []

    def concurrent_writer(params: dict[str, Any], **_: Any) -> None:
        assert not any("ConditionCheck" in entry for entry in params.get("TransactItems", []))
        current = other.load(SID)
        assert current is not None
        other.commit(SID, current.model_copy(update={"version": current.version + 1}), current.version)
        moved.append(current.version + 1)

    aws.dynamodb.meta.events.register(_EVENT, concurrent_writer)
    return moved, concurrent_writer


def test_an_accept_racing_a_writer_lands_its_put_once_unchecked_by_the_session(make_aws_host, aws):
    host = make_aws_host(FIRST_TURN + FIRST_TURN, waker=lambda sid: None)
    host.accept(email("First mail", "ses-1"))
    host.drain(SID)  # the session exists, parked; this store remembers it
    assert host.agent.sessions.get(SID).status == SessionStatus.AWAITING_INPUT
    moved, writer = _moves_the_session_before_each_put(aws)
    try:
        accepted = host.accept(email("Second mail", "ses-2"))
    finally:
        aws.dynamodb.meta.events.unregister(_EVENT, writer)
    assert len(moved) == 1  # one put, landed although the session moved after it was read
    assert accepted.duplicate is False and accepted.delivery_id == "ses-2"
    assert [item.delivery_id for item in host.inbox.pending(SID)] == ["ses-2"]
