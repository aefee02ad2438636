"""Adversarial: file placement at the edge of the 255-byte name limit.

Rule sources: BEHAVIOUR.md §9.5 (a taken name gets ``-N`` before the last extension; a name over 255
bytes is refused; each placement claims its name create-only), seed "Files handed to a session".
A name of 250-255 bytes is valid, but its ``-N`` form is longer than any file system allows: before
the fix the second placement of such a name failed *after* the session was claimed (``StoreError:
File name too long`` on the filesystem store), leaving the session ``running`` with the file lost,
while the memory store silently stored a 257-byte name.
"""

from __future__ import annotations

import pytest

from archmax import FilesystemStore, MemoryStore, create_agent
from archmax.clock import FakeClock
from archmax.models.scripted import ScriptedModel
from archmax.session.files import MAX_NAME_BYTES, candidate_names, check_attachment_name
from archmax.spec import workflow_from_dict

CHAT = {"states": {"chat": {"triggers": {"manual": None}}}}

LONG_NAMES = {
    "255 ascii, short extension": "r" * 251 + ".pdf",
    "255 ascii, no extension": "n" * 255,
    "254 bytes of two-byte characters": "é" * 123 + ".pdf",
    "255 bytes, extension of 254": "a." + "x" * 253,
    "253 bytes with a dotfile name": "." + "e" * 252,
}


@pytest.mark.parametrize("name", list(LONG_NAMES.values()), ids=list(LONG_NAMES))
def test_every_candidate_of_a_valid_name_is_itself_a_valid_name_and_they_are_distinct(name):
    check_attachment_name(name)
    seen = set()
    gen = candidate_names(name)
    for _ in range(120):
        candidate = next(gen)
        assert check_attachment_name(candidate) == candidate
        assert len(candidate.encode("utf-8")) <= MAX_NAME_BYTES
        seen.add(candidate)
    assert len(seen) == 120


def test_short_names_keep_the_seed_naming_exactly():
    gen = candidate_names("archive.tar.gz")
    assert [next(gen) for _ in range(3)] == ["archive.tar.gz", "archive.tar-1.gz", "archive.tar-2.gz"]


@pytest.mark.parametrize("store_kind", ["memory", "filesystem"])
@pytest.mark.parametrize("name", list(LONG_NAMES.values()), ids=list(LONG_NAMES))
def test_three_turns_placing_the_same_longest_name_all_complete_and_keep_every_file(tmp_path, store_kind, name):
    store = MemoryStore() if store_kind == "memory" else FilesystemStore(tmp_path)
    agent = create_agent(
        workflow_from_dict(CHAT, "demo"),
        store,
        ScriptedModel([{"say": "got it"}] * 3),
        clock=FakeClock("2025-01-01T00:00:00.000Z"),
    )
    placed = []
    for n in range(3):
        out = agent.workflow.send("s", "here is the file", files={"doc": {"name": name, "content": f"v{n}"}})
        assert out.kind == "completed"
        placed.append(out.variables["doc"]["value"])
    assert placed[0] == f"scratchpad/attachments/{name}"
    assert len(set(placed)) == 3
    assert [store.get("s", p) for p in placed] == [b"v0", b"v1", b"v2"]
    for path in placed:
        assert len(path.rsplit("/", 1)[1].encode("utf-8")) <= MAX_NAME_BYTES
