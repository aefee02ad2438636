"""Conformance, ``Capability.OUTBOX_STREAM``: a store whose change stream sends the outbox gets no in-process sender.

Rule source: DESIGN.md §3 (the outbound function sends from the table's stream); issue 23
(declared, never sniffed). Without the capability ``create_agent`` builds the dispatcher from the
environment (``.eml`` files by default).
"""

from __future__ import annotations

from pathlib import Path

from archmax import create_agent
from archmax.models.scripted import ScriptedModel
from archmax.stores.base import Capability

from .conftest import lacks, requires

SUPPORT_INBOX = Path(__file__).resolve().parents[3] / "examples" / "workflows" / "support-inbox"


def test_a_store_that_sends_from_its_stream_gets_no_in_process_dispatcher(store):
    requires(store, Capability.OUTBOX_STREAM)
    assert create_agent(SUPPORT_INBOX, store, ScriptedModel([])).runtime.outbound is None


def test_without_the_capability_the_agent_sends_in_process(store, monkeypatch):
    lacks(store, Capability.OUTBOX_STREAM)
    monkeypatch.delenv("ARCHMAX_MAIL_TRANSPORT", raising=False)
    assert create_agent(SUPPORT_INBOX, store, ScriptedModel([])).runtime.outbound is not None
