"""The session page in a real headless Chromium, served by ``archmax serve`` (issue 15, Tests).

A support-inbox session is driven over HTTP (the webhook's 202, a delivery), then its page is
opened in Chromium from the Debian package (``/usr/bin/chromium``; ``.ci/run`` installs it),
driven by Playwright over the DevTools protocol with that binary (Playwright downloads no browser
here). The page must load with no console error and no request but its own, draw the SVG graph
with the current state marked, and show the parks and deliveries in the timeline and the
conversation. A screenshot is written under the test's temporary folder for people to look at.

At a phone's width (390 px, issue 25 item 7) the timeline stacks: every entry, its time, kind and
words, is drawn inside the viewport with a size, times read as ``YYYY-MM-DD HH:MM:SS UTC`` with the
exact instant in ``<time datetime>``, and held mail (issue 25 item 6) is on the page.
"""

from __future__ import annotations

import json
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from archmax.inbound.quarantine import QuarantinedMail, hold
from archmax.models.scripted import ScriptedModel
from archmax.serve import serve
from archmax.stores.filesystem import FilesystemStore

REPO = Path(__file__).resolve().parents[2]
SUPPORT_INBOX = REPO / "examples" / "workflows" / "support-inbox"

SCRIPT = [
    {"call": {"archmax_advance": {"to": "clarify", "reason": "no order number"}}},
    {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the customer's order number"}}},
    {
        "say": "Thanks, still checking: one more detail please.",
        "call": {"archmax_wait": {"reason": "the delivery address", "until": "2d"}},
    },
    {"call": {"archmax_advance": {"to": "answer", "reason": "the reply names ORD-1001"}}},
    {"say": "ORD-1001 ships tomorrow."},
]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no chromium binary on PATH (Debian: apt-get install chromium; .ci/run installs it)")
    return found


def _post(url: str, body: dict[str, Any], key: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Idempotency-Key": key},
    )
    with urllib.request.urlopen(req, timeout=30) as answer:
        return answer.status, dict(answer.headers), json.loads(answer.read())


@pytest.fixture
def browser() -> Any:
    executable = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the dev extra) is not installed")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def _drive_support_inbox(server: Any) -> None:
    """The webhook's 202, then two replies: the session parks twice and completes in 'answer'."""
    status, headers, _accepted = _post(
        f"{server.url}/triggers/email_received",
        {"conversation_id": "AAQk-1", "message": "Where is the thing we discussed?"},
        "k-1",
    )
    assert status == 202 and headers["Location"].startswith("/sessions/AAQk-1/transcript?delivery_id=")
    for n, reply in enumerate(["It's ORD-1001.", "12 Harbour Street."], start=2):
        _post(
            f"{server.url}/sessions/AAQk-1/deliveries",
            {"trigger": "email_reply", "variables": {"reply_body": reply}, "message": reply},
            f"k-{n}",
        )


def test_the_page_of_a_support_inbox_session_in_chromium(tmp_path: Path, browser: Any) -> None:
    server = serve(
        SUPPORT_INBOX, root=tmp_path / "sessions", port=0, sweep_interval_s=None, model=ScriptedModel(SCRIPT), env={}
    )
    try:
        _drive_support_inbox(server)

        page = browser.new_page(viewport={"width": 1200, "height": 900})
        console: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda exc: console.append(f"pageerror: {exc}"))
        page.on("request", lambda r: requests.append(r.url))
        url = f"{server.url}/sessions/AAQk-1/view"
        answer = page.goto(url, wait_until="load")
        assert answer is not None and answer.status == 200
        page.screenshot(path=str(tmp_path / "session-page.png"), full_page=True)

        assert console == []
        assert requests == [url]  # nothing else: no script, font, image or style from anywhere

        svg = page.locator("#graph svg.graph")
        assert svg.count() == 1 and svg.bounding_box()["width"] > 100
        current = page.locator('svg.graph [aria-current="step"]')
        assert current.count() == 1 and current.get_attribute("data-state") == "answer"
        assert page.locator("svg.graph .state").count() == 4
        assert page.locator("svg.graph .edge.taken").count() == 2  # intake → clarify → answer

        kinds = page.locator("#timeline li.entry").evaluate_all("els => els.map(e => e.dataset.kind)")
        assert kinds == ["turn", "advance", "park", "delivery", "park", "delivery", "advance", "completed"]
        timeline = page.locator("#timeline").inner_text()
        assert "parked for input in 'clarify': the customer's order number" in timeline
        assert "resume_at " in timeline and "delivery 'email_reply' resumed 'clarify'" in timeline

        notes = page.locator("#conversation .runtime[data-note=event]")
        assert notes.count() == 2 and "'email_reply' arrived" in notes.first.inner_text()
        people = page.locator("#conversation .msg.person").all_inner_texts()
        assert any("It's ORD-1001." in t for t in people) and any("12 Harbour Street." in t for t in people)
        assert page.locator('#conversation details.tool[data-tool="archmax_note"]').count() == 0
        assert page.locator('#conversation details.tool[data-tool="archmax_wait"]').count() == 2
        assert "ORD-1001 ships tomorrow." in page.locator("#conversation .msg.agent").last.inner_text()
        assert (tmp_path / "session-page.png").stat().st_size > 10_000

        listing = browser.new_page()
        listing.goto(f"{server.url}/")
        link = listing.locator("a", has_text="AAQk-1")
        assert link.get_attribute("href") == "/sessions/AAQk-1/view"
    finally:
        server.stop()


