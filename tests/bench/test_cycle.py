"""The end-to-end cycle harness (bench/cycle.py) on moto: what each path invokes and counts, not how fast.

Structural counts are asserted (invocations per function, the self-invoke, one lifecycle event per
park), and the session calls issue 24 goal 2 makes deterministic: with a warm store the claim is the
read, so a public API cycle is the claim and the turn's commit, and a warm deliver container reads no
session item (engine/remembered.py). A session read coming back fails these.
"""

from __future__ import annotations

import pytest
from _aws import BUCKET, PREFIX, SESSIONS_TABLE, MotoServer
from _meter import Meter
from cycle import MODEL, T0, WORKFLOW, Paths, Stack, _grow, _public_cycle

from archmax import FakeClock, create_agent
from archmax.stores.aws import AwsStore


@pytest.fixture(scope="module")
def server():
    srv = MotoServer()
    yield srv
    srv.stop()


@pytest.fixture
def stack(server):
    clock = FakeClock(T0)
    stack = Stack(server, Meter(server.new_client("dynamodb")), clock)
    stack.grower = create_agent(WORKFLOW, stack.env.store(), MODEL, clock=clock, outbound=False)
    return stack


def _one_cycle(stack: Stack, path: str, warm: bool) -> tuple:
    sid = f"{path}-s"
    _grow(stack.grower, sid, 10)
    stack.stream.records()  # the growth's records belong to no cycle
    paths = Paths(stack, warm=warm)
    if warm:  # as the bench does: the warm containers served a cycle first (and, for the timer, its
        getattr(paths, path)(sid)  # sweep sent what the unsent history held: issue 20 item 2)
    stack.meter.reset()
    getattr(paths, path)(sid)
    return stack.meter.reset()


def test_a_webhook_cycle_counts_the_self_invoke_and_drains_in_another_send_container(stack):
    calls, bill = _one_cycle(stack, "webhook", warm=False)
    assert calls["lambda.Invoke"] == 1
    assert bill.invocations == {"send": 2, "outbound": 1}  # accept, drain, and the stream's batch
    assert bill.eventbridge_entries == 1  # the park's lifecycle event, sent by the outbound function
    assert bill.wru > 0 and bill.rru > 0


def test_a_warm_webhook_cycle_cancels_nothing_and_writes_the_session_item_in_no_transaction(stack):
    """Issue 24: the accept reads the session and puts only inbox items; nothing rides the session's commits."""
    calls, _bill = _one_cycle(stack, "webhook", warm=True)
    assert stack.meter.ended_failed == {}  # no cancelled transaction, no failed condition
    send = {k.split(" ", 1)[1]: n for k, n in stack.meter.ended_by_function.items() if k.startswith("send ")}
    assert send["dynamodb.GetItem"] == 1  # the accept's read of the session
    assert send["dynamodb.TransactWriteItems"] == 1  # the inbox put (item + counter), nothing else
    assert send["dynamodb.Query"] == 2  # the drain's view, and its view again after the mark
    assert send["dynamodb.UpdateItem"] == 3  # the claim, the park's commit, the done mark
    assert send["lambda.Invoke"] == 1
    writes = stack.meter.ended_writes
    assert ("send", "TransactWriteItems", "sessions item") not in writes  # the session item is never billed 2x
    assert writes["send", "UpdateItem", "sessions item"].writes == 2  # the claim and the park
    mark = writes["send", "UpdateItem", "inbox item"]  # the done mark: the small inbox item alone
    assert (mark.writes, mark.table_units, dict(mark.index_units)) == (1, 1, {"pending-items": 1})
    put = writes["send", "TransactWriteItems", "inbox item"]  # the put: item + counter, billed 2x each
    assert (put.writes, put.table_units) == (2, 4)


def test_a_deliver_cycle_runs_the_handler_and_the_outbound_function_and_no_self_invoke(stack):
    calls, bill = _one_cycle(stack, "deliver", warm=True)
    assert "lambda.Invoke" not in calls
    assert bill.invocations == {"deliver": 1, "outbound": 1}
    assert bill.eventbridge_entries == 1


def test_a_timer_cycle_charges_the_whole_sweep_to_the_park_it_wakes(stack):
    calls, bill = _one_cycle(stack, "timer", warm=True)
    assert bill.invocations == {"timer": 1, "outbound": 1}
    assert calls["dynamodb.Query"] >= 1  # the due-parks index
    assert bill.eventbridge_entries == 1


