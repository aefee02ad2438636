"""Message-ID handling for email threading: normalise ids, read them out of headers, find the root.

Rule source: the seed, "Sessions: which session does this event belong to?" (an email trigger reads
the mail conversation id) and DESIGN.md §4 "Email" (References root, then In-Reply-To, then the
message's own Message-ID, normalised). The conversation id becomes a session id, so every id this
module returns has passed :func:`archmax.session.ids.validate_session_id`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from archmax.errors import InvalidSessionIdError
from archmax.session.ids import validate_session_id

_BRACKETED = re.compile(r"<([^<>]*)>")
_WHITESPACE = re.compile(r"\s+")
# Characters that can never be part of a msg-id, even a sloppy one (RFC 5322 §3.6.4 excludes
# specials outside the domain literal; quotes and brackets here only mean a broken header).
_FORBIDDEN = re.compile(r'[<>"\x00-\x1f\x7f-\x9f]')


def message_id_as_written(token: str) -> str | None:
    """One Message-ID token as its sender wrote it, without brackets and folding whitespace, or None.

    This is the form outgoing headers quote (issue 20 item 7: ids are quoted as written, never
    rewritten). :func:`normalise_message_id` is its key form, for session keys and de-duplication.

    Args:
        token: One id as written, with or without ``<``/``>``, possibly folded across lines.

    Returns:
        The id with case kept, or None when :func:`normalise_message_id` finds it unusable.
    """
    text = _WHITESPACE.sub("", token).removeprefix("<").removesuffix(">")
    return text if normalise_message_id(text) is not None else None


def normalise_message_id(token: str) -> str | None:
    """Normalise one Message-ID token, or return None when it is not usable.

    Normalisation strips angle brackets and every whitespace character (a folded id is one id),
    lowercases the domain part (after the last ``@``) and keeps the local part's case, because
    RFC 5322 makes domains case-insensitive and leaves local parts to their owner. The result is a
    key (session ids, de-duplication, alias lookups); headers we send quote
    :func:`message_id_as_written` instead.

    Args:
        token: One id as written, with or without ``<``/``>``, possibly folded across lines.

    Returns:
        The normalised id (``"B9ebWRD-000123-3K@example.com"``), or None when the token is empty,
        has an empty local or domain part around its ``@``, holds a quote, bracket or control
        character, or is not a valid session id (BEHAVIOUR.md §4.1: e.g. a ``..`` segment).
        An id without any ``@`` is accepted unchanged: broken mailers send them, and replies quote
        them back verbatim, so refusing them would only break the thread.
    """
    text = _WHITESPACE.sub("", token)
    text = text.removeprefix("<").removesuffix(">")
    if not text or _FORBIDDEN.search(text):
        return None
    local, at, domain = text.rpartition("@")
    if at:
        if not local or not domain:
            return None
        text = f"{local}@{domain.lower()}"
    try:
        validate_session_id(text)
    except InvalidSessionIdError:
        return None
    return text


def message_ids_in(header_text: str | None, skipped: list[str] | None = None, *, as_written: bool = False) -> list[str]:
    """Every usable id in one header value (References, In-Reply-To, Message-ID), in order.

    Ids are the ``<...>`` groups of the value; text between them (commas, comments, phrases like
    ``"Your message of ..."``) is ignored, and an unclosed ``<...`` is skipped as invalid. A value
    with no brackets at all falls back to its whitespace-separated words that contain ``@``.
    Duplicates are dropped (first occurrence kept).

    Args:
        header_text: The raw header value, folded or unfolded; None or empty gives ``[]``.
        skipped: If given, every token that was left out as invalid (including an unclosed
            ``<...``) is appended to it, as written.
        as_written: Return each id as written (:func:`message_id_as_written`) rather than
            normalised; duplicates are still judged on the normalised form.

    Returns:
        Normalised ids (see :func:`normalise_message_id`), or ids as written; invalid tokens are left out.
    """
    if not header_text:
        return []
    # Unfold first so that "<invalid.\r\n something@bar.net>" reads as one bracketed group.
    text = re.sub(r"\r?\n", "", header_text)
    if "<" in text or ">" in text:
        tokens = _BRACKETED.findall(text)
        leftover = _BRACKETED.sub(" ", text)
        if skipped is not None and "<" in leftover:
            skipped.append(leftover[leftover.index("<") :].strip())
    else:
        tokens = [word.strip(",;") for word in text.split() if "@" in word]
    ids: dict[str, str] = {}
    for token in tokens:
        normalised = normalise_message_id(token)
        if normalised is None:
            if skipped is not None:
                skipped.append(token)
        elif normalised not in ids:
            ids[normalised] = (message_id_as_written(token) or normalised) if as_written else normalised
    return list(ids.values())


@dataclass
class ThreadRoot:
    """Which conversation a message belongs to, and why."""

    conversation_id: str | None
    """The thread root's normalised id; None when the message has nothing to thread on."""
    source: str
    """``known``, ``references``, ``in_reply_to``, ``message_id`` or ``none``."""
    warnings: list[str] = field(default_factory=list)
    """Human-readable notes on what was odd (reversed References, self-references, ...)."""


