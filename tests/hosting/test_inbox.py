"""The inbox contract, run against MemoryInbox, FilesystemInbox and DynamoInbox (moto).

Rule source: DESIGN.md §3 "Inbox" (create-only per delivery id, arrival order, drain lease,
arrivals counter, release in one conditional write), issue 4 item 2.
"""

from __future__ import annotations

from typing import Any

import pytest

from archmax.errors import InvalidDeliveryIdError, InvalidSessionIdError
from archmax.hosting.inbox import DynamoInbox, FilesystemInbox, InboxItem
from archmax.session.firing import FileIn, Firing
from archmax.session.ids import portable_folder_name

T0 = "2025-01-01T00:00:00.000Z"
T1 = "2025-01-01T00:00:01.000Z"
LATER = "2025-01-01T00:15:00.001Z"


def item(delivery_id: str, *, session_id: str = "conv-1", arrived_at: str = T0, **firing: Any) -> InboxItem:
    return InboxItem(
        session_id=session_id,
        delivery_id=delivery_id,
        arrived_at=arrived_at,
        firing=Firing(**{"trigger": "email_received", "message": f"mail {delivery_id}", **firing}),
    )


def test_a_put_creates_one_pending_item_and_bumps_the_arrivals_counter(inbox):
    assert inbox.put(item("m-1")) is True
    (only,) = inbox.pending("conv-1")
    assert (only.delivery_id, only.status, only.seq, only.firing.message) == ("m-1", "pending", 1, "mail m-1")
    assert inbox.arrivals("conv-1") == 1


def test_a_second_put_of_the_same_delivery_id_is_refused_and_changes_nothing(inbox):
    inbox.put(item("m-1"))
    assert inbox.put(item("m-1", arrived_at=T1, message="changed")) is False
    (only,) = inbox.pending("conv-1")
    assert only.firing.message == "mail m-1"
    assert inbox.arrivals("conv-1") == 1


def test_a_done_item_is_still_a_duplicate(inbox):
    inbox.put(item("m-1"))
    inbox.mark("conv-1", "m-1", "done")
    assert inbox.put(item("m-1")) is False
    assert inbox.pending("conv-1") == []


def test_pending_items_come_in_arrival_order_then_by_sequence(inbox):
    inbox.put(item("late", arrived_at=T1))
    for name in ("b", "a", "c"):
        inbox.put(item(name, arrived_at=T0))
    assert [i.delivery_id for i in inbox.pending("conv-1")] == ["b", "a", "c", "late"]
    assert [i.seq for i in inbox.pending("conv-1")] == [2, 3, 4, 1]


def test_marking_items_takes_them_out_of_the_pending_set_and_keeps_the_refusal_text(inbox):
    inbox.put(item("m-1"))
    inbox.put(item("m-2"))
    inbox.mark("conv-1", "m-1", "done")
    inbox.mark("conv-1", "m-2", "failed", "SessionNotAwaitingInputError: not parked")
    assert inbox.pending("conv-1") == []
    failed = inbox.get("conv-1", "m-2")
    assert (failed.status, failed.error) == ("failed", "SessionNotAwaitingInputError: not parked")
    assert inbox.get("conv-1", "m-1").status == "done"
    assert inbox.get("conv-1", "nope") is None


def test_marking_an_unknown_item_is_a_key_error(inbox):
    with pytest.raises(KeyError):
        inbox.mark("conv-1", "never-put", "done")


def test_sessions_with_pending_lists_exactly_the_sessions_that_have_waiting_items(inbox):
    inbox.put(item("m-1", session_id="conv-b"))
    inbox.put(item("m-1", session_id="conv-a"))
    inbox.put(item("m-2", session_id="conv-c"))
    inbox.mark("conv-c", "m-2", "done")
    assert inbox.sessions_with_pending() == ["conv-a", "conv-b"]


def test_sessions_ids_that_are_not_folder_safe_are_kept_apart(inbox):
    for sid in ("a/b", "a%2Fb", ".hidden"):
        inbox.put(item("m-1", session_id=sid))
    assert inbox.sessions_with_pending() == sorted(["a/b", "a%2Fb", ".hidden"])
    assert [i.session_id for i in inbox.pending("a/b")] == ["a/b"]


