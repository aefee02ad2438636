"""Print the reliability counts the test processes wrote to a folder (``make soak``'s closing table).

Run as ``python tests/reliability/summary.py <folder>``: every ``<pid>.json`` that
``counters.dump`` wrote there is merged, so a soak stopped part-way still reports what it reached,
then the reports of the tests that failed (``failures.txt``, written as each failed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: `reliability` imports

from reliability import counters  # noqa: E402


def main(folder: Path) -> None:
    for path in sorted(folder.glob("*.json")):
        counters.merge(json.loads(path.read_text(encoding="utf-8")))
    print("\n".join(counters.render()) or "no schedule ran")
    failures = folder / counters.FAILURES_FILE
    if failures.exists():  # the failed tests' reports, falsifying schedules included
        print(failures.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
