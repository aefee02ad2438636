"""The session page and the session list, as self-contained HTML.

Rule source: issue 15 item 1 (one self-contained page: no script or font from any network; the
graph, the timeline, the conversation as a person reads it with runtime notes as runtime events,
variables with their lock, usage and estimated cost, the exit or the wait; ``/`` lists sessions).

Everything a session holds is untrusted text (mail bodies, webhook variables, the model's words):
every value goes through :func:`html.escape`, and the page carries a Content-Security-Policy that
allows no script, no connection and nothing from another origin, so even a mistake here cannot
load or run anything. The page has no script at all; tool calls fold with ``<details>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from archmax.views.graph import render_svg
from archmax.views.story import ConversationEntry, Exit, Story, TimelineEntry, Wait, compact
from archmax.views.text import entry_text, usage_line

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'"
"""The page's Content-Security-Policy (also sent as a header by the HTTP routes)."""

_STYLE = """
:root { color-scheme: light; --ink:#1d2433; --muted:#5b6577; --line:#d5dae3; --accent:#1f6feb; --warn:#b35c00;
  --ok:#1a7f37; --bad:#cf222e; --human:#fff4e0; --agent:#eef3fb; --visited:#dbe8ff; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f7f8fa; }
header, main > section { max-width: 1100px; margin: 0 auto; padding: 16px 24px; }
header { background: #fff; border-bottom: 1px solid var(--line); max-width: none; }
h1 { font-size: 20px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 16px; margin: 0 0 10px; }
.meta { color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600;
  background: #eaeef2; }
.badge.awaiting_input, .badge.awaiting_decision, .badge.running { background: #fff1d6; color: var(--warn); }
.badge.completed { background: #dafbe1; color: var(--ok); }
.badge.failed, .badge.rejected { background: #ffebe9; color: var(--bad); }
.status-line { margin-top: 8px; font-size: 15px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
svg.graph { max-width: 100%; height: auto; }
svg.graph .state rect { fill: var(--agent); stroke: #8a96a8; stroke-width: 1.2; }
svg.graph .state.human rect { fill: var(--human); stroke: #c98a2b; }
svg.graph .state rect.inner { fill: none; }
svg.graph .state.visited rect:first-of-type { fill: var(--visited); }
svg.graph .state.current rect:first-of-type { stroke: var(--accent); stroke-width: 3.5; }
svg.graph .state text { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; fill: var(--ink); }
svg.graph .state.current text { font-weight: 700; }
svg.graph .edge path { fill: none; stroke: #9aa4b2; stroke-width: 1.3; }
svg.graph .edge.taken path { stroke: var(--accent); stroke-width: 2.6; }
svg.graph .arrowhead { fill: #9aa4b2; } svg.graph .arrowhead.taken { fill: var(--accent); }
.legend { color: var(--muted); font-size: 12px; margin-top: 6px; }
ol.timeline { list-style: none; margin: 0; padding: 0; }
ol.timeline li { display: grid; grid-template-columns: 11.5em 7.5em minmax(0, 1fr); gap: 8px; padding: 5px 0;
  border-bottom: 1px dashed var(--line); }
ol.timeline li > * { min-width: 0; overflow-wrap: anywhere; }
time { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; color: var(--muted); }
.scroll { overflow-x: auto; }
@media (max-width: 640px) {
  header, main > section { padding: 12px 12px; }
  .card { padding: 10px 10px; }
  ol.timeline li { grid-template-columns: minmax(0, 1fr); gap: 2px; }
  .msg, details.tool { max-width: 100%; }
}
.kind { font-weight: 600; text-transform: uppercase; font-size: 12px; letter-spacing: .03em; }
.kind.park { color: var(--warn); } .kind.delivery, .kind.decision { color: var(--accent); }
.kind.completed { color: var(--ok); } .kind.failed, .kind.rejected, .kind.on_error, .kind.raised { color: var(--bad); }
.kind.quarantined, .kind.stopped { color: var(--warn); }
ul.held { list-style: none; margin: 0; padding: 0; }
ul.held li { padding: 6px 0; border-bottom: 1px dashed var(--line); overflow-wrap: anywhere; }
ul.held li.released { color: var(--muted); }
.notice { margin-top: 6px; padding: 4px 10px; border-left: 3px solid var(--warn); background: #fffaf0; }
.conversation { display: flex; flex-direction: column; gap: 10px; }
.msg { max-width: 80%; border-radius: 10px; padding: 8px 12px; white-space: pre-wrap; word-wrap: break-word;
  border: 1px solid var(--line); }
.msg.person { align-self: flex-start; background: #fff; }
.msg.agent { align-self: flex-end; background: #e7f0ff; }
.msg.agent.handoff { border-color: var(--warn); }
.msg .who { display: block; font-size: 12px; color: var(--muted); white-space: normal; margin-bottom: 2px; }
.runtime { align-self: center; max-width: 90%; font-size: 13px; color: var(--muted); border-left: 3px solid #c98a2b;
  background: #fffaf0; padding: 4px 10px; white-space: pre-wrap; word-wrap: break-word; }
details.tool { align-self: flex-end; max-width: 80%; font-size: 13px; color: var(--muted); }
details.tool pre { white-space: pre-wrap; word-wrap: break-word; background: #f3f4f6; padding: 6px 8px; border-radius: 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
td code { white-space: pre-wrap; word-break: break-word; }
.grid { display: grid; gap: 16px; }
a { color: var(--accent); }
"""


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>\n"
    )