def test_the_sweep_leaves_what_its_own_wake_committed_to_the_outbound_function(stack):
    """Issue 24: the sweep sends the outbox it found marked as it started; the wake's entry is the sender's."""
    _one_cycle(stack, "timer", warm=True)
    writes = stack.meter.ended_writes
    assert not any(function == "timer" and kind == "sessions outbox" for function, _op, kind in writes)
    assert writes["outbound", "UpdateItem", "sessions outbox"].writes == 2  # the park's event: claim, sent record


def _dynamodb(calls: dict[str, int]) -> dict[str, int]:
    return {name: n for name, n in calls.items() if name.startswith("dynamodb.")}


def test_a_public_api_cycle_on_a_warm_store_is_the_claim_and_the_commit(stack):
    store = AwsStore(
        SESSIONS_TABLE, BUCKET, PREFIX, dynamodb_client=stack.clients["dynamodb"], s3_client=stack.clients["s3"]
    )
    public = create_agent(WORKFLOW, store, MODEL, clock=stack.clock, outbound=False)
    _grow(stack.grower, "public-s", 10)
    _public_cycle(public, "public-s")  # warm-up: the store remembers the park its turn made
    stack.meter.reset()
    _public_cycle(public, "public-s")
    calls, _ = stack.meter.reset()
    assert _dynamodb(calls) == {"dynamodb.UpdateItem": 2}  # the claim (also the read) and the commit
    assert stack.meter.ended_failed == {}  # the claim's condition held: no lost claim, no second try


def test_a_warm_deliver_container_reads_no_session_item(stack):
    calls, _ = _one_cycle(stack, "deliver", warm=True)
    # one GetItem: the inbox item of the delivery id (a queued id is refused, issue 22); the session
    # item is read by neither the deliver function nor the outbound one
    assert calls["dynamodb.GetItem"] == 1
    assert stack.meter.ended_by_function["deliver dynamodb.GetItem"] == 1
    deliver = {k.split(" ", 1)[1]: n for k, n in stack.meter.ended_by_function.items() if k.startswith("deliver ")}
    assert deliver["dynamodb.UpdateItem"] == 2  # the claim and the turn's commit


def test_a_deliver_cycles_write_units_are_kept_by_who_wrote_which_item(stack):
    """The report's breakdown: the handler writes the session item, the sender the park's outbox entry."""
    _, bill = _one_cycle(stack, "deliver", warm=True)
    writes = stack.meter.ended_writes
    assert writes["deliver", "UpdateItem", "sessions item"].writes == 2  # the claim and the turn's commit
    assert writes["outbound", "UpdateItem", "sessions outbox"].writes == 2  # the entry's claim and its sent record
    assert not any(function == "deliver" and kind == "sessions outbox" for function, _op, kind in writes)
    assert bill.wru == sum(w.table_units + sum(w.index_units.values()) for w in writes.values())


def test_the_cost_model_takes_each_functions_memory_from_the_template():
    from _aws import template
    from cycle import lambda_assumptions

    tpl = template()
    lam = lambda_assumptions(tpl, 100)
    assert lam.memory_mb == int(tpl["Globals"]["Function"]["MemorySize"])
    assert lam.memory_of("outbound") == int(tpl["Resources"]["OutboundFunction"]["Properties"]["MemorySize"])
    assert lam.memory_of("outbound") < lam.memory_of("deliver")  # the sender runs no model turn


def test_the_senders_own_settle_invokes_nothing(stack):
    """After a cycle's batch, the outbound function's settle of the outbox mark hands the stream nothing.

    As the bench does, the growth's entries are sent first, so the cycle's batch leaves nothing unsent
    and removes the mark: that write must not invoke the function once more (issue 24).
    """
    sid = "settle-s"
    _grow(stack.grower, sid, 10)
    stack.outbound(stack.container("outbound"))  # the growth's entries, sent as the stack would have
    stack.meter.reset()
    Paths(stack, warm=True).deliver(sid)
    assert stack.meter.by_function["outbound dynamodb.UpdateItem"] == 3  # claim, record the entry, settle
    item = stack.server.client("dynamodb").get_item(TableName=SESSIONS_TABLE, Key={"pk": {"S": sid}})["Item"]
    assert "outbox_shard" not in item  # the batch settled the mark
    assert stack.stream.records() == []  # production would otherwise invoke the function once more per cycle
