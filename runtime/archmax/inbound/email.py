"""Raw email (RFC 5322 / MIME bytes) -> :class:`~archmax.session.firing.Firing`.

Rule source: DESIGN.md §4 "Email" (conversation id from the thread, ``reply_body`` without quoted
history, the whole text kept, attachments placed as session files) and the seed, "Sessions: which
session does this event belong to?" (an email trigger's ``session: conversation_id``) and "Files
handed to a session" (files as variable -> {name, content}).

Parsing uses the standard library (``email.parser.BytesParser`` with ``email.policy.default``).
Real mail is often broken, so every header is read defensively: a header that defeats the parser
falls back to its raw text, and :func:`parse_email` never raises on malformed input.
"""

from __future__ import annotations

import codecs
import email.policy
import hashlib
import mimetypes
import re
from collections.abc import Collection, Mapping
from email.message import Message
from email.parser import BytesParser
from email.policy import EmailPolicy
from typing import Any, cast

from archmax.inbound.addresses import usable_address
from archmax.inbound.caps import AttachmentCaps
from archmax.inbound.email_ids import message_ids_in, normalise_message_id, thread_root
from archmax.inbound.email_text import html_to_text, strip_quoted, unflow
from archmax.session.firing import FileIn, Firing

TRIGGER_RECEIVED = "email_received"
"""Default trigger of a message that replies to nothing (starts a conversation)."""
TRIGGER_REPLY = "email_reply"
"""Default trigger of a message whose In-Reply-To or References holds a usable id."""