def readable(at: str) -> str:
    """An instant as a person reads it: ``2026-12-02T06:46:05.123Z`` → ``2026-12-02 06:46:05 UTC``.

    Any other text (an instant the record did not write in that form) is shown as it is.
    """
    if (
        len(at) >= 20
        and at[10] == "T"
        and at.endswith("Z")
        and at[:19].replace("-", "").replace(":", "").replace("T", "").isdigit()
    ):
        return f"{at[:10]} {at[11:19]} UTC"
    return at


def _time(at: str | None) -> str:
    """A ``<time>``: the readable instant, the exact one in ``datetime`` (and as a tooltip)."""
    if not at:
        return "<time>—</time>"
    return f'<time datetime="{escape(at)}" title="{escape(at)}">{escape(readable(at))}</time>'


def _status_line(story: Story) -> str:
    """The status line under the title: the wait, the exit, or who holds a running session."""
    w, x = story.wait, story.exit
    if w is not None and w.channel == "input":
        return _input_wait_line(w)
    if w is not None:
        return _decision_wait_line(w)
    if x is not None:
        return _exit_line(x, story.position)
    return _running_line(story)


def _input_wait_line(w: Wait) -> str:
    due = f" · resume_at {_time(w.resume_at)}" if w.resume_at else ""
    return (
        f"Waiting since {_time(w.since)} for <strong>input</strong> in <code>{escape(w.state)}</code>: "
        f"{escape(w.reason or '')}{due}"
    )


def _decision_wait_line(w: Wait) -> str:
    choices = ", ".join(f"<code>{escape(t['to'])}</code>" for t in w.transitions)
    evidence = f" · evidence: {escape(', '.join(w.evidence))}" if w.evidence else ""
    return (
        f"Waiting since {_time(w.since)} for <strong>a person's decision</strong> at "
        f"<code>{escape(w.state)}</code> (choices: {choices}){evidence}"
    )


def _exit_line(x: Exit, position: str | None) -> str:
    if x.code:
        detail = f": {escape(x.code or '')} — {escape(x.reason or '')}"
    else:
        detail = f": {escape(x.reason)}" if x.reason else ""
    return (
        f"<strong>{escape(x.status.capitalize())}</strong> at {_time(x.at)} in <code>{escape(position or '')}</code>"
        f"{detail}"
    )


def _running_line(story: Story) -> str:
    r = story.running
    if r is not None and r.stopped:
        return (
            f"<strong>Running</strong> in <code>{escape(story.position or '')}</code>, but its turn stopped part-way "
            f"after the last commit {_time(story.updated_at)}: nothing holds it; the sweep finishes the turn."
            + (f" Failure not yet routed: {escape(r.failure)}" if r.failure else "")
        )
    if r is not None:
        return (
            f"<strong>Running</strong> in <code>{escape(story.position or '')}</code>: a turn holds it until "
            f"{_time(r.lease_until)} (last commit {_time(story.updated_at)}); if that turn's process died, the sweep "
            "can take the session over from then on."
        )
    return f"Running in <code>{escape(story.position or '')}</code> (last commit {_time(story.updated_at)})"


