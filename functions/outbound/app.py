"""outbound: the sessions table's stream -> mail through SES and lifecycle events on EventBridge (DESIGN.md §3).

Thin by design: the store and dispatcher come from the environment (archmax.hosting.wiring), the
logic is archmax.handlers.outbound (each entry sent once, keyed by its outbox id), and
archmax.hosting.telemetry logs, counts and traces the invocation (Powertools).
"""

from archmax.handlers import outbound
from archmax.hosting.telemetry import Telemetry
from archmax.hosting.wiring import outbound_from_environment

telemetry = Telemetry("outbound")
lambda_handler = telemetry.handler(outbound.build(*outbound_from_environment()))
