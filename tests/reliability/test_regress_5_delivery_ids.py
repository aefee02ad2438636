"""Issue 9, scenario 5: a delivery id is remembered for as long as the session lives.

Deliver with id ``first-event``, then more deliveries with other ids than the checkpoint's own window
(``DELIVERY_IDS_KEPT``), then redeliver ``first-event``: it is refused as a duplicate and changes
nothing. Ids older than the window live as marker files in the session's folder (on AWS, S3 objects:
the session item holds none). Rule source: README promises, DESIGN.md §3 "Inbox"; issue 9 item 5.
Every store kind.

To stay fast, most of the window is filled by one commit through the store (the record as
``DELIVERY_IDS_KEPT - 1`` applied firings would leave it); the firings that push ids out of the
window are real deliveries.
"""

from __future__ import annotations

import pytest

from archmax import DuplicateDeliveryError
from archmax.engine.deliveries import MARKERS, marker_path
from archmax.session.records import DELIVERY_IDS_KEPT
from archmax.spec import workflow_from_dict
from reliability.regress_env import *  # noqa: F403 - the fixtures
from reliability.regress_env import Env

CHAT = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "chat")


def _fill_window(env: Env, sid: str) -> None:
    """Commit the session as if ``DELIVERY_IDS_KEPT - 1`` more firings had been applied after the first."""
    rec = env.store.load(sid)
    rec.delivery_ids = rec.delivery_ids + [f"filler-{i}" for i in range(DELIVERY_IDS_KEPT - len(rec.delivery_ids))]
    rec.version += 1
    env.store.commit(sid, rec, rec.version - 1)


def test_a_delivery_id_older_than_the_window_is_still_a_duplicate(env: Env) -> None:
    agent = env.agent([{"say": f"ok {i}"} for i in range(3)], CHAT)
    agent.workflow.send("c5", "first", trigger="manual", delivery_id="first-event")
    _fill_window(env, "c5")
    for i in range(2):  # pushes first-event, then filler-0, out of the window
        agent.workflow.send("c5", f"message {i}", trigger="manual", delivery_id=f"event-{i}")
    store = env.other_store()
    assert "first-event" not in store.load("c5").delivery_ids
    before = store.load("c5").model_dump_json()

    with pytest.raises(DuplicateDeliveryError):
        agent.workflow.send("c5", "first", trigger="manual", delivery_id="first-event")
    with pytest.raises(DuplicateDeliveryError):
        agent.workflow.send("c5", "again", trigger="manual", delivery_id="filler-0")

    assert store.load("c5").model_dump_json() == before  # refused: nothing changed
    assert len(store.load("c5").delivery_ids) == DELIVERY_IDS_KEPT
    assert store.list_files("c5", MARKERS) == sorted([marker_path("first-event"), marker_path("filler-0")])
    if env.kind == "aws":
        item = env.aws.dynamodb.get_item(TableName=env.aws.table_name, Key={"pk": {"S": "c5"}})["Item"]
        # ids never become item attributes; a small checkpoint delta may ride inside `chunks` (issue 10),
        # bounded by the store's inline budget
        outside = {k: v for k, v in item.items() if k != "chunks"}
        assert "first-event" not in str(outside) and "event-1" not in str(outside)


def test_a_new_id_after_the_window_filled_is_applied_once(env: Env) -> None:
    agent = env.agent([{"say": "ok 0"}, {"say": "ok 1"}], CHAT)
    agent.workflow.send("c5b", "first", trigger="manual", delivery_id="first-event")
    _fill_window(env, "c5b")

    out = agent.workflow.send("c5b", "new", trigger="manual", delivery_id="brand-new")

    assert out.kind == "completed" and out.reply == "ok 1"
    with pytest.raises(DuplicateDeliveryError):
        agent.workflow.send("c5b", "new", trigger="manual", delivery_id="brand-new")
