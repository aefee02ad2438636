"""A process killed with SIGKILL at any write of its firings loses and repeats nothing.

Issue 9 "What to build": "a subprocess killed with SIGKILL mid-turn". A worker process (kill_worker.py)
fires a random list of events at the filesystem store or at AwsStore + DynamoInbox on this process's
moto server, and kills itself at its k-th store or inbox write (before or after the write lands).
This process then recovers the storage as a host would (leases expire on the injected clock, the
sweep runs, callers retry what they got no answer for) and checks every invariant of invariants.py.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import counters
from .conftest import PROFILE, SIGKILL_EXAMPLES
from .harness import Fault, World
from .invariants import InboxRecord, Ledger
from .schedules import ACTS, CHANNELS, Driver, left_out

WORKER = Path(__file__).with_name("kill_worker.py")

events = st.lists(
    st.tuples(st.sampled_from(CHANNELS), st.sampled_from(("s0", "s1")), st.sampled_from(ACTS), st.booleans()),
    min_size=1,
    max_size=5,
)


def unless_open(channel: str, act: str, table: counters.StoreCounters) -> tuple[str, str]:
    """Every event of a killed process is cut short: mixes reaching an open scenario are narrowed as in the schedules."""
    kill = Fault("kill-after", 1)
    scenario = left_out(channel, act, False, kill, racing=False)
    if scenario is not None:
        table.left_out(scenario)
        act = "wait"
        channel = "send" if left_out(channel, act, False, kill, racing=False) else channel
    return channel, act


@pytest.mark.parametrize("kind", ["filesystem", "aws"])
def test_a_process_killed_at_any_write_loses_and_repeats_nothing(kind: str) -> None:
    @settings(settings.get_profile(PROFILE), max_examples=SIGKILL_EXAMPLES)
    @given(specs=events, at=st.integers(1, 14), when=st.sampled_from(("kill-before", "kill-after")))
    def schedule(specs: list[tuple], at: int, when: str) -> None:
        table = counters.for_store(f"{kind}+sigkill")
        tmp = Path(tempfile.mkdtemp(prefix="archmax-sigkill-")) if kind == "filesystem" else None
        world = World(kind, table, tmp=tmp)
        try:
            ledger = Ledger()
            for n, (channel, sid, act, with_id) in enumerate(specs, start=1):
                channel, act = unless_open(channel, act, table)
                event = ledger.new(sid, channel, f"d-{n}" if with_id else None, act)
                event.via_inbox = channel == "accept"
            job = {
                "kind": kind,
                "root": str(tmp) if tmp else None,
                "endpoint": world.aws.server.endpoint_url if world.aws else None,
                "fault": when,
                "at": at,
                "events": [
                    {"session_id": e.session_id, "channel": e.channel, "delivery_id": e.delivery_id, "act": e.act}
                    for e in ledger.events.values()
                ],
            }
            done = subprocess.run(
                [sys.executable, str(WORKER), json.dumps(job)], capture_output=True, text=True, timeout=300
            )
            assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
            if done.returncode == -signal.SIGKILL:
                table.fault("sigkill")
            for line in done.stdout.splitlines():
                status, n, *minted = line.split()
                event = ledger.events[int(n)]
                event.status, event.tries = status, 1
                if status == "applied" and event.channel == "accept":
                    ledger.inboxed.append(InboxRecord(event, True, minted[0]))
            world.restart()
            Driver(world, ledger, table).recover_and_check()
        finally:
            world.close()
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            counters.dump()

    schedule()
