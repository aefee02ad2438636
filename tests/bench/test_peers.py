"""bench/peers.py's archmax systems with the deployed stack's sender (bench/_stream.py) on moto.

Only counts that do not depend on the runtime's speed are asserted: how many entries the
checkpoint's outbox record holds, and how often a commit asks which entries are settled (issue 20
item 1: a commit that would grow the record past ``OUTBOX_KEPT`` asks once and drops every settled
entry; on AWS the question is one BatchGetItem of the per-entry items, never an S3 listing, issue 24).
"""

from __future__ import annotations

import pytest
from _aws import MotoServer
from _workload import AGAIN_MESSAGE
from peers import Archmax, ArchmaxLambda, _build, _counted, _timed_threads

from archmax.session.records import OUTBOX_KEPT


@pytest.fixture(scope="module")
def server():
    srv = MotoServer()
    yield srv
    srv.stop()


@pytest.mark.parametrize("cls", [Archmax, ArchmaxLambda], ids=["public", "lambda"])
def test_with_the_sender_settling_between_cycles_the_record_stays_within_outbox_kept(server, cls):
    system = _build(cls, server)
    system.start("s")
    system.settle()
    sizes, questions, listings = [], 0, 0
    for _ in range(2 * OUTBOX_KEPT):  # one lifecycle event per park: one entry per cycle
        counter = _counted(system, lambda: system.cycle("s"))  # the sender settles after the count
        questions += counter.calls["dynamodb.BatchGetItem"]
        listings += counter.calls["s3.ListObjectsV2"]
        sizes.append(system.outbox_size("s"))
    assert max(sizes) <= OUTBOX_KEPT
    assert sizes.count(1) == 2  # twice the record was emptied of its settled entries, the new one left
    assert questions == 2  # one settled question per OUTBOX_KEPT entries, none at the other commits
    assert listings == 0  # the entries' state is in DynamoDB items: no S3 listing
    assert system.sender.records >= 2 * OUTBOX_KEPT + 2  # the warm-up, the start and every cycle were sent


def test_without_a_sender_no_entry_leaves_the_record(server):
    system = _build(Archmax, server)
    system.start("s")
    for _ in range(OUTBOX_KEPT + 2):
        system.cycle("s")
    assert system.outbox_size("s") == OUTBOX_KEPT + 3  # the start's entry and one per cycle: none sent


@pytest.mark.parametrize("cls", [Archmax, ArchmaxLambda], ids=["public", "lambda"])
def test_threads_each_cycle_their_own_session_on_one_shared_instance(server, cls):
    system = _build(cls, server)
    rate = _timed_threads(system, threads=4, cycles=2)
    assert rate > 0
    for n in range(4):  # each thread's session: started, then two resumes that parked again
        record = system.env.store().load(f"t{n}")
        assert record is not None and record.status == "awaiting_input"  # parked on the wait tool
        assert sum(1 for m in record.messages if m.role == "user" and AGAIN_MESSAGE in str(m.content)) == 2
