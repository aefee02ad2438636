"""The ``grade`` assertion's judge: one closed question about the transcript, answered as JSON.

Rule source: BEHAVIOUR.md §10.2 (``grade: {closedQA, atLeast}``: the score, clamped to 0..1, is
≥ ``atLeast``; needs ``tests.judge``; a non-JSON answer gets one retry, then scores 0) and §7
(in grader evidence a note appears as ``[runtime:<kind>] <text>``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from archmax.models.base import Model, ModelRequest
from archmax.session.evidence import evidence
from archmax.session.records import Message

JUDGE_SYSTEM = (
    "You grade one conversation of an automated agent against one closed question. Read the evidence, "
    'then answer with JSON only, exactly {"score": <number from 0 to 1>, "reason": "<one sentence>"}. '
    "1 means the answer to the question is fully yes, 0 means no."
)
RETRY_TEXT = (
    'Your answer was not the JSON object asked for. Answer again with JSON only: {"score": <0..1>, "reason": "..."}'
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def parse_score(text: str) -> float | None:
    """The clamped score of a judge answer, or ``None`` when it is not a JSON object with a numeric ``score``."""
    body = _FENCE.sub("", (text or "").strip())
    try:
        doc: Any = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    score = doc.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    return min(1.0, max(0.0, float(score)))


def grade(judge: Model, question: str, messages: list[Message], *, session_id: str) -> tuple[float, str]:
    """Ask the judge one closed question about the transcript.

    Args:
        judge: The model configured as ``tests.judge``.
        question: The ``closedQA`` text.
        messages: The session's transcript (notes included; they become ``[runtime:<kind>]`` lines).
        session_id: Carried on the request.

    Returns:
        ``(score, detail)``: the score clamped to 0..1 (0 after two non-JSON answers) and a short note.

    Raises:
        ModelError: the judge's provider failed (the case dies like any other action failure).
    """
    prompt = f"Question: {question}\n\nEvidence (the conversation):\n{evidence(messages)}"
    transcript = [Message(role="user", content=prompt)]
    answers = []
    for _attempt in range(2):
        response = judge.complete(
            ModelRequest(system=JUDGE_SYSTEM, messages=list(transcript), tools=[], state="grade", session_id=session_id)
        )
        answers.append(response.text or "")
        score = parse_score(response.text or "")
        if score is not None:
            return score, f"judge scored {score:g}"
        transcript += [
            Message(role="assistant", content=response.text or ""),
            Message(role="user", content=RETRY_TEXT),
        ]
    return 0.0, f"judge gave no JSON score twice (last answer: {answers[-1][:80]!r}); scored 0"
