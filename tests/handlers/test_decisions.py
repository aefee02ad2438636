"""``POST /sessions/{id}/decisions``: a person decides a session parked at a human state, over HTTP.

Rule source: issue "HTTP handlers, serve and the CLI" item 2 (the route, in the deliver function,
answering the Outcome like deliveries; typed refusals from hosting/http.py's table), BEHAVIOUR.md
§3.7 (``decide``: the session must be parked on ``decision``; ``to`` must be a transition target)
and DESIGN.md §4 (a refusal writes nothing). The workflow is a small refund approval written to
``tmp_path``: neither example has a human state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import PARK, event

BACKENDS = ["filesystem", "aws"]

REFUND = {
    "instructions": "You handle refund requests.",
    "states": {
        "intake": {
            "triggers": {"manual": None},
            "transitions": [{"to": "review", "description": "The refund is ready for a person."}],
        },
        "review": {
            "type": "human",
            "transitions": [
                {"to": "approved", "description": "Refund approved.", "type": "approve"},
                {"to": "rejected", "description": "Refund refused.", "type": "reject"},
            ],
        },
        "approved": {"instructions": "Tell the customer the refund is on its way."},
        "rejected": {"instructions": "Tell the customer why the refund was refused."},
    },
}

TO_REVIEW = [
    {"call": {"archmax_advance": {"to": "review", "reason": "a refund of 40 EUR"}}},
    {"say": "Please approve the 40 EUR refund for ORD-7."},  # the handoff call at the human state
]
APPROVED = [{"say": "Your refund of 40 EUR is on its way."}]


@pytest.fixture
def refund(tmp_path: Path) -> Path:
    folder = tmp_path / "refund"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(yaml.safe_dump(REFUND))
    return folder


@pytest.fixture(params=BACKENDS)
def deploy(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def body(answer: dict[str, Any]) -> dict[str, Any]:
    return json.loads(answer["body"])


def decision(**payload: Any) -> dict[str, Any]:
    """``events/apigw_decision.json`` (session ``refund-7``) with another JSON body."""
    evt = event("apigw_decision.json")
    evt["body"] = json.dumps(payload)
    return evt


def parked_for_review(deploy: Any, refund: Path, script: list[dict[str, Any]]) -> Any:
    d = deploy(TO_REVIEW + script, refund)
    out = d.collaborators.agent.workflow.send("refund-7", "Please refund ORD-7, it arrived broken.")
    assert (out.kind, out.parked_channel, out.state) == ("parked", "decision", "review")
    return d


def test_a_decision_moves_the_parked_session_on_and_answers_the_outcome(deploy: Any, refund: Path) -> None:
    d = parked_for_review(deploy, refund, APPROVED)
    answer = d.call("deliver", event("apigw_decision.json"))  # {"to": "approved", "comment": ...}
    assert answer["statusCode"] == 200
    out = body(answer)
    assert (out["kind"], out["state"], out["reply"]) == (
        "completed",
        "approved",
        "Your refund of 40 EUR is on its way.",
    )
    assert "messages" not in out and "trail" not in out  # like deliveries: GET has the rest
    summary = d.collaborators.agent.sessions.get("refund-7")
    assert summary is not None and summary.status == "completed"
    notes = [str(m.content) for m in d.collaborators.agent.sessions.messages("refund-7")]
    assert any("[decision]" in n and "approved" in n and "Within the refund policy." in n for n in notes)


def test_a_second_decision_for_the_same_park_is_a_409_and_changes_nothing(deploy: Any, refund: Path) -> None:
    d = parked_for_review(deploy, refund, APPROVED)
    assert d.call("deliver", event("apigw_decision.json"))["statusCode"] == 200
    before = d.snapshot()
    again = d.call("deliver", decision(to="rejected"))
    assert again["statusCode"] == 409
    assert body(again)["error"] == "SessionNotParkedError" and body(again)["session_id"] == "refund-7"
    assert d.snapshot() == before


@pytest.mark.parametrize(
    ("payload", "starts"),
    [
        ({"to": "nowhere"}, "'nowhere' is not a valid decision target for session 'refund-7'"),
        ({"to": "review"}, "'review' is not a valid decision target"),  # the parked state itself
        ({"comment": "no target"}, "A decision target is required"),
    ],
)
def test_a_decision_for_a_target_the_state_does_not_offer_is_a_400_listing_the_choices_and_writes_nothing(
    deploy: Any, refund: Path, payload: dict[str, Any], starts: str
) -> None:
    d = parked_for_review(deploy, refund, [])
    before = d.snapshot()
    answer = d.call("deliver", decision(**payload))
    assert answer["statusCode"] == 400
    assert body(answer)["error"] == "InvalidDecisionTargetError"
    assert body(answer)["message"].startswith(starts) and "approved, rejected" in body(answer)["message"]
    assert d.snapshot() == before
    assert d.collaborators.agent.sessions.get("refund-7").status == "awaiting_decision"


def test_a_decision_for_a_session_that_is_not_parked_at_a_human_state_is_a_409_and_writes_nothing(
    deploy: Any, refund: Path
) -> None:
    d = deploy(PARK)
    before = d.snapshot()
    missing = d.call("deliver", event("apigw_decision.json"))  # no such session: 404 (issue 15), not a conflict
    assert missing["statusCode"] == 404 and body(missing)["error"] == "SessionNotParkedError"
    assert d.snapshot() == before
    d.call("send", event("apigw_send_message.json"))  # AAQk-1 parks awaiting input, not a decision
    before = d.snapshot()
    evt = event("apigw_decision.json")
    evt["rawPath"] = evt["requestContext"]["http"]["path"] = "/sessions/AAQk-1/decisions"
    on_input = d.call("deliver", evt)
    assert on_input["statusCode"] == 409
    assert body(on_input)["error"] == "SessionNotParkedError" and body(on_input)["session_id"] == "AAQk-1"
    assert d.snapshot() == before


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"to": "approved", "reason": "ok"}', "reason: Extra inputs are not permitted"),
        ('{"to": ["approved"]}', "to: Input should be a valid string"),
        ('"approved"', "not an object"),
    ],
)
def test_a_decision_body_that_is_not_usable_is_a_400_naming_the_problem_and_writes_nothing(
    filesystem: Any, refund: Path, raw: str, problem: str
) -> None:
    d = parked_for_review(filesystem, refund, APPROVED)
    before = d.snapshot()
    evt = event("apigw_decision.json")
    evt["body"] = raw
    answer = d.call("deliver", evt)
    assert answer["statusCode"] == 400 and body(answer)["error"] == "InvalidEventError"
    assert problem in body(answer)["message"]
    assert d.snapshot() == before


def test_a_message_that_waited_during_the_decision_wakes_the_session_and_the_deliver_function_drains_it(
    deploy: Any, refund: Path
) -> None:
    d = parked_for_review(deploy, refund, APPROVED + [{"say": "It was sent this morning."}])
    woken: list[str] = []
    d.collaborators.host._waker = woken.append  # the Lambda waker's place: record instead of self-invoking
    message = event("apigw_send_message.json")
    message.update(rawPath="/sessions/refund-7/messages", body='{"message": "When will the refund arrive?"}')
    posted = d.call("send", message)
    assert posted["statusCode"] == 202 and woken == ["refund-7"]  # inboxed, not yet applied
    answer = d.call("deliver", event("apigw_decision.json"))
    assert answer["statusCode"] == 200 and woken == ["refund-7", "refund-7"]  # woken again after the decision
    drained = d.call("deliver", {"drain": "refund-7"})  # the waker's self-invoke of the deliver function
    assert drained == {"ok": True, "drained": [{"kind": "completed", "disposition": "turn", "status": "completed"}]}
    assert d.collaborators.host.inbox.pending("refund-7") == []


def test_the_timer_function_answers_the_wakers_drain_too(filesystem: Any) -> None:
    d = filesystem(PARK)
    d.collaborators.host._waker = lambda session_id: None
    d.call("send", event("apigw_send_message.json"))
    answer = d.call("timer", event("send_drain.json"))
    assert answer["ok"] is True and answer["drained"] == [
        {"kind": "parked", "disposition": "turn", "status": "awaiting_input"}
    ]


def test_a_message_to_a_session_parked_at_a_human_state_replies_there_and_a_decision_still_follows(
    deploy: Any, refund: Path
) -> None:
    """No /replies route is needed: /messages to a decision park is a reply (BEHAVIOUR.md §3.6)."""
    d = parked_for_review(deploy, refund, [{"say": "A person is reviewing it today."}] + APPROVED)
    message = event("apigw_send_message.json")
    message.update(rawPath="/sessions/refund-7/messages", body='{"message": "Any news?"}')
    posted = d.call("send", message)
    assert posted["statusCode"] == 202 and body(posted)["disposition"] == "reply"
    assert d.collaborators.agent.sessions.get("refund-7").status == "awaiting_decision"
    decided = d.call("deliver", event("apigw_decision.json"))
    assert decided["statusCode"] == 200 and body(decided)["kind"] == "completed"
