"""Session stores: the ``SessionStore`` protocol, its implementations and a store over any backend.

Memory, filesystem and AWS stores, and ``create_backend_session_store`` over any key-value
``SessionBackend``.

The protocol is in :mod:`archmax.stores.base` (BEHAVIOUR.md §9.1); every store passes one shared
conformance suite (DESIGN.md §3, §6). Only :mod:`archmax.stores.aws` imports boto3.
"""

from archmax.stores.backend import MemoryBackend, SessionBackend, create_backend_session_store
from archmax.stores.base import SessionHead, SessionStore, StoreCapabilities
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

__all__ = [
    "FilesystemStore",
    "MemoryBackend",
    "MemoryStore",
    "SessionBackend",
    "SessionHead",
    "SessionStore",
    "StoreCapabilities",
    "create_backend_session_store",
]
