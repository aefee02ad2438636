"""Held mail and a stopped turn in the session's story, ``--log`` text and page (issue 25 items 6, 7).

The session is made the way a new user makes it: ``archmax email`` through a subprocess with the
support-inbox example's scripted model; a stranger's reply is quarantined, then released after the
script has run out, so the released mail's turn stops part-way (the model fails). The views are
then read from the store the CLI wrote.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from archmax.session.records import Checkpoint, Lease, Message, TrailStep
from archmax.stores.filesystem import FilesystemStore
from archmax.views import log_lines, story_of
from archmax.views.page import readable, render_page

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
EMAILS = EXAMPLES / "workflows" / "support-inbox" / "emails"
SCRIPT = f"scripted:{EXAMPLES / 'workflows' / 'support-inbox' / 'model.yaml'}"
CONVERSATION = "mail:3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"  # a mail opens its session in the mail namespace
INSTANT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"


def _archmax(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("ARCHMAX_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", "archmax", "--root", str(EXAMPLES), "--store", str(store), "--model", SCRIPT, *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def _stranger(tmp_path: Path) -> Path:
    lines = (EMAILS / "02-reply.eml").read_text(encoding="utf-8").split("\n")
    swap = {"From:": "From: Mallory <mallory@evil.example>", "Message-ID:": "Message-ID: <m-1@evil.example>"}
    lines = [next((v for k, v in swap.items() if ln.startswith(k)), ln) for ln in lines]
    path = tmp_path / "stranger.eml"
    path.write_bytes("\r\n".join(ln.rstrip("\r") for ln in lines).encode())
    return path


@pytest.fixture(scope="module")
def inbox_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A conversation parked in 'clarify' with a stranger's reply held in quarantine."""
    tmp = tmp_path_factory.mktemp("held")
    store = tmp / "store"
    first = _archmax(store, "email", str(EMAILS / "01-first.eml"), "--workflow", "support-inbox")
    assert first.returncode == 0, first.stderr
    held = _archmax(store, "email", str(_stranger(tmp)), "--workflow", "support-inbox")
    assert held.returncode == 0 and "quarantined: sender 'mallory@evil.example'" in held.stderr, held.stderr
    return store


def _held_id(store: Path) -> str:
    listed = _archmax(store, "quarantine", "list", CONVERSATION)
    return listed.stdout.split()[0]


def test_a_held_mail_is_in_the_log_headline_and_timeline_with_sender_reason_and_time(inbox_store: Path) -> None:
    fs = FilesystemStore(inbox_store)
    story = story_of(fs.load(CONVERSATION), None, store=fs)
    held_id = _held_id(inbox_store)
    assert [(m.delivery_id, m.sender, m.released_at) for m in story.held] == [(held_id, "mallory@evil.example", None)]
    lines = log_lines(story)
    assert f"held mail: 1 in quarantine (archmax quarantine list {CONVERSATION})" in lines
    detail = next(ln for ln in lines if ln.startswith(f"  {held_id} from mallory@evil.example since "))
    assert "is not a participant" in detail
    entry = next(ln for ln in lines if re.match(rf"{INSTANT}  QUARANTINED ", ln))
    assert f"mail {held_id} from mallory@evil.example held in quarantine: sender 'mallory@evil.example'" in entry


def test_the_story_without_a_store_shows_no_held_mail(inbox_store: Path) -> None:
    story = story_of(FilesystemStore(inbox_store).load(CONVERSATION))
    assert story.held == [] and all(e.kind != "quarantined" for e in story.timeline)


def test_the_page_shows_the_held_mail_count_and_a_row_per_mail(inbox_store: Path) -> None:
    fs = FilesystemStore(inbox_store)
    html = render_page(story_of(fs.load(CONVERSATION), None, store=fs))
    held_id = _held_id(inbox_store)
    assert '<div class="notice" id="held-count"><a href="#held">1 held mail in quarantine</a></div>' in html
    row = html.split(f'data-delivery-id="{held_id}">', 1)[1].split("</li>", 1)[0]
    assert (
        "mallory@evil.example" in row and "is not a participant" in row and '<span class="kind quarantined">held' in row
    )
    assert re.search(rf'<time datetime="{INSTANT}" title="{INSTANT}">\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC</time>', row)


def test_a_release_whose_turn_stops_shows_the_stopped_turn_and_the_release(inbox_store: Path, tmp_path: Path) -> None:
    import shutil

    store = tmp_path / "store"
    shutil.copytree(inbox_store, store)
    held_id = _held_id(store)
    # the support-inbox script answers the first mail and one reply; the reply completes the session, so
    # the released mail opens a new turn the script has no answer for: its turn stops part-way
    assert _archmax(store, "email", str(EMAILS / "02-reply.eml"), "--workflow", "support-inbox").returncode == 0
    released = _archmax(store, "quarantine", "release", CONVERSATION, held_id)
    assert released.returncode == 1 and "did not finish" in released.stderr

    log = _archmax(store, "sessions", CONVERSATION, "--log")  # what the warning points at says it too
    assert log.returncode == 0 and re.search(rf"^{INSTANT}  STOPPED      the turn stopped part-way", log.stdout, re.M)
    fs = FilesystemStore(store)
    story = story_of(fs.load(CONVERSATION), None, store=fs)
    assert story.running is not None and story.running.stopped and story.running.lease_until is None
    lines = log_lines(story)
    assert lines[1].startswith("running in 'answer', but its turn stopped part-way after the last commit ")
    kinds = [m.group(1) for ln in lines if (m := re.match(rf"{INSTANT}  ([A-Z_-]+) ", ln))]
    assert kinds[-5:] == ["DELIVERY", "ADVANCE", "TURN", "STOPPED", "RELEASED"]  # the stamp follows the turn
    stopped = next(ln for ln in lines if re.match(rf"{INSTANT}  STOPPED ", ln))
    assert "the turn stopped part-way in 'answer'" in stopped and "the sweep finishes the turn" in stopped
    assert not any(ln.startswith("held mail:") for ln in lines)  # released: no longer held
    html = render_page(story)
    assert "but its turn stopped part-way" in html and 'data-kind="stopped"' in html and "1 held mail" not in html


