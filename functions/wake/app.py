"""wake: fires the due timers the timer function's sweep queued, in parallel (issue 24 goal 3).

Thin by design: collaborators come from the environment (archmax.hosting.wiring), the logic is
archmax.handlers.wake (each message fired once into the park it names, through the engine's door),
and archmax.hosting.telemetry logs, counts (TimerLateness) and traces what it does (Powertools).
"""

from archmax.handlers import wake
from archmax.hosting.telemetry import Telemetry
from archmax.hosting.wiring import from_environment

telemetry = Telemetry("wake")
lambda_handler = telemetry.handler(wake.build(from_environment(telemetry=telemetry)))
