"""send: webhooks and SES mail are inboxed, then their session is woken (DESIGN.md §4).

Thin by design: collaborators come from the environment (archmax.hosting.wiring), the logic is
archmax.handlers.send, shared with `archmax serve`.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from archmax.handlers import send
from archmax.hosting.wiring import from_environment

logger = Logger()
metrics = Metrics()
tracer = Tracer()
collaborators = from_environment()


def _refused(mail):
    logger.warning("mail refused", extra={"message_id": mail.message_id, "reason": mail.refused})
    metrics.add_metric(name="RefusedMail", unit=MetricUnit.Count, value=1)


collaborators.on_refused = _refused
handle = send.build(collaborators)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event, context):
    return handle(event, context)
