"""How a reply to what we sent finds its session: our ids as aliases, and the signed ``Reply-To``.

Rule source: issue 12 item 2. :func:`archmax.inbound.email.parse_email` threads a mail on its
headers alone (References root, In-Reply-To, own Message-ID). A reply whose client kept only
``In-Reply-To: <our Message-ID>`` (or the id SES sent our mail under) has a root no session is
named after; a reply whose client dropped every threading header has only its own id. This step
re-points such a mail's ``conversation_id`` at the session, from two records we keep:

1. the signed reply token in a recipient address (``<local>+<token>@<domain>``): proof the mail
   answers a message we sent for that session (a guessed or forged token proves nothing and is
   ignored);
2. the aliases: each id in ``References`` (root first) and ``In-Reply-To`` is looked up among the
   ids we sent under (at most :data:`MAX_LOOKUPS` of them).

Otherwise the firing is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from archmax.inbound.email_ids import normalise_message_id
from archmax.outbound.aliases import AliasIndex
from archmax.session.firing import Firing

MAX_LOOKUPS = 12
"""Alias lookups per mail: the References root, the newest ids and In-Reply-To (a chain can be long)."""

TokenSession = Callable[[Iterable[str]], str | None]
"""``recipient addresses -> session id`` of the first valid signed reply token, else ``None``."""


def _candidates(variables: dict) -> list[str]:
    """The ids to look up, as keys: the variables quote ids as written (issue 20 item 7)."""
    references = [r for r in variables.get("references") or [] if isinstance(r, str)]
    parent = variables.get("in_reply_to")
    ids = references[:1] + references[1:][-(MAX_LOOKUPS - 2) :] + ([parent] if isinstance(parent, str) else [])
    return list(dict.fromkeys(k for k in map(normalise_message_id, ids) if k is not None))


def thread_reply(
    firing: Firing,
    *,
    aliases: AliasIndex | None,
    token_session: TokenSession | None = None,
    recipients: Iterable[str] = (),
) -> Firing:
    """The firing of a parsed mail, its ``conversation_id`` pointed at the session it answers.

    Args:
        firing: :func:`~archmax.inbound.email.parse_email`'s firing (variables ``to``, ``references``,
            ``in_reply_to``, ``conversation_id``).
        aliases: The ids we sent under, or ``None``.
        token_session: Reads a signed reply token from addresses (:mod:`archmax.inbound.reply_token`), or
            ``None`` when no reply secret is configured.
        recipients: Envelope recipients besides the mail's ``To`` (the SES receipt's).

    Returns:
        The same firing, or a copy whose ``conversation_id`` names the session and whose warnings say why.

    Raises:
        StoreError: the alias index could not be read (retryable).
    """
    variables = dict(firing.variables)
    addresses = [a for a in [*(variables.get("to") or []), *recipients] if isinstance(a, str)]
    found, why = None, ""
    if token_session is not None:
        found = token_session(addresses)
        why = "its signed Reply-To address"
    if found is None and aliases is not None:
        for candidate in _candidates(variables):
            found = aliases.get(candidate)
            if found is not None:
                why = f"<{candidate}>, an id we sent a message of it under"
                break
    if found is None or found == variables.get("conversation_id"):
        return firing
    variables["conversation_id"] = found
    warning = f"threaded to session '{found}' by {why}"
    return firing.model_copy(update={"variables": variables, "warnings": [*firing.warnings, warning]})
