"""Session stores: the ``SessionStore`` protocol and its memory, filesystem and AWS implementations.

The protocol is in :mod:`archmax.stores.base` (BEHAVIOUR.md §9.1); every store passes one shared
conformance suite (DESIGN.md §3, §6). Only :mod:`archmax.stores.aws` imports boto3.
"""