def thread_root(
    message_id: str | None,
    in_reply_to: Sequence[str],
    references: Sequence[str],
    known_message_ids: Mapping[str, str] | Collection[str] | None = None,
) -> ThreadRoot:
    """Decide the conversation id of a message from its normalised threading ids.

    Order (DESIGN.md §4 "Email"):

    1. ``known_message_ids`` first: the host's own record beats what a client wrote. Candidates
       are tried root-first (References, then In-Reply-To, then the message's own id); the first
       one the host knows gives its conversation. A mapping maps a message id to the conversation
       id it was filed under; a plain collection names ids that are conversation ids themselves.
       This is what joins messages whose headers alone cannot be joined: a reply whose References
       has a typo, or an In-Reply-To cycle (each message of the loop names the other as parent, so
       the first one seen decides the conversation and the host passes it in for the second).
    2. The first id in References (the thread root, RFC 5322 §3.6.4). When References is written
       newest-first (its first entry is the In-Reply-To parent and its last is not), the list is
       read reversed, with a warning.
    3. The first id in In-Reply-To.
    4. The message's own id: it starts a conversation.

    A message never threads onto itself: its own id is dropped from References/In-Reply-To.

    Args:
        message_id: The message's own normalised id, or None.
        in_reply_to: Normalised ids from In-Reply-To, in header order.
        references: Normalised ids from References, in header order.
        known_message_ids: Optional host knowledge, as above. Values that are not valid session
            ids are ignored.

    Returns:
        A :class:`ThreadRoot`; ``conversation_id`` is None only when no id at all is usable.
    """
    warnings: list[str] = []
    own = message_id
    refs, parents = _without_own(own, in_reply_to, references, warnings)
    refs = _root_first(refs, parents, warnings)
    if known_message_ids:
        conversation = _known_root(known_message_ids, [*refs, *parents, *([own] if own else [])])
        if conversation is not None:
            return ThreadRoot(conversation, "known", warnings)
    if refs:
        return ThreadRoot(refs[0], "references", warnings)
    if parents:
        return ThreadRoot(parents[0], "in_reply_to", warnings)
    if own:
        return ThreadRoot(own, "message_id", warnings)
    return ThreadRoot(None, "none", warnings)


def _without_own(
    own: str | None, in_reply_to: Sequence[str], references: Sequence[str], warnings: list[str]
) -> tuple[list[str], list[str]]:
    """References and In-Reply-To without the message's own id (a message never threads onto itself)."""
    if own is not None and (own in references or own in in_reply_to):
        warnings.append(f"the message references its own Message-ID <{own}>; that reference was ignored")
    refs = [ref for ref in references if ref != own]
    parents = [parent for parent in in_reply_to if parent != own]
    return refs, parents


def _root_first(refs: list[str], parents: list[str], warnings: list[str]) -> list[str]:
    """References root-first: a newest-first list (parent first, root last) is reversed, with a warning.

    Also warns when In-Reply-To names a parent References does not hold (the References root wins).
    """
    if len(refs) >= 2 and parents and refs[0] == parents[0] and refs[-1] != parents[0]:
        warnings.append("References lists the parent first (newest-first order); read it reversed")
        refs = list(reversed(refs))
    if refs and parents and refs[-1] != parents[0] and parents[0] not in refs:
        warnings.append(f"In-Reply-To <{parents[0]}> is not in References; the References root <{refs[0]}> was used")
    return refs


def _known_root(known: Mapping[str, str] | Collection[str], candidates: list[str]) -> str | None:
    """The conversation of the first candidate (root first) the host already filed, else ``None``."""
    for candidate in candidates:
        conversation = _known_conversation(known, candidate)
        if conversation is not None:
            return conversation
    return None


def _known_conversation(known: Mapping[str, str] | Collection[str], candidate: str) -> str | None:
    """The conversation the host filed ``candidate`` under, if it knows it."""
    if isinstance(known, Mapping):
        value = known.get(candidate)
    else:
        value = candidate if candidate in known else None
    if not isinstance(value, str):
        return None
    try:
        return validate_session_id(value)
    except InvalidSessionIdError:
        return None