def _record(**extra: object) -> Checkpoint:
    base = {
        "session_id": "r-1", "workflow": "w", "status": "running", "position": "a",
        "created_at": "2026-12-02T06:46:05.000Z", "updated_at": "2026-12-02T06:46:07.000Z",
    }  # fmt: skip
    return Checkpoint(**{**base, **extra})


def test_a_turn_under_a_live_lease_names_the_lease_and_when_the_sweep_may_take_over() -> None:
    story = story_of(_record(lease=Lease(owner="cli-123", expires_at="2026-12-02T07:01:07.000Z")))
    assert story.running is not None and not story.running.stopped
    line = log_lines(story)[1]
    assert line.startswith("running in 'a': a turn holds it until 2026-12-02T07:01:07.000Z (lease cli-123;")
    assert "the sweep can take the session over from then on" in line
    assert all(e.kind != "stopped" for e in story.timeline)


def test_a_committed_turn_failure_not_yet_routed_is_the_stopped_entrys_error() -> None:
    story = story_of(_record(pending_failure="state 'a' model call failed: ModelAccessError: denied"))
    stopped = [e for e in story.timeline if e.kind == "stopped"]
    assert len(stopped) == 1 and stopped[0].at == "2026-12-02T06:46:07.000Z"
    text = "\n".join(log_lines(story))
    assert "failure not yet routed: state 'a' model call failed: ModelAccessError: denied" in text
    assert "Failure not yet routed: state &#x27;a&#x27; model call failed" in render_page(story)


def test_log_lines_are_in_time_order_and_a_line_without_a_time_keeps_its_place() -> None:
    """A trail step is stamped when taken, a message when committed: the step may be older than the line before it."""
    record = _record(
        status="completed",
        messages=[
            Message(role="user", content="Go.", ts=1_796_194_000_000),
            Message(role="assistant", content="Moving on.", ts=1_796_194_000_500),
            Message(role="assistant", content="Old engine, no time."),
            Message(role="assistant", content="Done.", ts=1_796_194_000_900),
        ],
        trail=[
            TrailStep(to="a", kind="trigger", reason="manual", ts=1_796_194_000_000, at_message=0),
            TrailStep(to="b", kind="agent", reason="ready", ts=1_796_194_000_300, at_message=3),  # placed late
        ],
        position="b",
        updated_at="2026-12-02T06:46:41.000Z",
    )
    story = story_of(record)
    items = sorted([*story.timeline, *story.conversation], key=lambda e: e.seq)
    said = [getattr(e, "text", None) or e.kind for e in items]
    assert said == ["turn", "Go.", "advance", "Moving on.", "Old engine, no time.", "Done.", "completed"]
    times = [ln[:24] for ln in log_lines(story)[4:] if re.match(INSTANT, ln)]
    assert times == sorted(times)
    assert [e.kind for e in story.timeline] == ["turn", "advance", "completed"]


@pytest.mark.parametrize(
    ("at", "shown"),
    [
        ("2026-12-02T06:46:05.123Z", "2026-12-02 06:46:05 UTC"),
        ("0999-01-01T00:00:00.000Z", "0999-01-01 00:00:00 UTC"),
        ("yesterday", "yesterday"),
    ],
)
def test_instants_read_as_date_time_and_utc(at: str, shown: str) -> None:
    assert readable(at) == shown


def test_archmax_sessions_log_and_open_show_the_held_mail(inbox_store: Path, tmp_path: Path) -> None:
    held_id = _held_id(inbox_store)
    log = _archmax(inbox_store, "sessions", CONVERSATION, "--log")
    assert log.returncode == 0 and "held mail: 1 in quarantine" in log.stdout
    assert re.search(rf"^{INSTANT}  QUARANTINED  mail {held_id} from mallory@evil.example", log.stdout, re.M)
    page = tmp_path / "page.html"
    assert _archmax(inbox_store, "sessions", CONVERSATION, "--open", str(page)).returncode == 0
    assert f'data-delivery-id="{held_id}"' in page.read_text(encoding="utf-8")


def test_archmax_sessions_lists_held_mail_under_the_session(inbox_store: Path) -> None:
    # issue 25 item 6: the list and the one-session view say mail is held, not only --log.
    _held_id(inbox_store)  # a stranger's mail to the session, quarantined
    for args in (("sessions",), ("sessions", CONVERSATION)):
        shown = _archmax(inbox_store, *args)
        assert shown.returncode == 0, shown.stderr
        assert f"  held mail: 1 in quarantine (archmax quarantine list {CONVERSATION})" in shown.stdout.splitlines()