def test_file_bytes_and_text_survive_the_round_trip(inbox):
    files = {
        "attachment": FileIn(name="scan.pdf", content=b"%PDF\x00\xff\xfe"),
        "note": FileIn(name="n.txt", content="hé"),
    }
    inbox.put(item("m-1", files=files, variables={"conversation_id": "conv-1", "n": 3}))
    (got,) = inbox.pending("conv-1")
    assert got.firing.files["attachment"].content == b"%PDF\x00\xff\xfe"
    assert got.firing.files["note"].content == "hé"
    assert got.firing.variables == {"conversation_id": "conv-1", "n": 3}


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "x" * 513])
def test_a_delivery_id_that_cannot_be_a_key_is_refused_before_anything_is_written(inbox, bad):
    with pytest.raises(InvalidDeliveryIdError):
        inbox.put(item(bad))
    assert inbox.arrivals("conv-1") == 0
    assert inbox.sessions_with_pending() == []


def test_a_delivery_id_like_the_inbox_s_own_drain_record_is_an_ordinary_item(inbox):
    # Message-IDs may legally start with '~'; they must not collide with the drain lease record.
    assert inbox.put(item("~drain")) is True
    assert inbox.try_acquire("conv-1", "owner-1", "2025-01-01T00:00:00.000Z", 60) is True
    assert [i.delivery_id for i in inbox.pending("conv-1")] == ["~drain"]
    assert inbox.arrivals("conv-1") == 1


def test_an_invalid_session_id_is_refused(inbox):
    with pytest.raises(InvalidSessionIdError):
        inbox.pending("../escape")


# ---------------------------------------------------------------- the drain lease


def test_a_second_drainer_cannot_take_the_lease_while_it_is_live(inbox):
    assert inbox.try_acquire("conv-1", "first", T0, 900) is True
    assert inbox.try_acquire("conv-1", "second", T1, 900) is False


def test_the_holder_renews_its_own_lease(inbox):
    assert inbox.try_acquire("conv-1", "first", T0, 900) is True
    assert inbox.try_acquire("conv-1", "first", "2025-01-01T00:14:00.000Z", 900) is True
    assert inbox.try_acquire("conv-1", "second", LATER, 900) is False  # renewed: live until 00:29


def test_an_expired_lease_can_be_taken_over(inbox):
    inbox.try_acquire("conv-1", "first", T0, 900)
    assert inbox.try_acquire("conv-1", "second", LATER, 900) is True
    assert inbox.release("conv-1", "first", 0) is False  # the old holder can no longer let go


def test_release_succeeds_when_nothing_arrived_and_frees_the_lease(inbox):
    inbox.put(item("m-1"))
    inbox.try_acquire("conv-1", "first", T0, 900)
    seen = inbox.arrivals("conv-1")
    assert inbox.release("conv-1", "first", seen) is True
    assert inbox.try_acquire("conv-1", "second", T1, 900) is True


def test_release_fails_when_a_new_item_arrived_meanwhile_and_keeps_the_lease(inbox):
    inbox.try_acquire("conv-1", "first", T0, 900)
    seen = inbox.arrivals("conv-1")
    inbox.put(item("m-1"))
    assert inbox.release("conv-1", "first", seen) is False
    assert inbox.try_acquire("conv-1", "second", T1, 900) is False  # still held: the holder drains again
    assert inbox.release("conv-1", "first", inbox.arrivals("conv-1")) is True


def test_release_by_someone_who_does_not_hold_the_lease_fails(inbox):
    inbox.try_acquire("conv-1", "first", T0, 900)
    assert inbox.release("conv-1", "intruder", inbox.arrivals("conv-1")) is False


def test_a_duplicate_put_does_not_bump_the_counter_so_release_still_succeeds(inbox):
    inbox.put(item("m-1"))
    inbox.try_acquire("conv-1", "first", T0, 900)
    seen = inbox.arrivals("conv-1")
    inbox.put(item("m-1"))
    assert inbox.release("conv-1", "first", seen) is True