MAX_FILENAME_BYTES = 255
"""BEHAVIOUR.md §9.5: an attachment name over 255 UTF-8 bytes is refused, so names are cut to fit."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_FOLD = re.compile(r"\r?\n(?=[ \t])")


def parse_email(
    raw: bytes,
    *,
    trigger: str | None = None,
    known_message_ids: Mapping[str, str] | Collection[str] | None = None,
    caps: AttachmentCaps | None = None,
) -> Firing:
    r"""Turn one raw email into a firing for the session of its conversation.

    Conversation id: the thread root, i.e. the first usable id in ``References``, else in
    ``In-Reply-To``, else the message's own ``Message-ID`` (see
    :func:`archmax.inbound.email_ids.thread_root`; ids the host already knows win, and a
    newest-first References list is read reversed). Ids reach the variables as written (brackets and
    folding whitespace stripped, case kept: a reply quotes them so, issue 20 item 7); the
    conversation id and the delivery id are their keys (the domain lowercased, the local part
    kept, :func:`~archmax.inbound.email_ids.normalise_message_id`). With two ``Message-ID``
    headers, the **last** usable one wins: relays and forwarders prepend headers, so the one nearest
    the body is the one the sender's client wrote, and replies quote that one. A message with no
    usable id at all gets ``mail-<first 32 hex of sha256(raw)>``: fresh, but the same for a
    redelivered copy, so the duplicate lands on the same session and is de-duplicated there.

    Args:
        raw: The message exactly as received (SES stores it in S3 this way); any bytes are accepted.
        trigger: The firing's trigger id. Default: ``email_reply`` when In-Reply-To or References
            holds a usable id, else ``email_received`` (an empty ``In-Reply-To:`` does not count).
        known_message_ids: Optional host knowledge for threading: a mapping of normalised
            Message-ID -> conversation id already filed, or a collection of ids that are
            conversation ids. Joins threads the headers alone cannot (typos, In-Reply-To cycles).
        caps: Attachment caps (issue 13 item 5). Attachments past ``max_attachments``, or that would
            take the total past ``max_attachment_bytes``, are refused: not decoded, not handed on,
            named in ``warnings`` and in the ``attachments_refused`` variable. ``None``: the defaults.

    Returns:
        A :class:`Firing` with

        * ``variables``: ``conversation_id`` (str), ``message_id`` (str | None, as written), ``from``
          (the sender's address; None when the mail names none or several, str | None), ``to``
          (list[str] of the To header's RFC 5322 addresses; one with an encoded-word or otherwise
          unusable is left out and warned), ``subject`` (decoded str, ``""`` if absent), ``body``
          (every inline text/plain or text/html part in order, HTML reduced to text, one
          alternative per multipart/alternative with plain text preferred, a blank line between
          parts; ``\n`` line ends), ``reply_body`` (body without quoted history), ``in_reply_to``
          (first usable id as written, or None), ``references`` (list[str] as written, header
          order), ``body_charset`` (the codec the first text part was read with, see
          :func:`decode_text`; None without a body);
        * ``files``: ``attachment_1``, ``attachment_2``, ... -> :class:`FileIn` with a safe basename
          (the runtime re-validates names, BEHAVIOUR.md §9.5) and the decoded bytes: every part
          with ``Content-Disposition: attachment`` or a file name, whatever its type or
          disposition, and inline text parts that are neither plain nor HTML;
        * ``attachments_refused`` (only when caps refused some): ``{"count", "reason"}``;
        * ``message``: ``reply_body``, else ``body``, else a line naming the attachments, else the
          subject (a mail that is only a subject still says something), else None;
        * ``delivery_id``: the normalised Message-ID, else the sha256 hex of ``raw``;
        * ``trigger`` as above; ``warnings``: one sentence per oddity worked around.

    Raises:
        TypeError: if ``raw`` is not bytes-like. Nothing else: malformed mail degrades instead.

    Example:
        >>> firing = parse_email(open("02-reply.eml", "rb").read())  # doctest: +SKIP
        >>> firing.variables["conversation_id"], firing.variables["reply_body"]  # doctest: +SKIP
        ('3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org', "It's ORD-1001.")
    """
    raw = _as_bytes(raw)
    warnings: list[str] = []
    digest = hashlib.sha256(raw).hexdigest()
    msg = BytesParser(policy=email.policy.default).parsebytes(_headers_first(raw, warnings))

    # Ids as written go to the variables (a reply quotes them so, issue 20 item 7); their
    # normalised forms are only keys: the conversation id and the delivery id.
    message_id = _own_message_id(msg, warnings)
    in_reply_to, references = _threading_ids(msg, warnings)
    own_key = normalise_message_id(message_id) if message_id else None
    root = thread_root(own_key, _keys(in_reply_to), _keys(references), _known_keys(known_message_ids))
    warnings.extend(root.warnings)
    conversation_id = root.conversation_id
    if conversation_id is None:
        conversation_id = _fresh_conversation(digest, warnings)

    texts, file_parts = _split_parts(msg)
    body, charset = _body(texts, warnings)
    reply_body = strip_quoted(body)
    files, refused = _attachments(file_parts, warnings, caps or AttachmentCaps())

    variables: dict[str, Any] = {
        "conversation_id": conversation_id,
        "message_id": message_id,
        "from": _sender(msg, warnings),
        "to": _addresses(msg, "To", warnings),
        "subject": _subject(msg, warnings),
        "body": body,
        "reply_body": reply_body,
        "in_reply_to": in_reply_to[0] if in_reply_to else None,
        "references": references,
        "body_charset": charset,
    }
    if refused:
        variables["attachments_refused"] = refused
    if trigger is None:
        trigger = TRIGGER_REPLY if (in_reply_to or references) else TRIGGER_RECEIVED
    return Firing(
        trigger=trigger,
        variables=variables,
        files=files,
        message=_message_of(reply_body, body, files, variables["subject"]),
        delivery_id=own_key or digest,
        warnings=warnings,
    )


def _as_bytes(raw: Any) -> bytes:
    """``raw`` as ``bytes``; anything not bytes-like is a TypeError (the one error parse_email raises)."""
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"parse_email takes the raw message as bytes, not {type(raw).__name__}")
    return bytes(raw)


def _own_message_id(msg: Message, warnings: list[str]) -> str | None:
    """The mail's own Message-ID as written: with several, the last usable one (the sender's), warned."""
    own_ids = [i for value in _raw_values(msg, "Message-ID") for i in message_ids_in(value, as_written=True)]
    message_id = own_ids[-1] if own_ids else None
    if len(own_ids) > 1:
        warnings.append(
            f"{len(own_ids)} Message-ID values; the last one, <{message_id}>, was used "
            "(the one nearest the body is the sender's; relays prepend theirs)"
        )
    return message_id


def _threading_ids(msg: Message, warnings: list[str]) -> tuple[list[str], list[str]]:
    """The usable ids of In-Reply-To and of References, as written; a header holding none is warned."""
    in_reply_to = _ids_of(msg, "In-Reply-To", warnings)
    references = _ids_of(msg, "References", warnings)
    for name, ids in (("In-Reply-To", in_reply_to), ("References", references)):
        if _raw_values(msg, name) and not ids:
            warnings.append(f"{name} is present but holds no usable message id; it was ignored")
    return in_reply_to, references


def _fresh_conversation(digest: str, warnings: list[str]) -> str:
    """The conversation of a mail with no usable id: ``mail-`` and the raw bytes' digest (a redelivery lands on it)."""
    conversation_id = f"mail-{digest[:32]}"
    warnings.append(f"no usable Message-ID, In-Reply-To or References: started a fresh conversation {conversation_id}")
    return conversation_id


