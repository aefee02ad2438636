"""The timer function reports the workflow's oldest open park (BEHAVIOUR.md §5.11, issue 21 item 7).

A wait nobody answers is seen: every sweep emits ``OldestParkAge`` (seconds, dimension ``Workflow``)
while a session of the workflow is parked, and nothing once no session is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archmax.testing import FakeLambdaContext

from .test_telemetry import deployed, event, read  # noqa: F401 - fixture


def test_every_sweep_reports_the_oldest_open_parks_age_until_it_is_answered(
    deployed: dict[str, Any],  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from archmax.clock import FakeClock
    from archmax.handlers import deliver, send, timer
    from archmax.hosting.telemetry import Telemetry
    from archmax.hosting.wiring import from_environment

    clock = FakeClock("2025-01-01T00:00:00.000Z")
    telemetry = Telemetry("timer")
    collaborators = from_environment(clock=clock, telemetry=telemetry)
    send_handler = telemetry.handler(send.build(collaborators))
    timer_handler = telemetry.handler(timer.build(collaborators))
    assert send_handler(event("apigw_send_message.json"), FakeLambdaContext())["statusCode"] == 202
    assert collaborators.agent.sessions.get("AAQk-1").status == "awaiting_input"
    capsys.readouterr()

    clock.advance(hours=3)
    report = timer_handler(event("scheduled_sweep.json"), FakeLambdaContext())["report"]
    assert report["oldest_park"] == "AAQk-1" and report["oldest_park_age_s"] == 10800.0
    ((age, dims),) = read(capsys).metric("OldestParkAge")
    assert age == [10800.0] and dims["Workflow"] == "support-inbox"

    answered = deliver.build(collaborators)(event("apigw_deliver.json"), FakeLambdaContext())
    assert answered["statusCode"] == 200, answered["body"]
    capsys.readouterr()
    report = timer_handler(event("scheduled_sweep.json"), FakeLambdaContext())["report"]
    assert report["oldest_park"] is None and read(capsys).metric("OldestParkAge") == []
