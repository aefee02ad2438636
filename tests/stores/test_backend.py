"""``create_backend_session_store(backend)``: a session store over any key-value backend.

Rule source: seed "Files handed to a session" ("a createBackendSessionStore over a backend that has
uploadFiles"; "through a store without it, such a file is refused with an error naming the path, and
nothing is written. A text file is placed either way"); BEHAVIOUR.md §9.1, §9.5. The store protocol
itself is pinned by the conformance suite (``backend`` and ``backend-text-only`` in its factories).
"""

from __future__ import annotations

import pytest

from archmax import SessionStoreCapabilityError, create_agent, create_backend_session_store
from archmax.models.scripted import ScriptedModel
from archmax.spec import workflow_from_dict
from archmax.stores import MemoryBackend

CHAT = workflow_from_dict({"states": {"chat": {"triggers": {"manual": None}}}}, "chat")
PDF = b"%PDF-1.7\x00\xff\xfe"


def agent_over(backend: MemoryBackend, answers: int = 1):
    store = create_backend_session_store(backend)
    return create_agent(CHAT, store, ScriptedModel([{"say": "ok"}] * answers)), store


def test_the_upload_files_capability_is_exactly_the_backends():
    assert create_backend_session_store(MemoryBackend()).capabilities.upload_files is False
    assert create_backend_session_store(MemoryBackend(binary=True)).capabilities.upload_files is True


def test_a_backend_missing_a_method_is_refused():
    class ReadOnly:
        def read(self, key):
            return None

    with pytest.raises(TypeError, match="write, list, delete"):
        create_backend_session_store(ReadOnly())  # type: ignore[arg-type]


def test_a_text_file_is_placed_through_a_text_only_backend():
    agent, store = agent_over(MemoryBackend())
    out = agent.workflow.send("s", "hi", files={"notes": {"name": "notes.txt", "content": "ORD-1\n"}})
    assert out.variables["notes"]["value"] == "scratchpad/attachments/notes.txt"
    assert store.get("s", "scratchpad/attachments/notes.txt") == b"ORD-1\n"


def test_a_binary_file_through_a_text_only_backend_is_refused_naming_the_path_and_nothing_is_written():
    backend = MemoryBackend()
    agent, _ = agent_over(backend)
    with pytest.raises(SessionStoreCapabilityError, match="scratchpad/attachments/invoice.pdf"):
        agent.workflow.send("s", "hi", files={"invoice": {"name": "invoice.pdf", "content": PDF}})
    assert backend.list("") == []


def test_a_binary_file_through_a_backend_with_upload_files_arrives_byte_for_byte():
    backend = MemoryBackend(binary=True)
    agent, store = agent_over(backend)
    agent.workflow.send("s", "hi", files={"invoice": {"name": "invoice.pdf", "content": PDF}})
    assert store.get("s", "scratchpad/attachments/invoice.pdf") == PDF
    assert backend.read("s/scratchpad/attachments/invoice.pdf") == PDF  # the §9.2 layout, on the backend


def test_sessions_live_in_the_section_9_2_layout_and_survive_a_new_store_over_the_same_backend():
    backend = MemoryBackend()
    agent, _ = agent_over(backend, answers=2)
    agent.workflow.send("s", "hi")
    assert "s/checkpoints/0000000001.json" in backend.list("s/checkpoints/")
    assert any(key.startswith("_specs/") for key in backend.list("_specs/"))
    again = create_backend_session_store(backend)
    assert again.load("s").status == "completed" and again.list() == ["s"]
