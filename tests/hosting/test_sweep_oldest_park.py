"""Every sweep reports the workflow's oldest open park, and on AWS that costs no scan and no session read.

Rule source: BEHAVIOUR.md §5.11 ("Hosts report the oldest park's age per workflow as a metric, so a
wait nobody answers is seen"), issue 21 item 7, DESIGN.md §3 ("No table scans on any hot path"; the
timer's role holds no ``dynamodb:Scan``). The store answers ``oldest_park(workflow)`` from its
sparse ``open-parks`` index; a sweep with nothing due reads no session item or object at all.
"""

from __future__ import annotations

from typing import Any

from archmax.session.firing import Firing
from archmax.session.records import SessionStatus

from .conftest import moto_env

TO_CLARIFY = {
    "call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}},
    "expect_state": "intake",
}
WAIT = {"say": "Which order is it?", "call": {"archmax_wait": {"reason": "the order number"}}}


def _park(host: Any, sid: str) -> None:
    host.accept(Firing(trigger="email_received", message="About my order", variables={"conversation_id": sid}))
    assert host.agent.sessions.get(sid).status == SessionStatus.AWAITING_INPUT


def test_the_sweep_reports_the_oldest_parks_age_on_every_store(make_host: Any, clock: Any) -> None:
    host = make_host([TO_CLARIFY, WAIT, TO_CLARIFY, WAIT])
    assert host.sweep().oldest_park is None
    _park(host, "AAQk-old")
    clock.advance(hours=1)
    _park(host, "AAQk-new")
    clock.advance(hours=2)

    report = host.sweep()

    assert report.oldest_park == "AAQk-old" and report.oldest_park_age_s == 3 * 3600.0


def test_a_sweep_with_nothing_due_makes_no_scan_and_reads_no_session_on_aws(
    make_aws_host: Any, aws: Any, clock: Any
) -> None:
    host = make_aws_host([TO_CLARIFY, WAIT] * 5)
    for i in range(5):
        _park(host, f"AAQk-{i}")
        clock.advance(minutes=10)

    with moto_env().CallLog(aws.dynamodb, aws.s3) as log:
        report = host.sweep()

    assert report.oldest_park == "AAQk-0" and report.oldest_park_age_s == 50 * 60.0
    assert report.due == [] and report.stale == []
    assert log.count("dynamodb.Scan") == 0
    assert set(log.calls) == {"dynamodb.Query"}  # index listings only: no GetItem, no S3 read
