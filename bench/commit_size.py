"""Bytes written per commit as a transcript grows, on the filesystem store (§9.3).

Run: ``.venv/bin/python bench/commit_size.py [--lengths 10,100,1000] [--window 3]``.

One session of ``bench/waiter`` is grown by re-parking deliveries (each adds about six messages
over five commits). When its transcript first reaches each length, the next ``--window``
deliveries are measured:

* **chunk bytes**: the size of each new ``checkpoints/<version>.json``, the file a commit creates
  (its commit point); a delta chunk holds what was appended since the version before, a full chunk
  (versions 1, 51, 101, ...) holds the whole record;
* **full chunk**: what a full chunk of the record would weigh now (``codec.encode_chunk`` with no
  previous counts), written once every ``FULL_EVERY`` versions, and the amortised bytes per commit;
* **head.json**: the cache rewritten after every commit;
* **artifacts / delivery**: ``artifacts/*.json``, overwritten at the end of every operation
  (BEHAVIOUR.md §9.5; not part of a commit);
* **process wrote / delivery**: the kernel's count of bytes this process wrote (``wchar`` in
  ``/proc/self/io``): everything, temp files included.

§9.3: "the bytes a commit writes should not grow with the length of the transcript".

Rule source: BEHAVIOUR.md §9.3, §9.5; DESIGN.md §7.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from _workload import AGAIN_MESSAGE, PARK_MESSAGE, START, WORKFLOW, WaiterModel

from archmax import FakeClock, FilesystemStore, create_agent
from archmax.session.ids import folder_name
from archmax.stores.codec import FULL_EVERY, checkpoint_name, chunk_bytes, encode_chunk

SESSION = "long-session"


def _wchar() -> int | None:
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _deliver(agent: Any) -> int:
    outcome = agent.workflow.deliver(SESSION, trigger="event", message=AGAIN_MESSAGE)
    if outcome.kind != "parked":
        raise RuntimeError(f"expected a park, got {outcome.kind}")
    return len(outcome.messages)


def measure(lengths: list[int], window: int) -> list[dict[str, Any]]:
    """Grow one session through ``lengths`` and measure ``window`` deliveries at each."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = FilesystemStore(Path(tmp) / "sessions")
        agent = create_agent(WORKFLOW, store, WaiterModel(), clock=FakeClock())
        folder = store.root / folder_name(SESSION)
        outcome = agent.workflow.send(SESSION, PARK_MESSAGE, trigger=START)
        count = len(outcome.messages)
        for length in lengths:
            while count < length:
                count = _deliver(agent)
            start_count = count
            v0 = store.head(SESSION).version  # type: ignore[union-attr]
            written0 = _wchar()
            for _ in range(window):
                count = _deliver(agent)
            written1 = _wchar()
            v1 = store.head(SESSION).version  # type: ignore[union-attr]
            chunks = [(folder / checkpoint_name(v)) for v in range(v0 + 1, v1 + 1)]
            sizes = [c.stat().st_size for c in chunks]
            fulls = [json.loads(c.read_bytes())["full"] for c in chunks]
            deltas = [s for s, full in zip(sizes, fulls, strict=True) if not full] or sizes
            record = store.load(SESSION)
            full_now = len(chunk_bytes(encode_chunk(record, None)))  # type: ignore[arg-type]
            delta_median = statistics.median(deltas)
            rows.append(
                {
                    "messages": start_count,
                    "commits": v1 - v0,
                    "delta median": delta_median,
                    "delta max": max(deltas),
                    "full in window": sum(fulls),
                    "full chunk": full_now,
                    "amortised": ((FULL_EVERY - 1) * delta_median + full_now) / FULL_EVERY,
                    "head.json": (folder / "checkpoints" / "head.json").stat().st_size,
                    "artifacts": sum(p.stat().st_size for p in (folder / "artifacts").glob("*")),
                    "wrote": None if written0 is None or written1 is None else (written1 - written0) / window,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="10,100,1000", help="transcript lengths (messages) to measure at")
    parser.add_argument("--window", type=int, default=3, help="deliveries measured at each length")
    args = parser.parse_args(argv)
    rows = measure([int(n) for n in args.lengths.split(",") if n], args.window)
    print(
        f"Bytes written per commit on the filesystem store as the transcript grows"
        f" ({args.window} re-parking deliveries measured at each length)"
    )
    cols = [
        ("messages", "transcript msgs"),
        ("commits", "commits"),
        ("delta median", "chunk B median"),
        ("delta max", "chunk B max"),
        ("ratio", "x first row"),
        ("full chunk", f"full chunk B (1/{FULL_EVERY})"),
        ("amortised", "amortised B/commit"),
        ("head.json", "head.json B"),
        ("artifacts", "artifacts B/delivery"),
        ("wrote", "process wrote B/delivery"),
    ]
    print("  ".join(f"{title:>{max(len(title), 8)}}" for _key, title in cols))
    first = rows[0]["delta median"]
    for row in rows:
        row["ratio"] = row["delta median"] / first
        cells = []
        for key, title in cols:
            value = row[key]
            width = max(len(title), 8)
            if value is None:
                cells.append(f"{'n/a':>{width}}")
            elif key == "ratio":
                cells.append(f"{value:>{width}.2f}")
            else:
                cells.append(f"{value:>{width},.0f}")
        print("  ".join(cells))
    last = rows[-1]
    print(
        f"Transcript x{last['messages'] / rows[0]['messages']:.0f}: the commit's chunk x{last['ratio']:.2f}"
        f" (delta chunks; {sum(r['full in window'] for r in rows)} scheduled full chunk(s) fell in the windows),"
        f" the full chunk written every {FULL_EVERY} versions x{last['full chunk'] / rows[0]['full chunk']:.0f},"
        f" amortised bytes per commit x{last['amortised'] / rows[0]['amortised']:.1f},"
        f" artifacts rewritten per delivery x{last['artifacts'] / rows[0]['artifacts']:.0f}."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