def _message_of(reply_body: str, body: str, files: Mapping[str, FileIn], subject: str) -> str | None:
    """What the mail says: the reply, else the body, else a line naming the attachments, else the subject."""
    message = reply_body if reply_body.strip() else (body.strip() or None)
    if message is None and files:
        # An email that is only attachments still says something: it must be able to open a turn.
        names = ", ".join(f.name for f in files.values())
        message = f"(The email has no text; it carries {len(files)} attachment(s): {names}.)"
    if message is None and subject.strip():
        message = subject.strip()  # a subject-only mail: the subject is what it says
    return message


# --- headers -------------------------------------------------------------------------------------

_LEADING_BLANK = re.compile(rb"(?:[ \t]*\r?\n)+(?=[!-9;-~]+[ \t]*:)")


def _headers_first(raw: bytes, warnings: list[str]) -> bytes:
    """The message without blank lines before its header block (some relays and archives write one).

    The parser would otherwise read an empty header block and the whole message as its body. Only
    blank lines followed by a ``Name:`` header line are dropped; anything else is left as it was.
    """
    match = _LEADING_BLANK.match(raw)
    if match is None:
        return raw
    lines = match.group(0).count(b"\n")
    warnings.append(f"{lines} blank line(s) before the header block were skipped")
    return raw[match.end() :]


def _clean(text: str) -> str:
    """Undo the parser's surrogate escapes (8-bit bytes in headers) without ever failing."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _raw_values(msg: Message, name: str) -> list[str]:
    """Every raw value of header ``name`` (case-insensitive), unfolded, in file order."""
    wanted = name.lower()
    return [_clean(_FOLD.sub("", value)).strip() for key, value in msg.raw_items() if key.lower() == wanted]


def _ids_of(msg: Message, name: str, warnings: list[str]) -> list[str]:
    """Usable ids across every ``name`` header as written, in order, without duplicates; skipped tokens warned."""
    ids: list[str] = []
    for value in _raw_values(msg, name):
        skipped: list[str] = []
        seen = set(_keys(ids))
        ids.extend(i for i in message_ids_in(value, skipped, as_written=True) if normalise_message_id(i) not in seen)
        warnings.extend(f"{name}: skipped the malformed id {token!r}" for token in skipped)
    return ids


def _known_keys(
    known: Mapping[str, str] | Collection[str] | None,
) -> Mapping[str, str] | Collection[str] | None:
    """The host's known ids keyed like the candidates they are matched with (a host may file ids as written)."""
    if not known:
        return known
    if isinstance(known, Mapping):
        return {
            key: value for raw, value in known.items() if isinstance(raw, str) and (key := normalise_message_id(raw))
        }
    return {key for raw in known if isinstance(raw, str) and (key := normalise_message_id(raw))}


def _keys(ids: list[str]) -> list[str]:
    """The normalised forms of usable ids written as they came (each one normalises)."""
    return [k for k in map(normalise_message_id, ids) if k is not None]


def _subject(msg: Message, warnings: list[str]) -> str:
    """The decoded Subject (RFC 2047 words decoded), or its raw text if decoding fails."""
    raw = _raw_values(msg, "Subject")
    if not raw:
        return ""
    try:
        value = msg["Subject"]
        return _clean(str(value)).strip() if value is not None else raw[0]
    except Exception:  # noqa: BLE001 — the stdlib header parser has crash bugs on hostile input
        warnings.append("the Subject header could not be decoded; its raw text was kept")
        return raw[0]


