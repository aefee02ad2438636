"""Which addresses a reply may be sent from or to (RFC 5322 addr-specs, never an encoded-word).

Rule source: issue 20 item 11. Shared by the mail adapter (which leaves unusable addresses out of
``to``/``from``) and the outbound MIME builder (which refuses them), so it depends on nothing.
"""

from __future__ import annotations

import re

_ATOM = r"[^\s\x00-\x1f\x7f()<>\[\]:;@\\,.\"]+"
_ADDR_SPEC = re.compile(
    rf'^(?:{_ATOM}(?:\.{_ATOM})*|"(?:[^"\\\r\n]|\\.)*")@(?:{_ATOM}(?:\.{_ATOM})*|\[[^\[\]\\\s]*\])$'
)
_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=")


def usable_address(address: str) -> bool:
    """Whether ``address`` is an RFC 5322 addr-spec a reply can be sent from or to.

    Refused: anything but ``local@domain`` with a dot-atom or quoted local part and a dot-atom or
    literal domain, and any RFC 2047 encoded-word (RFC 2047 §5: never inside an addr-spec; a
    malformed ``To`` read by hand yields ``=?utf-8?q?Support?=@example.com``, issue 20 item 11).
    """
    return bool(_ADDR_SPEC.match(address)) and not _ENCODED_WORD.search(address)
