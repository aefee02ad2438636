"""Session stores: the ``SessionStore`` protocol and its memory, filesystem and AWS implementations.

The protocol is in :mod:`archmax.stores.base` (BEHAVIOUR.md §9.1); every store passes one shared
conformance suite (DESIGN.md §3, §6). Only :mod:`archmax.stores.aws` imports boto3.
"""

from archmax.stores.base import SessionHead, SessionStore, StoreCapabilities
from archmax.stores.filesystem import FilesystemStore
from archmax.stores.memory import MemoryStore

__all__ = ["FilesystemStore", "MemoryStore", "SessionHead", "SessionStore", "StoreCapabilities"]
