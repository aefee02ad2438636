"""Every file in ``events/`` through its handler, in-process, against the filesystem store and moto.

Rule source: DESIGN.md §4 (the four functions; webhooks answer 202 once inboxed; SES mail read
from S3; spam FAIL refused and not delivered), §6 ("Handlers are called in-process with
real-shaped events from events/"), issue 4 "Done when".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import ANSWER, EVENTS, PARK, SUPPORT_INBOX, event

BACKENDS = ["filesystem", "aws"]


@pytest.fixture(params=BACKENDS)
def deploy(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def body(answer: dict[str, Any]) -> dict[str, Any]:
    return json.loads(answer["body"])


def test_every_event_file_is_covered_by_a_test_below() -> None:
    covered = {
        "apigw_send_message.json", "apigw_trigger_webhook.json", "apigw_deliver.json", "apigw_get_session.json",
        "apigw_resolve.json", "deliver_direct.json", "resolve_direct.json", "send_drain.json",
        "scheduled_sweep.json", "scheduler_sweep.json", "ses_inbound.json", "ses_inbound_spam.json",
        "apigw_decision.json",  # test_decisions.py
        "sqs_due_timers.json",  # test_timer_fanout.py
    }  # fmt: skip
    assert {p.name for p in EVENTS.glob("*.json")} == covered


def test_a_message_webhook_answers_202_once_inboxed_and_its_turn_parks_the_session(deploy: Any) -> None:
    d = deploy(PARK)
    answer = d.call("send", event("apigw_send_message.json"))
    assert answer["statusCode"] == 202
    poll = "/sessions/AAQk-1/transcript?delivery_id=msg-AAQk-1-0001"  # issue 15: where to read the outcome
    assert body(answer) == {
        "session_id": "AAQk-1", "disposition": "turn", "delivery_id": "msg-AAQk-1-0001",
        "duplicate": False, "warnings": [], "poll": poll,
    }  # fmt: skip
    assert answer["headers"]["Location"] == poll
    summary = d.collaborators.agent.sessions.get("AAQk-1")
    assert summary is not None and summary.status == "awaiting_input" and summary.state == "clarify"


def test_the_same_message_webhook_twice_is_a_duplicate_that_runs_nothing_new(deploy: Any) -> None:
    d = deploy(PARK)
    d.call("send", event("apigw_send_message.json"))
    before = d.snapshot()
    again = d.call("send", event("apigw_send_message.json"))
    assert again["statusCode"] == 202 and body(again)["duplicate"] is True
    assert d.snapshot() == before


def test_a_trigger_webhook_takes_the_session_id_from_the_triggers_session_path(deploy: Any) -> None:
    d = deploy([{"call": {"archmax_advance": {"to": "answer", "reason": "names ORD-1001"}}}, {"say": "Shipped."}])
    answer = d.call("send", event("apigw_trigger_webhook.json"))  # base64-encoded JSON body
    assert answer["statusCode"] == 202
    assert body(answer)["session_id"] == "AAQk-2"
    summary = d.collaborators.agent.sessions.get("AAQk-2")
    assert summary is not None and summary.status == "completed"
    assert summary.variables["from"]["value"] == "dana.rivers@example.org"


def test_a_delivery_over_http_resumes_the_park_and_answers_the_outcome(deploy: Any) -> None:
    d = deploy(PARK + ANSWER)
    d.call("send", event("apigw_send_message.json"))
    answer = d.call("deliver", event("apigw_deliver.json"))
    assert answer["statusCode"] == 200
    out = body(answer)
    assert out["kind"] == "completed" and out["disposition"] == "deliver" and out["reply"] == "ORD-1001 ships tomorrow."


def test_a_delivery_to_a_session_that_does_not_exist_is_a_404_naming_the_error_and_changes_nothing(
    deploy: Any,
) -> None:
    d = deploy([])
    before = d.snapshot()
    answer = d.call("deliver", event("apigw_deliver.json"))
    assert answer["statusCode"] == 404  # issue 15: a missing session is not a conflict with its state
    assert body(answer)["error"] == "SessionNotAwaitingInputError"
    assert body(answer)["session_id"] == "AAQk-1"
    assert d.snapshot() == before


def test_a_direct_delivery_resumes_the_park_and_a_second_one_is_refused(deploy: Any) -> None:
    d = deploy(PARK + ANSWER)
    d.call("send", event("apigw_send_message.json"))
    first = d.call("deliver", event("deliver_direct.json"))
    assert first["ok"] is True and first["kind"] == "completed"
    again = d.call("deliver", {**event("deliver_direct.json"), "delivery_id": "another-id"})
    assert again == {
        "ok": False, "status": 409, "error": "SessionNotAwaitingInputError",
        "message": again["message"], "session_id": "AAQk-1",
    }  # fmt: skip


def test_get_session_answers_the_summary_and_404_before_the_session_exists(deploy: Any) -> None:
    d = deploy(PARK)
    missing = d.call("resolve", event("apigw_get_session.json"))
    assert missing["statusCode"] == 404 and body(missing)["error"] == "NotFound"
    d.call("send", event("apigw_send_message.json"))
    found = d.call("resolve", event("apigw_get_session.json"))
    assert found["statusCode"] == 200
    assert body(found)["status"] == "awaiting_input" and body(found)["wait_reason"] == "the order number"


def test_post_resolve_says_what_a_firing_would_do_and_writes_nothing(deploy: Any) -> None:
    d = deploy(PARK)
    d.call("send", event("apigw_send_message.json"))
    before = d.snapshot()
    answer = d.call("resolve", event("apigw_resolve.json"))
    assert answer["statusCode"] == 200
    assert body(answer) == {
        "session_id": "AAQk-1", "disposition": "resume", "state": "clarify",
        "minted": False, "recovered": False, "warnings": [],
    }  # fmt: skip
    assert d.snapshot() == before


def test_a_direct_get_reads_the_summary(deploy: Any) -> None:
    d = deploy(PARK)
    d.call("send", event("apigw_send_message.json"))
    answer = d.call("resolve", event("resolve_direct.json"))
    assert answer["ok"] is True and answer["session"]["state"] == "clarify"
    missing = d.call("resolve", {"action": "get", "session_id": "nobody"})
    assert missing == {"ok": True, "session": None}


def test_a_drain_invocation_applies_what_waits_in_the_inbox(deploy: Any) -> None:
    d = deploy(PARK)
    woken: list[str] = []
    d.collaborators.host._waker = woken.append  # the Lambda waker's place: record instead of self-invoking
    d.call("send", event("apigw_send_message.json"))
    assert woken == ["AAQk-1"] and d.collaborators.agent.sessions.get("AAQk-1") is None
    answer = d.call("send", event("send_drain.json"))
    assert answer["ok"] is True and answer["drained"] == [
        {"kind": "parked", "disposition": "turn", "status": "awaiting_input"}
    ]


@pytest.mark.parametrize("name", ["scheduled_sweep.json", "scheduler_sweep.json"])
def test_both_schedule_shapes_sweep_a_due_park_with_the_timer_trigger(deploy: Any, clock: Any, name: str) -> None:
    park_until = [
        {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
        {"say": "I'll check tomorrow.", "call": {"archmax_wait": {"reason": "overnight", "until": "1d"}}},
        {
            "say": "Checked: nothing yet.",
            "call": {"archmax_wait": {"reason": "another night", "until": "1d"}},
        },
    ]
    d = deploy(park_until)
    d.call("send", event("apigw_send_message.json"))
    clock.advance(seconds=86_400)
    answer = d.call("timer", event(name))
    assert answer["ok"] is True
    assert answer["report"]["due"] == [["AAQk-1", "parked"]]
    variables = d.collaborators.agent.sessions.get("AAQk-1").variables
    assert variables["trigger"]["value"] == "timer"


def test_ses_inbound_reads_the_raw_mail_from_s3_and_starts_the_conversation(aws: Any) -> None:
    d = aws(PARK)
    mail = event("ses_inbound.json")
    message_id = mail["Records"][0]["ses"]["mail"]["messageId"]
    d.put_mail(f"inbound/{message_id}", (SUPPORT_INBOX / "emails" / "01-first.eml").read_bytes())
    answer = d.call("send", mail)
    assert answer["ok"] is True
    (record,) = answer["records"]
    # the event's identity is the mail's Message-ID, never the SES message id (issue 9 item 8)
    assert record["delivery_id"] == "3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org" != message_id
    assert record["disposition"] == "turn"
    summary = d.collaborators.agent.sessions.get(record["session_id"])
    assert summary is not None and summary.status == "awaiting_input"


def test_ses_mail_with_a_spam_verdict_of_fail_is_refused_recorded_and_not_delivered(aws: Any) -> None:
    d = aws(PARK)
    mail = event("ses_inbound_spam.json")
    message_id = mail["Records"][0]["ses"]["mail"]["messageId"]
    d.put_mail(f"inbound/{message_id}", (SUPPORT_INBOX / "emails" / "01-first.eml").read_bytes())
    before = d.snapshot()
    answer = d.call("send", mail)
    assert answer["ok"] is True and answer["records"][0]["refused"].startswith("SES spamVerdict is FAIL")
    assert [m.message_id for m in d.refused] == [message_id]
    assert d.snapshot() == before
