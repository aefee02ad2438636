"""Files handed to a session (BEHAVIOUR.md §9.5; seed "Files handed to a session")."""

from __future__ import annotations

import pytest

from archmax import (
    FileIn,
    FilesystemStore,
    InvalidFilePathError,
    MemoryStore,
    SessionStoreCapabilityError,
    StoreCapabilities,
)

from ._support import CHAT, TWO, harness, snapshot, wait_then

NO_UPLOAD = StoreCapabilities(list=True, delete=True, upload_files=False)


def send_file(h, name, content="x", var="doc", sid="s1"):
    return h.agent.workflow.send(sid, "Here", files={var: {"name": name, "content": content}})


@pytest.mark.parametrize(
    ("present", "name", "lands_at"),
    [
        ([], "report.pdf", "report.pdf"),
        (["report.pdf"], "report.pdf", "report-1.pdf"),
        (["report.pdf", "report-1.pdf"], "report.pdf", "report-2.pdf"),
        (["report.pdf", "report-2.pdf"], "report.pdf", "report-1.pdf"),
        (["notes"], "notes", "notes-1"),
        ([".env"], ".env", ".env-1"),
        (["archive.tar.gz"], "archive.tar.gz", "archive.tar-1.gz"),
        (["a."], "a.", "a.-1"),
        (["Report.pdf"], "report.pdf", "report.pdf"),
    ],
)
def test_each_placement_name_of_the_seed_table_through_send_files(present, name, lands_at):
    h = harness(CHAT, [{"say": "ok"}] * (len(present) + 1))
    if present:
        h.agent.sessions.seed("s1", {f"scratchpad/attachments/{p}": "old" for p in present})
    out = send_file(h, name, content="new")
    assert out.variables["doc"] == {"value": f"scratchpad/attachments/{lands_at}", "locked": True}
    assert h.store.get("s1", f"scratchpad/attachments/{lands_at}") == b"new"
    for p in present:
        assert h.store.get("s1", f"scratchpad/attachments/{p}") == b"old"  # never overwritten


def test_successive_turns_placing_the_same_name_take_the_next_free_number_each():
    h = harness(CHAT, [{"say": "ok"}] * 3)
    placed = [send_file(h, "report.pdf", content=f"v{i}").variables["doc"]["value"] for i in range(3)]
    assert placed == [f"scratchpad/attachments/{n}" for n in ("report.pdf", "report-1.pdf", "report-2.pdf")]


def test_two_files_of_one_firing_with_the_same_name_each_get_their_own():
    h = harness(CHAT, [{"say": "ok"}])
    out = h.agent.workflow.send(
        "s1", "Two", files={"a": FileIn(name="x.txt", content="1"), "b": {"name": "x.txt", "content": "2"}}
    )
    assert {out.variables["a"]["value"], out.variables["b"]["value"]} == {
        "scratchpad/attachments/x.txt",
        "scratchpad/attachments/x-1.txt",
    }


def test_binary_bytes_arrive_exactly_and_read_back_unchanged(tmp_path):
    blob = bytes(range(256)) * 3
    for store in (MemoryStore(), FilesystemStore(tmp_path / "sessions")):
        h = harness(CHAT, [{"say": "ok"}], store=store)
        out = send_file(h, "scan.pdf", content=blob)
        assert store.get("s1", out.variables["doc"]["value"]) == blob


def test_text_bytes_are_stored_unchanged():
    h = harness(CHAT, [{"say": "ok"}], store=MemoryStore(NO_UPLOAD))
    out = send_file(h, "note.txt", content="héllo\r\n".encode())
    assert h.store.get("s1", out.variables["doc"]["value"]) == "héllo\r\n".encode()


def test_a_binary_file_through_a_store_without_upload_files_is_refused_naming_the_path_and_nothing_is_stored():
    h = harness(CHAT, [{"say": "never"}], store=MemoryStore(NO_UPLOAD))
    with pytest.raises(SessionStoreCapabilityError) as err:
        h.agent.workflow.send(
            "s1",
            "Here",
            files={
                "readme": {"name": "readme.txt", "content": "text is fine"},
                "scan": {"name": "scan.pdf", "content": b"%PDF\x00\xff"},
            },
        )
    assert "scratchpad/attachments/scan.pdf" in str(err.value) and "upload_files" in str(err.value)
    assert h.load("s1") is None and h.store.list_files("s1", "") == []
    assert h.model.calls == 0


def test_a_binary_file_refused_on_a_delivery_leaves_the_park_unchanged():
    h = harness(TWO, [wait_then()], store=MemoryStore(NO_UPLOAD))
    h.agent.workflow.send("s1", "Hi")
    before = snapshot(h.store, "s1")
    with pytest.raises(SessionStoreCapabilityError):
        h.agent.workflow.send("s1", "Here", files={"scan": {"name": "scan.pdf", "content": b"\x00\x01"}})
    assert snapshot(h.store, "s1") == before


def test_a_text_file_is_placed_through_a_store_without_upload_files():
    h = harness(CHAT, [{"say": "ok"}], store=MemoryStore(NO_UPLOAD))
    out = send_file(h, "note.txt", content="plain")
    assert h.store.get("s1", out.variables["doc"]["value"]) == b"plain"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b.txt", "a\\b.txt", "bad\nname", "x" * 256])
def test_an_unusable_file_name_is_refused_and_nothing_is_written(name):
    h = harness(CHAT, [{"say": "never"}])
    with pytest.raises(InvalidFilePathError):
        send_file(h, name)
    assert h.load("s1") is None and h.store.list_files("s1", "") == []


def test_files_on_a_delivery_are_placed_and_their_variables_seeded_before_the_state_continues():
    h = harness(TWO, [wait_then(), {"call": {"archmax_get_variables": {"name": "scan"}}}, {"say": "Got the scan."}])
    h.agent.workflow.send("s1", "Hi")
    out = h.agent.workflow.send("s1", "Here it is", files={"scan": {"name": "scan.png", "content": b"\x89PNG\x00"}})
    assert out.disposition == "deliver"
    assert '"scratchpad/attachments/scan.png"' in [m for m in out.messages if m.role == "tool"][-1].content
    assert h.store.get("s1", "scratchpad/attachments/scan.png") == b"\x89PNG\x00"


def test_a_file_written_to_the_scratchpad_carries_forward_to_the_next_turn():
    h = harness(CHAT, [{"say": "ok"}, {"say": "ok"}])
    send_file(h, "carry.txt", content="kept")
    h.agent.workflow.send("s1", "Next turn")
    assert h.store.get("s1", "scratchpad/attachments/carry.txt") == b"kept"


def test_an_assembly_seed_named_like_a_file_variable_wins_as_files_are_placed_before_seeds():
    from archmax import MemoryStore, create_agent
    from archmax.clock import FakeClock
    from archmax.models.scripted import ScriptedModel
    from archmax.spec import workflow_from_dict

    wf = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "chat")
    agent = create_agent(
        wf, MemoryStore(), ScriptedModel([{"say": "ok"}]), clock=FakeClock(), variables={"doc": "from-seed"}
    )
    agent.workflow.send("s", "hi", files={"doc": {"name": "a.txt", "content": "x"}})
    var = agent.store.load("s").variables["doc"]
    assert (var.value, var.locked) == ("from-seed", True)
    assert agent.store.get("s", "scratchpad/attachments/a.txt") == b"x"  # the file is still placed