def _held(story: Story) -> str:
    """The quarantine card: every held mail (and the released ones), who sent it, why and when.

    One block per mail rather than a table row: ids and reasons are long, and a phone is narrow.
    """
    if not story.held:
        return ""
    items = "".join(
        f'<li class="held-mail{" released" if m.released_at else ""}" data-delivery-id="{escape(m.delivery_id)}">'
        f"<div><strong>{escape(m.sender or 'unknown sender')}</strong> · held since {_time(m.quarantined_at)} · "
        + (f"released {_time(m.released_at)}" if m.released_at else '<span class="kind quarantined">held</span>')
        + "</div>"
        + (f'<div class="subject">{escape(m.subject)}</div>' if m.subject else "")
        + f'<div class="why">{escape(m.reason)}</div>'
        f'<div class="meta">id <code>{escape(m.delivery_id)}</code></div></li>'
        for m in story.held
    )
    count = sum(1 for m in story.held if m.released_at is None)
    return (
        f'<section id="held"><h2>Held mail ({count} in quarantine)</h2><div class="card"><ul class="held">{items}</ul>'
        f'<p class="meta">An operator releases one with <code>archmax quarantine release '
        f"{escape(story.session_id)} &lt;id&gt;</code>; it is then applied once.</p></div></section>"
    )


def _timeline(entries: Iterable[TimelineEntry]) -> str:
    rows = [
        f'<li class="entry {escape(e.kind)}" data-kind="{escape(e.kind)}">{_time(e.at)}'
        f'<span class="kind {escape(e.kind)}">{escape(e.kind.replace("_", " "))}</span>'
        f"<span>{_with_times(entry_text(e), e.resume_at)}</span></li>"
        for e in entries
    ]
    return f'<ol class="timeline">{"".join(rows)}</ol>' if rows else "<p class=meta>Nothing has happened yet.</p>"


def _with_times(text: str, instant: str | None) -> str:
    """``text`` escaped, with ``instant`` (a ``resume_at`` it names) shown as a readable ``<time>``."""
    shown = escape(text)
    return shown.replace(escape(instant), _time(instant)) if instant else shown


def _said(e: ConversationEntry) -> str:
    if e.role == "runtime":
        return (
            f'<div class="runtime" data-note="{escape(e.note or "")}">{_time(e.at)} '
            f"<strong>runtime event ({escape(e.note or '')})</strong>\n{escape(e.text)}</div>"
        )
    if e.role == "tool":
        status = f" [{escape(e.status)}]" if e.status and e.status != "success" else ""
        args = json.dumps(e.args or {}, indent=2, ensure_ascii=False, default=str)
        return (
            f'<details class="tool" data-tool="{escape(e.tool or "")}"><summary>{_time(e.at)} tool '
            f"<code>{escape(e.tool or '')}</code>{status} {escape(compact(e.args or {}, 80))}</summary>"
            f"<pre>{escape(args)}</pre><pre>{escape(e.result or '(no result)')}</pre></details>"
        )
    who = "person" if e.role == "person" else ("agent · park message" if e.handoff else "agent")
    cls = f"msg {e.role}" + (" handoff" if e.handoff else "")
    return f'<div class="{cls}"><span class="who">{escape(who)} · {_time(e.at)}</span>{escape(e.text)}</div>'


