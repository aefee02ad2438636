"""A worker process that fires events and is killed with SIGKILL at one write (test_sigkill.py).

Run as ``python kill_worker.py '<job json>'``; the job names the store (``filesystem`` root, or the
parent's moto endpoint for ``aws``), the events, and the write to die at (``kill-before`` /
``kill-after``, counted over the whole job). Each event whose caller got an answer is printed
(``applied <n>`` / ``refused <n>``, then the id of any inbox item it made) and flushed before the next, so the parent knows what a caller
of this process learned before it died.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: `reliability` and `stores` import

from reliability import counters  # noqa: E402
from reliability.harness import Fault, World, aws_env_at  # noqa: E402
from reliability.invariants import Ledger  # noqa: E402
from reliability.schedules import Driver  # noqa: E402


def main(job: dict) -> None:
    table = counters.for_store("worker")
    if job["kind"] == "aws":
        world = World("aws", table, aws=aws_env_at(job["endpoint"]))
    else:
        world = World("filesystem", table, tmp=Path(job["root"]))
    driver = Driver(world, Ledger(), table)
    world.faults.arm(Fault(job["fault"], job["at"]))
    for spec in job["events"]:
        event = driver.ledger.new(spec["session_id"], spec["channel"], spec["delivery_id"], spec["act"])
        driver.call(event, event.channel, None, None, nested=True)
        inboxed = [r.delivery_id for r in driver.ledger.inboxed if r.event is event]
        print(f"{event.status} {event.n} {' '.join(inboxed)}".strip(), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
