"""outbound: the sessions table's stream -> mail through SES and lifecycle events on EventBridge (DESIGN.md §3).

Thin by design: the store and dispatcher come from the environment (archmax.hosting.wiring), the
logic is archmax.handlers.outbound; each entry is sent once, keyed by its outbox id.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer

from archmax.handlers import outbound
from archmax.hosting.wiring import outbound_from_environment

logger = Logger()
metrics = Metrics()
tracer = Tracer()
handle = outbound.build(*outbound_from_environment())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event, context):
    return handle(event, context)
