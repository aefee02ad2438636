"""Run every benchmark, one fresh process each, and print their tables one after another.

Run: ``make bench`` (or ``.venv/bin/python bench/run_all.py [name ...]`` for a subset, e.g.
``run_all.py roundtrips``). Exits 1 when a benchmark failed; benchmarks assert no time.

Rule source: DESIGN.md §7.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCRIPTS = ("roundtrips", "commit_size", "deliveries", "cold_import", "peers", "cycle", "sweep_fanout")


def main(argv: list[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(SCRIPTS)
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(SCRIPTS)}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"== bench/{name}.py", flush=True)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(BENCH / f"{name}.py")], cwd=BENCH.parent, check=False)
        print(f"-- bench/{name}.py: exit {done.returncode}, {time.perf_counter() - started:.0f} s\n", flush=True)
        if done.returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