def _variables(story: Story) -> str:
    if not story.variables:
        return "<p class=meta>No variables.</p>"
    rows = "".join(
        f"<tr><th scope=row><code>{escape(name)}</code></th><td>{'locked' if v.get('locked') else ''}</td>"
        f"<td><code>{escape(compact(v.get('value'), 2000))}</code></td></tr>"
        for name, v in story.variables.items()
    )
    return (
        f'<div class="scroll"><table><thead><tr><th>name</th><th>lock</th><th>value</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def render_page(story: Story) -> str:
    """One session's page: status and wait/exit, graph, timeline, conversation, variables, usage.

    Args:
        story: :func:`~archmax.views.story.story_of` of the session.

    Returns:
        A complete HTML document (UTF-8 text) with no script and no reference to another origin.
    """
    graph = render_svg(story.states, story.edges)
    graph_html = (
        f'<div class="card">{graph}<div class="legend">Blue border: the current state. Filled: states the session '
        "stood in; blue arrows: the path it took. Rounded ends: human states; double border: terminal states.</div></div>"
        if graph
        else "<p class=meta>The workflow is not available here, so its graph is not drawn.</p>"
    )
    usage = usage_line(story) or "usage: no model call has been counted."
    held = sum(1 for m in story.held if m.released_at is None)
    body = (
        f"<header><h1>{escape(story.session_id)}</h1>"
        f'<div class="meta">workflow <code>{escape(story.workflow)}</code> · '
        f'<span class="badge {escape(story.status)}">{escape(story.status)}</span> · started {_time(story.created_at)} · '
        f"updated {_time(story.updated_at)}</div>"
        f'<div class="status-line" id="status">{_status_line(story)}</div>'
        + (f'<div class="meta">path: {escape(" → ".join(story.path))}</div>' if story.path else "")
        + (
            f'<div class="notice" id="held-count"><a href="#held">{held} held mail in quarantine</a></div>'
            if held
            else ""
        )
        + "</header><main>"
        f'<section id="graph"><h2>State graph</h2>{graph_html}</section>'
        f'<section id="timeline"><h2>Timeline</h2><div class="card">{_timeline(story.timeline)}</div></section>'
        + _held(story)
        + '<section id="conversation"><h2>Conversation</h2><div class="card conversation">'
        + "".join(_said(e) for e in story.conversation)
        + "</div></section>"
        f'<section id="variables"><h2>Variables</h2><div class="card">{_variables(story)}'
        f'<p class="meta" id="usage">{escape(usage)}</p></div></section>'
        "</main>"
    )
    return _page(f"{story.session_id} · {story.workflow}", body)


def session_href(base: str, session_id: str) -> str:
    """The page URL of a session under ``base`` (``/sessions/<percent-encoded id>/view``)."""
    return f"{base.rstrip('/')}/sessions/{quote(session_id, safe='')}/view"


def render_list(
    rows: Sequence[dict[str, Any]],
    *,
    base: str = "",
    filters: dict[str, str] | None = None,
    next_href: str | None = None,
) -> str:
    """The session list as HTML: one row per session linking to its page.

    Args:
        rows: ``SessionSummary`` dicts (JSON mode).
        base: Prefix of the links (the API's base path; ``""`` for a site root).
        filters: The filters applied, shown above the table.
        next_href: The next page's URL, when there is one.
    """
    shown = ", ".join(f"{k}={v}" for k, v in (filters or {}).items()) or "none"
    body_rows = "".join(
        f'<tr><td><a href="{escape(session_href(base, r["session_id"]))}">{escape(r["session_id"])}</a></td>'
        f"<td><code>{escape(r.get('workflow', ''))}</code></td>"
        f'<td><span class="badge {escape(r.get("status", ""))}">{escape(r.get("status", ""))}</span></td>'
        f"<td><code>{escape(r.get('state') or r.get('workflow_state') or '')}</code></td>"
        f"<td>{escape(r.get('wait_reason') or '')}</td><td>{_time(r.get('resume_at'))}</td>"
        f"<td>{_time(r.get('updated_at'))}</td></tr>"
        for r in rows
    )
    more = f'<p><a rel="next" href="{escape(next_href)}">next page</a></p>' if next_href else ""
    body = (
        f"<header><h1>Sessions</h1><div class=meta>filters: {escape(shown)} · {len(rows)} shown</div></header><main>"
        '<section><div class="card"><div class="scroll"><table><thead><tr><th>session</th><th>workflow</th>'
        "<th>status</th><th>state</th><th>waiting for</th><th>resume_at</th><th>updated</th></tr></thead>"
        f"<tbody>{body_rows}</tbody></table></div>{more}</div></section></main>"
    )
    return _page("archmax sessions", body)
