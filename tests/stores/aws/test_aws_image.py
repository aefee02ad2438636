"""What a stream record's NewImage tells the outbound function without a session read (issue 24 goal 2).

The images are the session items as the AWS store's commits leave them on moto (a stream's
``NEW_IMAGE`` is exactly that item), so the format read is the one written.
"""

from __future__ import annotations

import base64
from typing import Any

from archmax.session.records import OutboxEntry, SessionStatus
from archmax.stores.aws.image import record_of_image, recorded_nothing

from .records import record


def _item(aws_env: Any, sid: str) -> dict[str, Any]:
    return aws_env.dynamodb.get_item(TableName=aws_env.table_name, Key={"pk": {"S": sid}})["Item"]


def _parked(sid: str, version: int, *, pad: int = 0, entries: bool = True) -> Any:
    rec = record(sid, version, status=SessionStatus.AWAITING_INPUT, messages=version, pad=pad)
    if entries:
        rec.outbox = [
            OutboxEntry(version=version, index=0, kind="event", detail_type="Session Parked", text=f"asked {version}")
        ]
    return rec


def test_an_inline_chunk_gives_the_committed_record_with_its_outbox_and_no_transcript(aws_env: Any) -> None:
    store = aws_env.store()
    store.commit("img", _parked("img", 1), 0)
    two = _parked("img", 2)
    two.outbox = [*_parked("img", 1).outbox, *two.outbox]  # an entry of v1 not yet settled, and v2's own
    store.commit("img", two, 1)
    image = _item(aws_env, "img")
    got = record_of_image("img", image)
    assert got is not None and got.version == 2 and got.messages == [] and got.trail == []
    assert [e.id for e in got.outbox] == [e.id for e in two.outbox] and got.outbox[1].text == "asked 2"
    assert got.created_at == two.created_at and got.status == SessionStatus.AWAITING_INPUT
    assert recorded_nothing(image) is False


def test_a_chunk_kept_in_s3_or_an_image_of_another_session_gives_nothing_to_send_from(aws_env: Any) -> None:
    store = aws_env.store()
    store.commit("big", _parked("big", 1), 0)
    store.commit("big", _parked("big", 2, pad=20_000), 1)  # too large for the item: an S3 object
    image = _item(aws_env, "big")
    assert "b" not in image["chunks"]["L"][-1].get("M", {})
    assert record_of_image("big", image) is None and recorded_nothing(image) is False
    store.commit("small", _parked("small", 1), 0)
    assert record_of_image("other", _item(aws_env, "small")) is None


def test_only_a_whole_item_image_whose_version_recorded_no_entry_is_known_to_owe_nothing(aws_env: Any) -> None:
    store = aws_env.store()
    store.commit("quiet", _parked("quiet", 1), 0)
    store.commit("quiet", _parked("quiet", 2, entries=False), 1)  # v1's mark stays; v2 recorded nothing
    assert recorded_nothing(_item(aws_env, "quiet")) is True
    store.commit("noisy", _parked("noisy", 1), 0)
    store.outbox_settled("noisy", 1)  # the sender's own update: the mark is gone
    assert recorded_nothing(_item(aws_env, "noisy")) is True
    store.commit("fresh", _parked("fresh", 1), 0)
    assert recorded_nothing(_item(aws_env, "fresh")) is False
    assert recorded_nothing({"pk": {"S": "fresh"}, "version": {"N": "1"}}) is False  # not the whole item
    assert record_of_image("fresh", {"pk": {"S": "fresh"}, "version": {"N": "1"}}) is None


def test_a_lambda_event_image_with_its_binary_chunk_as_base64_text_gives_the_same_record(aws_env: Any) -> None:
    store = aws_env.store()
    store.commit("b64", _parked("b64", 1), 0)
    item = _item(aws_env, "b64")
    last = item["chunks"]["L"][-1]["M"]
    assert isinstance(last["z"]["B"], bytes)  # packed (issue 24): boto3 gives bytes ...
    event = {**item, "chunks": {"L": [{"M": {**last, "z": {"B": base64.b64encode(last["z"]["B"]).decode()}}}]}}
    assert record_of_image("b64", event) == record_of_image("b64", item) is not None  # ... a Lambda event base64


def test_an_image_listing_a_segment_item_before_its_inline_chunk_gives_the_record(aws_env: Any) -> None:
    store = aws_env.store()
    for v in range(1, 7):  # the inline budget runs out: older chunks move to segment items (issue 24)
        store.commit("moved", _parked("moved", v, pad=800), v - 1)
    image = _item(aws_env, "moved")
    assert any("d" in e.get("M", {}) for e in image["chunks"]["L"])
    got = record_of_image("moved", image)
    assert got is not None and got.version == 6 and got.outbox[-1].text == "asked 6"
