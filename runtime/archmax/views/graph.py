"""The workflow's state graph as inline SVG, laid out by grandalf's Sugiyama layout.

Rule source: issue 15 item 1 (the graph drawn by a well-kept layout library, no hand-written
layout; the current state and the path taken highlighted; human and terminal states distinct)
and BEHAVIOUR.md §9.5 (``graph.json {states, edges}`` is the same graph).

Why grandalf: the page is also served by the resolve Lambda function, whose layer holds Python
wheels only. Graphviz's ``dot`` is a system binary (neither in Lambda nor on a developer's machine
without root); grandalf is pure Python (one small dependency, pyparsing), ships a py3 wheel, and
implements the same layered (Sugiyama) layout ``dot`` uses. This module only sizes the boxes,
asks grandalf where they go, and writes the SVG elements.

Marks in the SVG (stable, for people and tests): each state is ``<g class="state ..."
data-state="<slug>">`` with the classes ``human``/``agent``, ``terminal``, ``visited`` and
``current`` (``aria-current="step"``); each edge is ``<g class="edge[ taken]" data-from=...
data-to=...>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from archmax.views.story import GraphEdge, GraphState

CHAR_W = 7.6
"""Approximate width of one character of the 13px label font, in SVG units."""
BOX_H = 34.0
PAD = 24.0
GAP = 40.0
"""Horizontal space between separately laid-out parts of the graph."""


class _Box:
    """What grandalf reads of a vertex (``w``, ``h``) and writes back (``xy``, the centre)."""

    def __init__(self, w: float, h: float) -> None:
        self.w, self.h = w, h
        self.xy = (0.0, 0.0)


class _Route:
    """What grandalf writes for an edge: the polyline through its dummy vertices."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float]] = []

    def setpath(self, points: list[tuple[float, float]]) -> None:
        self.points = [(float(x), float(y)) for x, y in points]


def _width(slug: str) -> float:
    return max(90.0, len(slug) * CHAR_W + 30.0)


def _roots(component: Any, order: list[str]) -> list[Any]:
    """The layout's top vertices: the first state of every group nothing outside it leads into.

    A group is a strongly connected component of the graph, its first state the first in document
    order.

    Grandalf ranks only what its roots reach and needs every edge into a root to close a loop from
    it; the first state of the workflow is on top unless another state leads into it.
    """
    index = {id(v): order.index(v.data) for v in component.sV}
    group: dict[int, int] = {}  # vertex -> its strongly connected component (Tarjan)
    low: dict[int, int] = {}
    seen: dict[int, int] = {}
    stack: list[Any] = []

    def visit(v: Any) -> None:
        seen[id(v)] = low[id(v)] = len(seen)
        stack.append(v)
        for w in (e.v[1] for e in v.e_out()):
            if id(w) not in seen:
                visit(w)
                low[id(v)] = min(low[id(v)], low[id(w)])
            elif id(w) not in group:
                low[id(v)] = min(low[id(v)], seen[id(w)])
        if low[id(v)] == seen[id(v)]:
            while True:
                w = stack.pop()
                group[id(w)] = seen[id(v)]
                if w is v:
                    break

    for v in sorted(component.sV, key=lambda v: index[id(v)]):
        if id(v) not in seen:
            visit(v)
    entered = {group[id(e.v[1])] for e in component.sE if group[id(e.v[0])] != group[id(e.v[1])]}
    firsts: dict[int, Any] = {}
    for v in sorted(component.sV, key=lambda v: index[id(v)]):
        if group[id(v)] not in entered:
            firsts.setdefault(group[id(v)], v)
    return list(firsts.values())


def layout(
    states: Sequence[GraphState], edges: Sequence[GraphEdge]
) -> tuple[dict[str, _Box], dict[int, _Route], float, float]:
    """Place every state and route every edge.

    Returns:
        ``(boxes by slug, routes by edge index, width, height)``; coordinates start at ``PAD``.
        Self-loops get no route (they are drawn beside their box).
    """
    from grandalf.graphs import Edge, Graph, Vertex  # imported here: only a page pays for the layout library
    from grandalf.layouts import SugiyamaLayout

    vertices = {s.slug: Vertex(s.slug) for s in states}
    boxes: dict[str, _Box] = {}
    for slug, v in vertices.items():
        v.view = boxes.setdefault(slug, _Box(_width(slug), BOX_H))
    routes: dict[int, _Route] = {}
    graph_edges = []
    for i, e in enumerate(edges):
        if e.source == e.target or e.source not in vertices or e.target not in vertices:
            continue
        edge = Edge(vertices[e.source], vertices[e.target], data=i)
        edge.view = routes.setdefault(i, _Route())
        graph_edges.append(edge)
    graph = Graph(list(vertices.values()), graph_edges)
    x_offset, height = PAD, 0.0
    order = [s.slug for s in states]
    for component in sorted(graph.C, key=lambda c: min(order.index(v.data) for v in c.sV)):
        sug = SugiyamaLayout(component)
        sug.xspace, sug.yspace = 30, 46
        sug.init_all(roots=_roots(component, order))
        sug.draw(3)
        xs = [v.view.xy[0] - v.view.w / 2 for v in component.sV]
        ys = [v.view.xy[1] - v.view.h / 2 for v in component.sV]
        dx, dy = x_offset - min(xs), PAD - min(ys)
        for v in component.sV:
            v.view.xy = (v.view.xy[0] + dx, v.view.xy[1] + dy)
        for e in component.sE:
            e.view.points = [(x + dx, y + dy) for x, y in e.view.points]
        right = max(v.view.xy[0] + v.view.w / 2 for v in component.sV)
        bottom = max(v.view.xy[1] + v.view.h / 2 for v in component.sV)
        x_offset = right + GAP + 30  # room for self-loops on the right
        height = max(height, bottom)
    return boxes, routes, x_offset - GAP + PAD, height + PAD


