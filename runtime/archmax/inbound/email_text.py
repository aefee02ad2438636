"""Email body text: HTML to text, format=flowed unwrapping, and the reply without its quoted history.

Rule source: DESIGN.md §4 "Email" (the adapter keeps the whole text and strips quoted history into
``reply_body``). Only the standard library is used (``html.parser``), so the Lambda layer gains no
dependency.
"""

from __future__ import annotations

import contextlib
import re
from html.parser import HTMLParser

# Tags whose start or end breaks a line in rendered HTML.
_BLOCK_TAGS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    ]
)
# Tags whose content is never shown to a reader.
_HIDDEN_TAGS = frozenset({"head", "script", "style", "template", "title"})


class _TextExtractor(HTMLParser):
    """Collects visible text; lines inside <blockquote> are prefixed with ``>`` like a plain-text quote."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._line: list[str] = []
        self._line_depth = 0
        self._quote_depth = 0
        self._hidden = 0
        self._pre = 0

    def _break(self, *, force: bool = False) -> None:
        """End the current line; an empty one is only kept for <br> and inside <pre> (force)."""
        text = "".join(self._line)
        text = text if self._pre else re.sub(r"[ \t\r\n\f\v]+", " ", text).strip()
        if not text and not force:
            self._line = []
            self._line_depth = self._quote_depth
            return
        prefix = "> " * self._line_depth
        self.lines.append((prefix + text).rstrip())
        self._line = []
        self._line_depth = self._quote_depth

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN_TAGS:
            self._hidden += 1
        elif tag in _BLOCK_TAGS:
            self._break(force=tag == "br" and not self._line)
            if tag == "blockquote":
                self._quote_depth += 1
                self._line_depth = self._quote_depth
            elif tag == "pre":
                self._pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self._break(force=tag == "br")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN_TAGS:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _BLOCK_TAGS:
            self._break()
            if tag == "blockquote":
                self._quote_depth = max(0, self._quote_depth - 1)
                self._line_depth = self._quote_depth
            elif tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if self._pre:
            # Preformatted text keeps its own line breaks.
            parts = data.split("\n")
            for i, part in enumerate(parts):
                if i:
                    self._break(force=True)
                self._line.append(part)
        else:
            if not self._line:
                self._line_depth = self._quote_depth
            self._line.append(data)


def html_to_text(html: str) -> str:
    r"""Visible text of an HTML body, one line per block, quotes marked with ``>``.

    Args:
        html: An HTML document or fragment (untrusted; malformed markup is tolerated).

    Returns:
        Plain text with ``\n`` line ends; runs of blank lines collapse to one; ``<blockquote>``
        content is prefixed ``> `` so :func:`strip_quoted` removes it like a plain-text quote.
    """
    parser = _TextExtractor()
    # html.parser is lenient, but hostile markup has made it raise before: keep what was read so far.
    with contextlib.suppress(Exception):
        parser.feed(html)
        parser.close()
    parser._break()
    return _collapse_blank_lines("\n".join(parser.lines)).strip("\n")


def unflow(text: str, *, delsp: bool = False) -> str:
    r"""Undo RFC 3676 ``format=flowed``: join soft-broken lines back into paragraphs.

    A line ending in a space continues on the next line at the same quote depth; the signature
    separator ``-- `` never flows. With ``delsp=yes`` the trailing space is deleted when joining.

    Args:
        text: The decoded text/plain body, ``\n`` line ends.
        delsp: The part's ``DelSp`` parameter.

    Returns:
        The text with flowed paragraphs on one line each.
    """
    out: list[str] = []
    pending: str | None = None
    pending_depth = -1
    for raw in text.split("\n"):
        depth = len(raw) - len(raw.lstrip(">"))
        line = raw[depth:]
        line = line.removeprefix(" ")  # space-stuffing (RFC 3676 §4.4)
        if pending is not None and depth != pending_depth:
            out.append(_requote(pending_depth, pending))
            pending = None
        content = line if pending is None else pending + line
        if line.endswith(" ") and line != "-- ":
            pending = content[:-1] if delsp else content
            pending_depth = depth
            continue
        pending = None
        out.append(_requote(depth, content))
    if pending is not None:
        out.append(_requote(pending_depth, pending))
    return "\n".join(out)


def _requote(depth: int, content: str) -> str:
    """A line at quote ``depth`` in the usual ``> text`` form (no trailing space on an empty line)."""
    return (">" * depth + " " + content).rstrip(" ") if depth and content else ">" * depth + content


# Verbs that end an attribution line ("On <date>, <name> wrote:"), in the languages mail clients
# ship; matched at the end of the (possibly re-joined) line, before the colon.
_VERBS = (
    r"(wrote|writes|написал|написала|написал\(а\)|пишет|a écrit|schrieb|escribió|escreveu|ha scritto|"
    r"schreef|skrev|napisał|napisała|kirjoitti|írta|yazdı|napsal|napísal|scrise|έγραψε|"
    r"כתב|كتب|写道|寫道|のメッセージ|님이 작성)"
)
_ATTRIBUTION_END = re.compile(_VERBS + r"\s*[:：]\s*$", re.IGNORECASE)
# German and Dutch put the verb before the name: "Am 14.01.2025 um 11:03 schrieb Support:".
_ATTRIBUTION_VERB = re.compile(_VERBS, re.IGNORECASE)

# How attribution lines begin: "On", its translations, or a date ("02.04.2012 14:20 ...").
_ATTRIBUTION_START = re.compile(
    r"^(on|am|le|el|il|op|em|den|dne|w dniu|в|\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|\d{4}年)\b",
    re.IGNORECASE,
)
_ORIGINAL_MESSAGE = re.compile(
    r"^\s*-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|mensaje original|"
    r"исходное сообщение|forwarded message)\s*-{2,}\s*$",
    re.IGNORECASE,
)
_OUTLOOK_FROM = re.compile(r"^\s*\**(from|von|de|от)\s*:\**\s", re.IGNORECASE)
_OUTLOOK_SENT = re.compile(r"^\s*\**(sent|date|gesendet|envoyé|enviado|отправлено)\s*:", re.IGNORECASE)
_UNDERSCORES = re.compile(r"^\s*_{10,}\s*$")


def strip_quoted(text: str) -> str:
    r"""The new text of a reply: quoted history removed.

    Removed: every line starting with ``>``; and everything from the first history marker onward,
    where a marker is an attribution line (``On <date>, <name> wrote:`` and its translations,
    including one wrapped over two lines), ``-----Original Message-----`` /
    ``----- Original Message -----`` (and translations), or an Outlook header block (``From:``
    followed within four lines by ``Sent:``/``Date:``, optionally after a line of underscores).

    Args:
        text: The decoded body, ``\n`` line ends.

    Returns:
        The remaining text with leading/trailing blank lines and trailing spaces removed; ``""``
        when nothing new was written.
    """
    lines = text.split("\n")
    cut = _history_start(lines)
    kept = [line.rstrip() for line in lines[:cut] if not line.lstrip().startswith(">")]
    return _collapse_blank_lines("\n".join(kept)).strip("\n")


def _history_start(lines: list[str]) -> int:
    """Index of the first line of quoted history, or ``len(lines)``."""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(">"):
            continue
        start = _marker_at(lines, i, stripped)
        if start is not None:
            return start
    return len(lines)


def _marker_at(lines: list[str], i: int, stripped: str) -> int | None:
    """Where the history starts when line ``i`` (``stripped``) marks it, else ``None``.

    Markers: an original-message separator, an Outlook header block (with the line of underscores
    above it), a one-line attribution, or a line ending like an attribution (see :func:`_wrapped_start`).
    """
    if _ORIGINAL_MESSAGE.match(stripped):
        return i
    if _OUTLOOK_FROM.match(stripped) and _outlook_block_follows(lines, i):
        if i > 0 and _UNDERSCORES.match(lines[i - 1]):
            return i - 1
        return i
    if _ATTRIBUTION_START.match(stripped) and stripped.endswith(":") and _ATTRIBUTION_VERB.search(stripped):
        return i
    if _ATTRIBUTION_END.search(stripped):
        return _wrapped_start(lines, i, stripped)
    return None


def _wrapped_start(lines: list[str], i: int, stripped: str) -> int | None:
    """Where an attribution ending on line ``i`` starts: the line before when it wraps, else ``i``, else ``None``.

    ``None`` when the line only ends like one: it neither starts like an attribution nor is followed by a quote.
    """
    previous = lines[i - 1].strip() if i > 0 else ""
    # A wrapped attribution: "On Tue, Bob <bob@x>" / "wrote:" or a date line / "<addr> написал:".
    wrapped = previous and not previous.startswith(">") and not _ATTRIBUTION_START.match(stripped)
    if wrapped and (_ATTRIBUTION_START.match(previous) or previous.endswith(("<", ","))):
        return i - 1
    if _ATTRIBUTION_START.match(stripped) or _quote_follows(lines, i):
        return i
    return None


def _outlook_block_follows(lines: list[str], i: int) -> bool:
    """Whether a ``Sent:``/``Date:`` header line follows the ``From:`` at ``i`` within four lines."""
    return any(_OUTLOOK_SENT.match(line) for line in lines[i + 1 : i + 5])


def _quote_follows(lines: list[str], i: int) -> bool:
    """Whether the next non-blank line after ``i`` is a ``>`` quote."""
    for line in lines[i + 1 :]:
        if line.strip():
            return line.lstrip().startswith(">")
    return False


def _collapse_blank_lines(text: str) -> str:
    return re.sub(r"\n[ \t]*(\n[ \t]*)+\n", "\n\n", text)
