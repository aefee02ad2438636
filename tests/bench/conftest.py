"""The benchmarks' own modules (bench/cost.py, bench/_meter.py) import by bare name, as the bench scripts run them."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
