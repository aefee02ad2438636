"""Stores cannot mix sessions: a load answers only the asked id's record, and filesystem folders stay distinct
when a disk folds case (macOS, Windows) or Unicode normalisation (APFS), or reads names as drives and devices.

Rule source: issue 13 item 4 ("a load whose stored session_id differs from the asked one is an error";
"folder names that stay distinct on case-insensitive and Windows filesystems"; "a test that simulates
case folding"). The simulation is a real filesystem alias: a symlink stands where a case-insensitive
disk would answer the same directory for two spellings of a name.
"""

from __future__ import annotations

import itertools
import os
import unicodedata
from pathlib import Path

import pytest

from archmax import FilesystemStore, MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.errors import SessionIdMismatchError
from archmax.models.scripted import ScriptedModel
from archmax.session.ids import folder_name, portable_folder_name
from archmax.spec import workflow_from_dict

CHAT = {"states": {"chat": {"triggers": {"manual": None}}}}
WINDOWS_DEVICES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}

IDS = [
    "order-1", "Order-1", "ORDER-1", "oRDER-1", "C:evil", "c:evil", "c_evil", "con", "CON", "nul.txt", "Nul.TXT",
    "com1", "lpt9.log", "a.", "a", "A", "café", "cafe\u0301", "CAFÉ", "straße", "STRASSE", "strasse",
    "\u212aelvin", "kelvin", "Kelvin", "x y@z", "X Y@Z", "a/b", "a%2Fb", "a%2fb", "A%2Fb", ".x", "%2Ex",
    "session-0f8fad5b-d9cb-469f-a165-70867728950e", "Session-0F8FAD5B-D9CB-469F-A165-70867728950E", "a" * 300, "A" * 300,
]  # fmt: skip


def folded(name: str) -> str:
    """What a case- and normalisation-insensitive disk compares (APFS; NTFS folds case)."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFKC", name).casefold())


def agent_on(store, replies: int = 4):
    return create_agent(
        workflow_from_dict(CHAT, "demo"),
        store,
        ScriptedModel([{"say": f"answer {n}"} for n in range(replies)]),
        clock=FakeClock("2025-01-01T00:00:00.000Z"),
    )


def test_portable_folder_names_never_fold_together_and_are_safe_on_windows() -> None:
    names = {i: portable_folder_name(i) for i in IDS}
    for a, b in itertools.combinations(IDS, 2):
        assert folded(names[a]) != folded(names[b]), (a, b, names[a], names[b])
    for name in names.values():
        assert name.isascii() and name == name.lower()
        assert not set(name) & set('<>:"/\\|?*') and not name.endswith((".", " ")) and not name.startswith(".")
        assert name.split(".")[0] not in WINDOWS_DEVICES
        assert len(name.encode()) <= 200
    # an id that is safe everywhere keeps the §9.2 folder; the others keep a readable prefix
    assert names["order-1"] == folder_name("order-1") == "order-1"
    assert names["Order-1"].startswith("order-1%%") and names["C:evil"].startswith("c_evil%%")


def test_a_simulated_case_insensitive_disk_cannot_hand_one_session_anothers_record(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    agent = agent_on(FilesystemStore(root))
    agent.workflow.send("Order-1", "Where is my order?")
    # An older store named the folder by §9.2 alone: "Order-1". On a case-insensitive disk the name
    # "order-1" opens that same directory; a symlink is that alias on this disk.
    os.rename(root / portable_folder_name("Order-1"), root / "Order-1")
    os.symlink(root / "Order-1", root / "order-1", target_is_directory=True)
    store = FilesystemStore(root)
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".locks" not in p.parts)
    with pytest.raises(SessionIdMismatchError) as info:
        store.load("order-1")
    assert info.value.session_id == "order-1" and info.value.stored_id == "Order-1"
    with pytest.raises(SessionIdMismatchError):
        store.head("order-1")
    with pytest.raises(SessionIdMismatchError):  # a firing for order-1 does not complete Order-1
        agent_on(store).workflow.send("order-1", "Cancel everything")
    after = sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".locks" not in p.parts)
    assert after == before
    # Order-1 itself is found again, moved to its portable folder, transcript intact
    record = store.load("Order-1")
    assert record is not None and record.session_id == "Order-1"
    assert [m.content for m in record.messages if m.role == "user"] == ["Where is my order?"]
    assert (root / portable_folder_name("Order-1") / "checkpoints").is_dir()
    assert not (root / "Order-1").exists()


def test_an_older_folder_of_another_session_is_never_migrated(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    agent_on(FilesystemStore(root)).workflow.send("order-1", "first")
    # on a case-insensitive disk "Order-1" (the legacy name of Order-1) is order-1's folder
    os.symlink(root / "order-1", root / "Order-1", target_is_directory=True)
    store = FilesystemStore(root)
    assert store.load("Order-1") is None  # not order-1's record, and order-1's folder stays put
    assert store.load("order-1").session_id == "order-1"


def test_two_ids_differing_only_in_case_are_two_sessions(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "sessions")
    agent = agent_on(store)
    agent.workflow.send("order-1", "lower")
    agent.workflow.send("Order-1", "upper")
    assert store.load("order-1").messages[0].content == "lower"
    assert store.load("Order-1").messages[0].content == "upper"
    assert store.list() == ["Order-1", "order-1"]


def test_the_memory_store_refuses_a_record_stored_for_another_id() -> None:
    store = MemoryStore()
    agent_on(store).workflow.send("a", "hello")
    store._sessions["b"] = store._sessions["a"]  # a corrupted map: b's slot holds a's record
    with pytest.raises(SessionIdMismatchError):
        store.load("b")
    with pytest.raises(SessionIdMismatchError):
        store.head("b")


def test_the_filesystem_inbox_keeps_case_variants_apart_and_migrates_its_older_files(tmp_path: Path) -> None:
    from archmax.hosting.inbox import FilesystemInbox
    from archmax.hosting.inbox_base import InboxItem
    from archmax.session.firing import Firing

    inbox = FilesystemInbox(tmp_path)

    def item(sid: str, delivery: str) -> InboxItem:
        return InboxItem(session_id=sid, delivery_id=delivery, arrived_at="2025-01-01T00:00:00.000Z", kind="send",
                         firing=Firing(trigger="manual", message=f"to {sid}"))  # fmt: skip

    assert inbox.put(item("Order-1", "d-1")) and inbox.put(item("order-1", "d-1"))
    assert [i.firing.message for i in inbox.pending("Order-1")] == ["to Order-1"]
    assert [i.firing.message for i in inbox.pending("order-1")] == ["to order-1"]
    assert inbox.sessions_with_pending() == ["Order-1", "order-1"]
    # an older version's file for Order-1 (named by §9.2 alone) is moved on first use, marker included
    sessions, pending = tmp_path / ".inbox" / "sessions", tmp_path / ".inbox" / "pending"
    os.rename(sessions / f"{portable_folder_name('Order-1')}.json", sessions / "Order-1.json")
    os.rename(pending / portable_folder_name("Order-1"), pending / "Order-1")
    assert [i.delivery_id for i in FilesystemInbox(tmp_path).pending("Order-1")] == ["d-1"]
    assert not (sessions / "Order-1.json").exists() and not (pending / "Order-1").exists()
    assert FilesystemInbox(tmp_path).sessions_with_pending() == ["Order-1", "order-1"]
    # a file under one id's name holding another's inbox is an error, never an answer
    os.replace(sessions / "order-1.json", sessions / f"{portable_folder_name('Order-1')}.json")
    with pytest.raises(SessionIdMismatchError):
        FilesystemInbox(tmp_path).pending("Order-1")
