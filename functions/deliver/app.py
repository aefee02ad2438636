"""deliver: resolve a park now (a delivery, or a decision at a human state), or a typed refusal (DESIGN.md §4).

Thin by design: collaborators come from the environment (archmax.hosting.wiring), the logic is
archmax.handlers.deliver, shared with `archmax serve`.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer

from archmax.handlers import deliver
from archmax.hosting.wiring import from_environment

logger = Logger()
metrics = Metrics()
tracer = Tracer()
handle = deliver.build(from_environment())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event, context):
    return handle(event, context)