PHONE = {"width": 390, "height": 844}


def test_the_page_at_390_px_stacks_the_timeline_inside_the_viewport_with_readable_times(
    tmp_path: Path, browser: Any
) -> None:
    server = serve(
        SUPPORT_INBOX, root=tmp_path / "sessions", port=0, sweep_interval_s=None, model=ScriptedModel(SCRIPT), env={}
    )
    try:
        _drive_support_inbox(server)
        page = browser.new_page(viewport=PHONE)
        answer = page.goto(f"{server.url}/sessions/AAQk-1/view", wait_until="load")
        assert answer is not None and answer.status == 200
        page.screenshot(path=str(tmp_path / "session-page-390.png"), full_page=True)

        entries = page.locator("#timeline li.entry")
        assert entries.count() == 8
        for i in range(entries.count()):
            entry = entries.nth(i)
            entry.scroll_into_view_if_needed()
            assert entry.is_visible()
            for part in [entry, *entry.locator("> *").all()]:  # the time, the kind and the words
                box = part.bounding_box()
                assert box is not None and box["width"] > 0 and box["height"] > 0, part.inner_html()
                assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (part.inner_html(), box)
        words = entries.locator("> span:last-child")
        assert all(
            w["width"] > 150 for w in words.evaluate_all("els => els.map(e => e.getBoundingClientRect().toJSON())")
        )  # the words get the row, not a sliver
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # nothing runs off the side

        first = entries.first.locator("time")
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", first.inner_text())
        exact = first.get_attribute("datetime")
        assert exact is not None and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", exact)
        assert first.inner_text() == f"{exact[:10]} {exact[11:19]} UTC"
        due = page.locator('#timeline li.entry[data-kind="park"] span:last-child time').last  # "until": "2d"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", due.inner_text())

        listing = browser.new_page(viewport=PHONE)
        listing.goto(f"{server.url}/", wait_until="load")  # the list scrolls its table, not the page
        assert listing.locator("a", has_text="AAQk-1").is_visible()
        assert listing.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    finally:
        server.stop()


def test_held_mail_is_on_the_page_with_its_sender_reason_and_time(tmp_path: Path, browser: Any) -> None:
    server = serve(
        SUPPORT_INBOX,
        root=tmp_path / "sessions",
        port=0,
        sweep_interval_s=None,
        model=ScriptedModel(SCRIPT[:2]),
        env={},
    )
    try:
        _post(
            f"{server.url}/triggers/email_received",
            {"conversation_id": "AAQk-1", "message": "Where is the thing we discussed?"},
            "k-1",
        )
        mail = QuarantinedMail(session_id="AAQk-1", delivery_id="ses-held-1", reason="DKIM verdict FAIL",
                               sender="mallory@evil.example", subject="Re: order", trigger="email_reply",
                               quarantined_at="2026-12-02T06:46:05.123Z")  # fmt: skip
        assert hold(FilesystemStore(tmp_path / "sessions"), mail, b"From: mallory@evil.example\r\n\r\nhi\r\n")

        page = browser.new_page(viewport=PHONE)
        page.goto(f"{server.url}/sessions/AAQk-1/view", wait_until="load")
        assert page.locator("#held-count").inner_text() == "1 held mail in quarantine"
        row = page.locator('#held .held-mail[data-delivery-id="ses-held-1"]')
        assert row.count() == 1
        text = row.inner_text()
        assert "mallory@evil.example" in text and "DKIM verdict FAIL" in text and "2026-12-02 06:46:05 UTC" in text
        box = row.bounding_box()
        assert (
            box is not None and box["height"] < 200 and box["x"] + box["width"] <= PHONE["width"]
        )  # no column of single letters
        held = page.locator('#timeline li.entry[data-kind="quarantined"]')
        assert held.count() == 1 and "held in quarantine: DKIM verdict FAIL" in held.inner_text()
        assert held.locator("time").get_attribute("datetime") == "2026-12-02T06:46:05.123Z"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    finally:
        server.stop()