def _sender(msg: Message, warnings: list[str]) -> str | None:
    """The mail's one sender: the single From address, else ``None``.

    A mail naming several From addresses (two From headers, or a list in one) has no single sender
    to trust: the participant rule (issue 13 item 1) then sees none, so such a mail is quarantined
    by an existing session instead of being judged by whichever address came first.
    """
    senders = _addresses(msg, "From", warnings)
    if len(senders) > 1:
        warnings.append(
            f"the mail names {len(senders)} From addresses ({', '.join(senders[:3])}): no sender is trusted"
        )
        return None
    return senders[0] if senders else None


def _addresses(msg: Message, name: str, warnings: list[str]) -> list[str]:
    """Addresses (``local@domain`` strings) of every ``name`` header, in order.

    The stdlib parser is used when it reports no defect. Otherwise the raw text is split by hand:
    it misreads a display name that is itself an address (``alice@example.com <bob@example.com>``
    gives alice, where every mail client shows and answers bob).
    """
    found: list[str] = []
    for value in _raw_values(msg, name):
        try:
            # parse_email parses with email.policy.default, an EmailPolicy: it has the header factory
            header = cast(EmailPolicy, msg.policy).header_factory(name, value)
            parsed = [a.addr_spec for a in header.addresses if a.addr_spec and a.addr_spec != "<>"]
            trusted = not header.defects and parsed
        except Exception:  # noqa: BLE001 — fall back to the raw header text
            parsed, trusted = [], False
        if not trusted:
            parsed = _addresses_by_hand(value)
            warnings.append(f"the {name} header is malformed; addresses were read from its raw text")
        for address in parsed:
            if not usable_address(address):
                warnings.append(f"the {name} header's {address!r} is not a usable address; it was left out")
            elif address not in found:
                found.append(address)
    return found


def _addresses_by_hand(value: str) -> list[str]:
    """Addresses of a raw address-list: per top-level comma entry, the last ``<...@...>``, else a bare word with ``@``."""
    entries: list[str] = []
    current: list[str] = []
    depth, quoted = 0, False
    for ch in value:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "<(":
            depth += 1
        elif not quoted and ch in ">)":
            depth = max(0, depth - 1)
        if ch == "," and not quoted and depth == 0:
            entries.append("".join(current))
            current = []
        else:
            current.append(ch)
    entries.append("".join(current))
    found = []
    for entry in entries:
        angle = re.findall(r"<\s*([^<>\s]+@[^<>\s]+)\s*>", entry)
        if angle:
            found.append(angle[-1])
            continue
        bare = re.sub(r'"[^"]*"|\([^()]*\)', " ", entry)
        words = [w.strip(";:<>") for w in bare.split() if "@" in w]
        if words:
            found.append(words[-1])
    return [a for a in found if not _CONTROL.search(a)]


# --- body ----------------------------------------------------------------------------------------


BODY_SUBTYPES = ("plain", "html")
"""Text parts that are read into the body; any other inline text part (a calendar, a CSV) is a file."""


def _split_parts(msg: Message) -> tuple[list[Message], list[Message]]:
    """The mail's parts in order: the inline text parts that make the body, and the parts that are files.

    Issue 20 items 9 and 10: every inline ``text/plain`` or ``text/html`` part reaches the body, in
    order (iOS Mail's text / photo / text, a digest's messages), one alternative of each
    ``multipart/alternative`` (plain text preferred); a part with a file name, or with
    ``Content-Disposition: attachment``, is a file whatever its type (``text/plain; name=notes.txt``,
    ``message/rfc822; name=original.eml``).
    """
    texts: list[Message] = []
    files: list[Message] = []

    def walk(part: Message, *, files_only: bool = False) -> None:
        named = part.get_content_disposition() == "attachment" or _filename(part)
        if named and part.get_content_maintype() != "multipart":  # a multipart is a container, never a file
            files.append(part)
            return
        if part.is_multipart():
            children = (
                [c for c in part.get_payload() if isinstance(c, Message)]
                if isinstance(part.get_payload(), list)
                else []
            )
            chosen = _alternative(children) if part.get_content_type() == "multipart/alternative" else None
            for child in children:
                walk(child, files_only=files_only or (chosen is not None and child is not chosen))
            return
        maintype, subtype = part.get_content_maintype(), part.get_content_subtype()
        if maintype == "text" and subtype in BODY_SUBTYPES:
            if not files_only:
                texts.append(part)
        elif maintype == "text" and not files_only:
            files.append(part)
        # an unnamed inline non-text part (an image the HTML shows by cid) is neither body nor file

    walk(msg)
    return texts, files


