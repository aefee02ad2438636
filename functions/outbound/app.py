"""outbound: the sessions table's stream -> mail through SES and lifecycle events on EventBridge (DESIGN.md §3).

Thin by design: the store and dispatcher come from the environment (archmax.hosting.wiring), the
logic is archmax.handlers.outbound (each entry sent once, keyed by its outbox id), and
archmax.hosting.telemetry logs, counts and traces the invocation (Powertools).
"""

from archmax.hosting.coldstart import pause_gc

pause_gc()  # no cyclic GC until the first invocation ends (issue 24 goal 4): archmax.hosting.coldstart

# Powertools' batch utility loads its parser models (pydantic models of every record type it knows,
# built at import, used only as type hints) when pydantic is already loaded: imported before archmax,
# which loads pydantic, it skips them (issue 24 goal 4, bench/cold_import.py).
import aws_lambda_powertools.utilities.batch  # noqa: F401  (first: see above)

from archmax.handlers import outbound
from archmax.hosting.telemetry import Telemetry
from archmax.hosting.wiring import outbound_from_environment

telemetry = Telemetry("outbound")
lambda_handler = telemetry.handler(outbound.build(*outbound_from_environment()))
