"""wake: fires the due timers the timer function's sweep queued, in parallel (issue 24 goal 3).

Thin by design: collaborators come from the environment (archmax.hosting.wiring), the logic is
archmax.handlers.wake (each message fired once into the park it names, through the engine's door),
and archmax.hosting.telemetry logs, counts (TimerLateness) and traces what it does (Powertools).
"""

from archmax.hosting.coldstart import pause_gc

pause_gc()  # no cyclic GC until the first invocation ends (issue 24 goal 4): archmax.hosting.coldstart

# Powertools' batch utility loads its parser models (pydantic models of every record type it knows,
# built at import, used only as type hints) when pydantic is already loaded: imported before archmax,
# which loads pydantic, it skips them (issue 24 goal 4, bench/cold_import.py).
import aws_lambda_powertools.utilities.batch  # noqa: F401  (first: see above)

from archmax.handlers import wake
from archmax.hosting.telemetry import Telemetry
from archmax.hosting.wiring import from_environment

telemetry = Telemetry("wake")
lambda_handler = telemetry.handler(wake.build(from_environment(telemetry=telemetry)))