def _alternative(children: list[Message]) -> Message | None:
    """The alternative read as the body: plain text, else a multipart holding one, else HTML, else the first."""
    for wanted in ("text/plain", "multipart", "text/html"):
        for child in children:
            kind = child.get_content_maintype() if wanted == "multipart" else child.get_content_type()
            if kind == wanted and child.get_content_disposition() != "attachment":
                return child
    return children[0] if children else None


def _body(texts: list[Message], warnings: list[str]) -> tuple[str, str | None]:
    r"""The body: every text part's text in order, a blank line between two; and the first part's codec."""
    read = [_body_text(part, warnings) for part in texts]
    if not read:
        return "", None
    pieces = [text.rstrip("\n") + "\n\n" for text, _ in read[:-1]] + [read[-1][0]]
    return "".join(pieces), read[0][1]


def _body_text(part: Message, warnings: list[str]) -> tuple[str, str | None]:
    r"""Decoded text of the body part (``\n`` line ends; HTML reduced to text; flowed text unwrapped) and its codec."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:  # noqa: BLE001 — an unknown transfer encoding: the raw payload as text
        payload = None
    if isinstance(payload, bytes):
        text, charset = decode_text(payload, part.get_content_charset(), warnings)
    else:
        text, charset = str(part.get_payload() or ""), None
    text = _clean(text).replace("\r\n", "\n").replace("\r", "\n")
    if part.get_content_subtype() == "html":
        return html_to_text(text), charset
    if str(part.get_param("format", "")).lower() == "flowed":
        text = unflow(text, delsp=str(part.get_param("delsp", "")).lower() == "yes")
    return text, charset


def _strict(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


ASCII_LABELS = frozenset({"ascii"})
"""Codecs that say nothing about 8-bit bytes: a body labelled so that holds them is read as unlabelled."""


def decode_text(data: bytes, label: str | None, warnings: list[str]) -> tuple[str, str]:
    """Decode a text part whose declared charset may lie.

    Order (issue 20 item 8):

    1. the declared charset, strictly; but valid UTF-8 that the label reads differently is UTF-8
       (valid multi-byte UTF-8 is almost never another charset by accident, while a client
       labelling UTF-8 as ``big5`` or ``iso-8859-1`` happens);
    2. bytes the declared charset cannot read: UTF-8 when they are valid UTF-8 (a wrong label),
       else the declared charset with U+FFFD for the bad bytes, as mail clients show it (one bad
       byte must not turn a Russian mail into CJK by guessing), as long as the bad sequences are
       no more than the non-ASCII characters it reads (otherwise the body is in another charset);
    3. no label, ``us-ascii`` (which says nothing of 8-bit bytes), an unknown one, or a body
       mostly in another charset: charset-normalizer's best guess, last UTF-8 with replacement
       characters.

    Each fallback is recorded in ``warnings``.

    Args:
        data: The part's bytes, transfer encoding already undone.
        label: The declared charset (``None``: ``us-ascii``, RFC 2045).
        warnings: Appended to when the label was not used as is.

    Returns:
        ``(text, codec)``: ``codec`` is Python's name of the codec used (``utf-8``, ``big5``, ``cp1251``).
    """
    label = (label or "us-ascii").strip().lower()
    try:
        codec: str | None = codecs.lookup(label).name
    except LookupError:
        codec = None
    utf8 = _strict(data, "utf-8")
    if codec is not None:
        text = _strict(data, codec)
        if text is not None and (utf8 is None or utf8 == text):
            return text, codec
    if utf8 is not None:
        warnings.append(f"the body is labelled {label!r} but is UTF-8; it was read as UTF-8")
        return utf8, "utf-8"
    if codec is not None and codec not in ASCII_LABELS:
        text = data.decode(codec, "replace")
        bad = text.count("\ufffd")
        read = sum(1 for ch in text if ord(ch) > 127) - bad
        if bad <= read:  # a few bad bytes in text the label reads: not a body in another charset
            warnings.append(f"the body has {bad} byte sequence(s) that are not {label!r}; they read as U+FFFD")
            return text, codec
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is not None:
        warnings.append(f"the body is neither {label!r} nor UTF-8; charset-normalizer read it as {best.encoding}")
        return str(best), best.encoding
    warnings.append(f"the body is neither {label!r} nor UTF-8 and no charset fits; read as UTF-8 with replacements")
    return data.decode("utf-8", "replace"), "utf-8"


# --- attachments ---------------------------------------------------------------------------------


def _filename(part: Message) -> str | None:
    try:
        name = part.get_filename()
    except Exception:  # noqa: BLE001 — a broken RFC 2231 parameter is just a missing name
        return None
    return _clean(str(name)) if name else None


def _attachments(
    parts: list[Message], warnings: list[str], caps: AttachmentCaps
) -> tuple[dict[str, FileIn], dict[str, Any] | None]:
    """The file parts (:func:`_split_parts`) as ``attachment_<n>`` -> FileIn, numbered from 1 in order, within ``caps``.

    Returns:
        The files, and ``{"count", "reason"}`` of the attachments the caps refused (else None).
    """
    files: dict[str, FileIn] = {}
    total, over_count, over_bytes = 0, 0, 0
    for part in parts:
        if len(files) >= caps.max_attachments:
            over_count += 1  # counted, never decoded: a 500-part mail costs no more than the cap
            continue
        try:
            if part.get_content_maintype() == "message":
                inner = part.get_payload()
                content = cast(Message, inner[0]).as_bytes() if isinstance(inner, list) and inner else b""
            else:
                content = cast(bytes, part.get_payload(decode=True) or b"")  # a leaf part decodes to bytes
        except Exception:  # noqa: BLE001 — keep the raw payload rather than drop the file
            content = _clean(str(part.get_payload())).encode("utf-8")
            warnings.append("an attachment could not be decoded; its raw payload was kept")
        if total + len(content) > caps.max_attachment_bytes:
            over_bytes += 1
            continue
        total += len(content)
        n = len(files) + 1
        name = safe_filename(_filename(part), fallback=f"attachment-{n}", content_type=part.get_content_type())
        files[f"attachment_{n}"] = FileIn(name=name, content=content)
    reasons = []
    if over_count:
        reasons.append(f"{over_count} over the cap of {caps.max_attachments} attachments per mail")
    if over_bytes:
        reasons.append(f"{over_bytes} over the cap of {caps.max_attachment_bytes} attachment bytes per firing")
    if not reasons:
        return files, None
    reason = "attachments refused: " + "; ".join(reasons)
    warnings.append(reason)
    return files, {"count": over_count + over_bytes, "reason": reason}


def safe_filename(name: str | None, *, fallback: str, content_type: str | None = None) -> str:
    r"""Reduce an untrusted attachment name to a safe single file name.

    The name is cut to its last path component (``/`` and ``\`` both separate), control characters
    are dropped, surrounding whitespace removed, and the result cut to 255 UTF-8 bytes keeping the
    extension. An empty result, ``.`` or ``..`` becomes ``fallback`` plus an extension guessed from
    ``content_type``. The result always passes :func:`archmax.stores.base.check_relative_path` as a
    single segment (BEHAVIOUR.md §9.5), which the runtime checks again when it places the file.

    Args:
        name: The filename as sent (already RFC 2047/2231-decoded), or None.
        fallback: The stem to use when nothing of ``name`` survives (``attachment-1``).
        content_type: The part's MIME type, for the fallback's extension.

    Returns:
        A non-empty name with no ``/``, ``\`` or control character.
    """
    base = re.split(r"[/\\]", name or "")[-1]
    base = _CONTROL.sub("", base).strip()
    if base in ("", ".", ".."):
        extension = mimetypes.guess_extension(content_type or "") or ""
        base = fallback + extension
    if len(base.encode("utf-8")) > MAX_FILENAME_BYTES:
        stem, dot, extension = base.rpartition(".")
        if not dot or not stem or len(extension.encode("utf-8")) > 16:
            stem, extension = base, ""
        budget = MAX_FILENAME_BYTES - len(extension.encode("utf-8")) - (1 if extension else 0)
        stem = stem.encode("utf-8")[:budget].decode("utf-8", "ignore")
        base = f"{stem}.{extension}" if extension else stem
    return base
