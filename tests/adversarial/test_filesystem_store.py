"""Adversarial: hostile session ids against the FilesystemStore, and real processes racing on one session.

Rule sources: BEHAVIOUR.md §4.1 (id validity, checked by every store method before a path exists),
§9.2 (one id, one folder; the folder escaping and the long-id hash), §3.5 (of racing deliveries
exactly one proceeds), §9.5 (concurrent placements of one name get distinct numbers, nothing lost).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from archmax import FilesystemStore, MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.errors import InvalidSessionIdError
from archmax.models.scripted import ScriptedModel
from archmax.session.ids import portable_folder_name
from archmax.spec import workflow_from_dict

WORKER = Path(__file__).with_name("_worker.py")
CHAT = {"states": {"chat": {"triggers": {"manual": None}}}}

HOSTILE_IDS = [
    "../x",
    "a/../../b",
    "..",
    "..\\..\\evil",
    "a\\..\\b",
    "/abs/../..",
    "a\x00b",
    "a\nb",
    "\x85",
    "",
    "   ",
    "x" * 513,
    "é" * 257,
    "_specs",
    "_specs/x",
    "checkpoints",
    "scratchpad\\a",
    "conversation_history",
    "\ud800",
]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("bad", HOSTILE_IDS, ids=[repr(i)[:24] for i in HOSTILE_IDS])
def test_every_store_method_refuses_a_hostile_id_before_touching_the_disk(tmp_path, bad):
    root = tmp_path / "sessions"
    store = FilesystemStore(root)
    store.seed("victim", {"notes.md": "keep me"})
    before = _tree(tmp_path)
    calls = [
        lambda: store.load(bad),
        lambda: store.head(bad),
        lambda: store.get(bad, "notes.md"),
        lambda: store.seed(bad, {"notes.md": "x"}),
        lambda: store.upload_files(bad, {"notes.md": b"x"}),
        lambda: store.list_files(bad, ""),
        lambda: store.delete(bad),
    ]
    for call in calls:
        with pytest.raises(InvalidSessionIdError):
            call()
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sessions"]


LOOKALIKES = [
    "chat-42",
    "Chat-42",
    "CHAT-42",
    "chat%2D42",
    "chat-42%",
    "chat/42",
    "chat%2F42",
    "chat%252F42",
    "chat\\42",
    "chat%5C42",
    ".chat",
    "%2Echat",
    "..chat",
    "．．",
    "\u2024\u2024",
    "cafe\u0301",
    "caf\u00e9",
    "a" * 200,
    "a" * 201,
    "a" * 400,
    "a" * 399 + "b",
    "é" * 100,
    "é" * 101,
    "%" * 100,
    "%" * 67,
    "a" * 159 + "%",
    ".",
    "./x",
    "x/.",
    "_specs_",
    "large_tool_results~x:y:1",
]


def test_distinct_ids_never_share_a_folder_and_each_reads_back_its_own_data(tmp_path):
    store = FilesystemStore(tmp_path)
    folders = {i: portable_folder_name(i) for i in LOOKALIKES}
    assert len(set(folders.values())) == len(LOOKALIKES)
    for name in folders.values():
        assert "/" not in name and "\\" not in name and name not in (".", "..") and not name.startswith(".")
        assert len(name.encode("utf-8")) <= 200
    for i in LOOKALIKES:
        store.seed(i, {"scratchpad/who.txt": i})
    for i in LOOKALIKES:
        assert store.get(i, "scratchpad/who.txt") == i.encode("utf-8")
    # every folder sits directly under the root, beside the store's own .locks and .tmp
    assert {p.name for p in tmp_path.iterdir()} == set(folders.values()) | {".locks", ".tmp"}


def test_sessions_with_lookalike_ids_are_listed_under_their_own_ids(tmp_path):
    store = FilesystemStore(tmp_path)
    agent = create_agent(
        workflow_from_dict(CHAT, "demo"),
        store,
        ScriptedModel([{"say": "hi"}] * len(LOOKALIKES)),
        clock=FakeClock("2025-01-01T00:00:00.000Z"),
    )
    for i in LOOKALIKES:
        agent.workflow.send(i, "hello")
    assert [s.session_id for s in agent.sessions.list()] == sorted(LOOKALIKES)
    assert store.list() == sorted(LOOKALIKES)


# --------------------------------------------------------------------------- processes racing


def _start(tmp_path: Path, argv_list: list[list[str]]) -> list[subprocess.Popen]:
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for argv in argv_list
    ]
    return procs


def _finish(tmp_path: Path, procs: list[subprocess.Popen]) -> list[str]:
    (tmp_path / "start").touch()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


def test_eight_processes_delivering_to_one_park_let_exactly_one_proceed_and_lose_nothing(tmp_path):
    root = tmp_path / "sessions"
    store = FilesystemStore(root)
    model = ScriptedModel(
        [{"say": "Checking tomorrow.", "call": {"archmax_wait": {"reason": "the posting", "until": "1d"}}}]
    )
    agent = create_agent(workflow_from_dict(CHAT, "demo"), store, model, clock=FakeClock("2025-01-01T00:00:00.000Z"))
    assert agent.workflow.send("b-1", "watch for the payment").kind == "parked"

    now = "2025-01-02T00:00:00.000Z"
    outs = _finish(tmp_path, _start(tmp_path, [["deliver", str(root), "b-1", now] for _ in range(8)]))

    assert sorted(outs) == ["ok completed"] + ["refused"] * 7
    rec = store.load("b-1")
    assert [s.reason for s in rec.trail if s.kind == "trigger"] == ["manual", "timer"]
    assert rec.status == "completed" and rec.lease is None
    # each committed version exists exactly once, with no gap
    names = sorted(os.listdir(root / "b-1" / "checkpoints"))
    versions = [n for n in names if n != "head.json"]
    assert versions == [f"{v:010d}.json" for v in range(1, rec.version + 1)]


def test_eight_processes_placing_the_same_name_get_distinct_numbers_and_every_file_survives(tmp_path):
    root = tmp_path / "sessions"
    FilesystemStore(root).seed("s", {"scratchpad/attachments/x.txt": "already here"})
    outs = _finish(tmp_path, _start(tmp_path, [["place", str(root), "s", "x.txt"] for _ in range(8)]))

    expected = [f"scratchpad/attachments/x-{n}.txt" for n in range(1, 9)]
    assert sorted(outs) == sorted(expected)
    store = FilesystemStore(root)
    assert store.get("s", "scratchpad/attachments/x.txt") == b"already here"
    contents = {store.get("s", p) for p in expected}
    assert len(contents) == 8  # each process's own bytes, none overwritten


def test_the_memory_store_refuses_the_same_hostile_ids():
    store = MemoryStore()
    for bad in HOSTILE_IDS:
        with pytest.raises(InvalidSessionIdError):
            store.seed(bad, {"notes.md": "x"})
    assert store.list() == []


def test_sixteen_threads_sending_to_a_finished_session_let_exactly_one_turn_run(tmp_path):
    import threading

    from archmax.errors import SessionNotResumableError

    all_refused = threading.Event()

    class WinnerHeld(ScriptedModel):
        """Holds the winning turn's model call until the 15 others were refused.

        Without it a thread the OS schedules late (a busy machine) could start only after the
        winner finished, and a send to a finished session legitimately opens a new turn: the
        race this test is about would not be the one it runs.
        """

        def complete(self, request):  # type: ignore[no-untyped-def]
            if self.consumed >= 1:  # the first call is the session's first turn, before the race
                all_refused.wait(timeout=60)
            return super().complete(request)

    store = FilesystemStore(tmp_path)
    agent = create_agent(
        workflow_from_dict(CHAT, "demo"),
        store,
        WinnerHeld([{"say": "hi"}] * 17),
        clock=FakeClock("2025-01-01T00:00:00.000Z"),
    )
    agent.workflow.send("s", "first")
    before = store.load("s")
    barrier = threading.Barrier(16)
    results: list[str] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        barrier.wait()
        try:
            kind = agent.workflow.send("s", f"message {i}").kind
        except SessionNotResumableError:
            kind = "refused"
        with lock:
            results.append(kind)
            if results.count("refused") == 15:
                all_refused.set()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(results) == ["completed"] + ["refused"] * 15
    rec = store.load("s")
    users = [m.content for m in rec.messages if m.role == "user"]
    assert users[0] == "first" and len(users) == 2  # the winner's message, and no loser's
    assert rec.messages[: len(before.messages)] == before.messages