def _clip(centre: tuple[float, float], box: _Box, toward: tuple[float, float]) -> tuple[float, float]:
    """Where the segment from ``centre`` toward a point leaves the box's border."""
    (cx, cy), (tx, ty) = centre, toward
    dx, dy = tx - cx, ty - cy
    if dx == 0 and dy == 0:
        return centre
    sx = (box.w / 2) / abs(dx) if dx else float("inf")
    sy = (box.h / 2) / abs(dy) if dy else float("inf")
    s = min(sx, sy, 1.0)
    return cx + dx * s, cy + dy * s


def render_svg(states: Sequence[GraphState], edges: Sequence[GraphEdge]) -> str:
    """The graph as one ``<svg>`` element (no script, no external reference).

    Args:
        states: The states with their ``visited``/``current`` marks (:class:`~archmax.views.story.Story`).
        edges: The transitions with their ``taken`` marks.

    Returns:
        SVG markup; an empty string when there are no states (workflow not available).
    """
    if not states:
        return ""
    boxes, routes, width, height = layout(states, edges)
    parts = [_svg_head(width, height)]
    for i, e in enumerate(edges):
        if e.source not in boxes or e.target not in boxes:
            continue
        parts.append(_edge_svg(e, boxes[e.source], boxes[e.target], routes.get(i)))
    parts.extend(_state_svg(s, boxes[s.slug]) for s in states)
    parts.append("</svg>")
    return "".join(parts)


def _svg_head(width: float, height: float) -> str:
    """The opening ``<svg>`` tag and the two arrowhead markers (plain and taken)."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" role="img" aria-label="workflow state graph" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}">'
        "<defs>"
        '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker>'
        '<marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead taken"/></marker>'
        "</defs>"
    )


def _edge_svg(e: GraphEdge, src: _Box, dst: _Box, route: _Route | None) -> str:
    """One transition: its path from box to box (or a self-loop), its arrowhead and its title."""
    cls = "edge taken" if e.taken else "edge"
    marker = "url(#arrow-taken)" if e.taken else "url(#arrow)"
    d = _self_loop_path(src) if e.source == e.target else _edge_path(src, dst, route)
    label = f"{e.source} → {e.target}" + (f" ({e.type})" if e.type else "")
    return (
        f'<g class="{cls}" data-from="{escape(e.source)}" data-to="{escape(e.target)}">'
        f"<title>{escape(label)}</title>"
        f'<path d="{d}" marker-end="{marker}"/></g>'
    )


def _self_loop_path(box: _Box) -> str:
    """A self-loop: a small arc on the box's right side."""
    x, y = box.xy[0] + box.w / 2, box.xy[1]
    return f"M{x:.1f},{y - 8:.1f} C{x + 34:.1f},{y - 22:.1f} {x + 34:.1f},{y + 22:.1f} {x:.1f},{y + 8:.1f}"


def _edge_path(src: _Box, dst: _Box, route: _Route | None) -> str:
    """The routed polyline between two boxes, its ends clipped to the boxes' borders."""
    points = list(route.points if route is not None else []) or [src.xy, dst.xy]
    points[0] = _clip(src.xy, src, points[1] if len(points) > 1 else dst.xy)
    points[-1] = _clip(dst.xy, dst, points[-2] if len(points) > 1 else src.xy)
    return "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in points)


def _state_svg(s: GraphState, box: _Box) -> str:
    """One state: its box (a second inner border when terminal), its title and its label."""
    classes = ["state", s.type, *(["terminal"] if s.terminal else []), *(["visited"] if s.visited else [])]
    classes += ["current"] if s.current else []
    x, y = box.xy[0] - box.w / 2, box.xy[1] - box.h / 2
    current = ' aria-current="step"' if s.current else ""
    kind = "human state" if s.type == "human" else "agent state"
    extra = ", terminal" if s.terminal else ""
    radius = 17 if s.type == "human" else 4
    rect = f'<rect x="{x:.1f}" y="{y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="{radius}"/>'
    if s.terminal:  # a second, inner border: terminal states read as "ends here"
        rect += (
            f'<rect class="inner" x="{x + 3:.1f}" y="{y + 3:.1f}" width="{box.w - 6:.1f}" '
            f'height="{box.h - 6:.1f}" rx="{max(radius - 3, 2)}"/>'
        )
    return (
        f'<g class="{" ".join(classes)}" data-state="{escape(s.slug)}"{current}>'
        f"<title>{escape(s.slug)}: {kind}{extra}{', current' if s.current else ''}</title>{rect}"
        f'<text x="{box.xy[0]:.1f}" y="{box.xy[1] + 4.5:.1f}" text-anchor="middle">{escape(s.slug)}</text></g>'
    )
