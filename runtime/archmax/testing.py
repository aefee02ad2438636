"""What users need to test their own workflows, offline and deterministic.

A scripted model (BEHAVIOUR.md §10.4), a fake clock, the memory store, real-shaped events and a
fake Lambda context (CONVENTIONS.md "archmax.testing").
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archmax.clock import FakeClock
from archmax.models.scripted import ScriptedModel
from archmax.stores.memory import MemoryStore

__all__ = ["FakeClock", "FakeLambdaContext", "MemoryStore", "ScriptedModel", "load_event", "stream_record"]


def load_event(path: str | Path) -> dict[str, Any]:
    """Read a JSON event file (``events/<source>.json``) as a dict."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def stream_record(record: dict[str, Any], source_arn: str) -> dict[str, Any]:
    """A DynamoDB Streams record as boto3's ``GetRecords`` returns it, shaped as Lambda hands it to a function.

    Lambda's JSON: ``ApproximateCreationDateTime`` in epoch seconds, binary attribute values in
    base64 (boto3 decodes them to ``bytes``), and the ``eventSourceARN`` of the stream.

    Args:
        record: One entry of ``get_records(...)["Records"]``.
        source_arn: The stream's ARN.

    Returns:
        The record as a JSON-safe dict (what an event source mapping's filter and the handler see).
    """
    stream = dict(record["dynamodb"])
    created = stream.get("ApproximateCreationDateTime")
    if created is not None and hasattr(created, "timestamp"):
        stream["ApproximateCreationDateTime"] = created.timestamp()
    shaped = {**{k: v for k, v in record.items() if k != "dynamodb"}, "dynamodb": stream, "eventSourceARN": source_arn}
    return json.loads(json.dumps(shaped, default=_base64))


def _base64(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


@dataclass
class FakeLambdaContext:
    """The attributes Powertools and handlers read from a Lambda context."""

    function_name: str = "archmax-test"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:archmax-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/archmax-test"
    log_stream_name: str = "test"

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the Lambda timeout: always 300000 (5 minutes), so no test meets a deadline."""
        return 300_000