# ---------------------------------------------------------------- implementation specifics


def test_filesystem_inbox_keeps_its_files_under_the_dot_inbox_folder_of_the_store_root(tmp_path):
    inbox = FilesystemInbox(tmp_path / "sessions")
    inbox.put(item("m-1", session_id="a/b"))
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == [".inbox"]
    assert (tmp_path / "sessions" / ".inbox" / "sessions" / f"{portable_folder_name('a/b')}.json").is_file()


def test_filesystem_inbox_is_shared_by_two_instances_on_one_root(tmp_path):
    one, two = FilesystemInbox(tmp_path), FilesystemInbox(tmp_path)
    one.put(item("m-1"))
    assert two.put(item("m-1")) is False
    assert [i.delivery_id for i in two.pending("conv-1")] == ["m-1"]


def test_dynamo_inbox_finds_waiting_sessions_by_querying_the_sparse_index_never_scanning(aws, clock):
    from .conftest import INBOX_TABLE, moto_env

    inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock)
    inbox.put(item("m-1"))
    inbox.put(item("m-2", session_id="conv-2"))
    inbox.mark("conv-2", "m-2", "done")
    with moto_env().CallLog(aws.dynamodb) as calls:
        assert inbox.sessions_with_pending() == ["conv-1"]
    assert calls.calls == ["dynamodb.Query"]


def test_dynamo_inbox_gives_done_items_a_ttl_and_keeps_pending_ones_forever(aws, clock):
    from .conftest import INBOX_TABLE

    inbox = DynamoInbox(INBOX_TABLE, client=aws.dynamodb, clock=clock, done_ttl_days=7)
    inbox.put(item("m-1"))
    inbox.put(item("m-2"))
    inbox.mark("conv-1", "m-1", "done")

    def raw(sk: str) -> dict[str, Any]:
        return aws.dynamodb.get_item(TableName=INBOX_TABLE, Key={"pk": {"S": "conv-1"}, "sk": {"S": "d#" + sk}})["Item"]

    assert int(raw("m-1")["ttl"]["N"]) == int(clock.now().timestamp()) + 7 * 86400
    assert "pending_shard" not in raw("m-1")
    assert "ttl" not in raw("m-2") and raw("m-2")["pending_shard"]["S"] == "p"


def test_filesystem_inbox_creates_nothing_until_its_first_write(tmp_path):
    inbox = FilesystemInbox(tmp_path / "sessions")
    assert inbox.pending("conv-1") == [] and inbox.get("conv-1", "m-1") is None
    assert inbox.arrivals("conv-1") == 0 and inbox.sessions_with_pending() == []
    with pytest.raises(InvalidDeliveryIdError):
        inbox.put(item(" "))  # refused before any folder is made
    assert not (tmp_path / "sessions").exists()
    inbox.put(item("m-1"))
    assert sorted(p.name for p in (tmp_path / "sessions" / ".inbox").iterdir()) == [
        ".locks",
        ".tmp",
        "pending",
        "sessions",
    ]
    assert inbox.sessions_with_pending() == ["conv-1"]


@pytest.mark.parametrize("removed", ["", ".tmp", "pending", "sessions"])
def test_filesystem_inbox_folders_deleted_by_hand_under_a_live_instance_are_made_again(tmp_path, removed):
    """``archmax serve`` keeps one inbox; ``.inbox/`` (or a folder of it) removed by hand must not fail every put (attack32)."""
    import shutil

    inbox = FilesystemInbox(tmp_path / "sessions")
    inbox.put(item("m-1", session_id="conv-0"))
    shutil.rmtree(tmp_path / "sessions" / ".inbox" / removed)
    assert inbox.put(item("m-2"))
    assert [i.delivery_id for i in inbox.pending("conv-1")] == ["m-2"]
    assert "conv-1" in inbox.sessions_with_pending()
    assert list((tmp_path / "sessions" / ".inbox" / ".tmp").iterdir()) == []
