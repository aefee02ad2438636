"""deliver: resolve a park now (a delivery, or a decision at a human state), or a typed refusal (DESIGN.md §4).

Thin by design: collaborators come from the environment (archmax.hosting.wiring: the workflow of
WORKFLOW_DIR with its tools.py, the store, the model), the logic is archmax.handlers.deliver, shared with
`archmax serve`, and archmax.hosting.telemetry logs, counts and traces what it does (Powertools).
"""

from archmax.hosting.coldstart import pause_gc

pause_gc()  # no cyclic GC until the first invocation ends (issue 24 goal 4): archmax.hosting.coldstart

from archmax.handlers import deliver
from archmax.hosting.telemetry import Telemetry
from archmax.hosting.wiring import from_environment

telemetry = Telemetry("deliver")
lambda_handler = telemetry.handler(deliver.build(from_environment(telemetry=telemetry)))
