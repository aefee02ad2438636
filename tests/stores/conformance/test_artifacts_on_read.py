"""Conformance, ``Capability.ARTIFACTS_ON_READ``: the engine writes no artifact files on such a store.

Rule source: BEHAVIOUR.md §9.5 (artifacts), DESIGN.md §3 (AWS materialises them on read); issue 23
(declared, never sniffed). Without the capability the artifacts writer keeps ``artifacts/`` current.
"""

from __future__ import annotations

from pathlib import Path

from archmax.engine.artifacts import ArtifactWriter
from archmax.spec import load_workflow
from archmax.stores.base import Capability

from .conftest import lacks, make_record, requires

SUPPORT_INBOX = Path(__file__).resolve().parents[3] / "examples" / "workflows" / "support-inbox"


def _write(store, session_id):
    warnings: list[str] = []
    writer = ArtifactWriter(store, load_workflow(SUPPORT_INBOX), lambda rec, scope, text: warnings.append(text))
    record = make_record(session_id, 1, messages=3, trail=2)
    store.commit(session_id, record, 0)
    writer.write(record, 0)
    assert warnings == []
    return writer, store.list_files(session_id, "artifacts")


def test_a_store_that_materialises_artifacts_on_read_gets_no_artifact_files(store, session_id):
    requires(store, Capability.ARTIFACTS_ON_READ)
    writer, files = _write(store, session_id)
    assert not writer.enabled and files == []


def test_without_the_capability_the_operation_writes_the_artifact_files(store, session_id):
    lacks(store, Capability.ARTIFACTS_ON_READ)
    writer, files = _write(store, session_id)
    assert writer.enabled and "artifacts/trajectory.jsonl" in files
