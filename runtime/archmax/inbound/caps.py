"""Caps on what one firing may hand a session: attachments per mail, attachment bytes per firing.

Rule source: issue 13 item 5 (one 500-attachment mail made 1,035 AWS calls; caps are configurable,
the excess refused and recorded, nothing half-placed). Mail is read within the caps (the excess is
refused and named, the rest placed whole); a webhook firing over a cap is refused whole
(:class:`~archmax.errors.AttachmentLimitError`, 413) before anything is written.

Settings: ``ARCHMAX_MAX_ATTACHMENTS`` (default 20) and ``ARCHMAX_MAX_ATTACHMENT_BYTES`` (default
26,214,400 = 25 MiB, under SES's 40 MB message limit).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from archmax.errors import AttachmentLimitError, ConfigurationError
from archmax.session.firing import Firing

DEFAULT_MAX_ATTACHMENTS = 20
DEFAULT_MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024


class AttachmentCaps(BaseModel):
    """The caps (positive integers)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    max_attachments: int = Field(default=DEFAULT_MAX_ATTACHMENTS, ge=0)
    """Attachments one mail (or one webhook firing) may carry."""
    max_attachment_bytes: int = Field(default=DEFAULT_MAX_ATTACHMENT_BYTES, ge=0)
    """Decoded bytes of all attachments of one firing together."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AttachmentCaps:
        """The caps the environment sets (see module docstring).

        Raises:
            ConfigurationError: a setting that is not a non-negative integer.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}  # only the caps set: model_construct fills the defaults of the rest
        for field, name in (("max_attachments", "ARCHMAX_MAX_ATTACHMENTS"),
                            ("max_attachment_bytes", "ARCHMAX_MAX_ATTACHMENT_BYTES")):  # fmt: skip
            raw = (env.get(name) or "").strip()
            if raw:
                if not raw.isdigit():
                    raise ConfigurationError(f"{name}={raw!r} is not a non-negative integer", setting=name)
                values[field] = int(raw)
        return cls.model_construct(**values)  # each value checked above: no schema to build at start-up

    def check(self, firing: Firing, *, session_id: str | None = None) -> None:
        """Refuse a firing whose files exceed a cap; writes nothing.

        Raises:
            AttachmentLimitError: too many files, or too many bytes in all.
        """
        files = firing.files or {}
        if len(files) > self.max_attachments:
            raise AttachmentLimitError("attachments", self.max_attachments, len(files), session_id=session_id)
        total = sum(len(f.content.encode("utf-8") if isinstance(f.content, str) else f.content) for f in files.values())
        if total > self.max_attachment_bytes:
            raise AttachmentLimitError("attachment_bytes", self.max_attachment_bytes, total, session_id=session_id)
