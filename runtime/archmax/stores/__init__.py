"""Session stores: the ``SessionStore`` protocol, its implementations and a store over any backend.

Memory, filesystem and AWS stores, and ``create_backend_session_store`` over any key-value
``SessionBackend``.

The protocol is in :mod:`archmax.stores.base` (BEHAVIOUR.md §9.1): every member a caller uses,
and the declared :class:`Capability` set (never sniffed). Every store passes one shared
conformance suite, one module per capability (DESIGN.md §3, §6). Only :mod:`archmax.stores.aws`
imports boto3.
"""

from archmax.stores.backend import MemoryBackend, SessionBackend, create_backend_session_store
from archmax.stores.base import (
    Capabilities,
    Capability,
    SessionHead,
    SessionStore,
    StoreCapabilities,
    StoreLocation,
)
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

__all__ = [
    "Capabilities",
    "Capability",
    "FilesystemStore",
    "MemoryBackend",
    "MemoryStore",
    "SessionBackend",
    "SessionHead",
    "SessionStore",
    "StoreCapabilities",
    "StoreLocation",
    "create_backend_session_store",
]
