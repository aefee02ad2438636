"""The state graph's SVG: grandalf places every state, marks survive into the markup (issue 15 item 1)."""

from __future__ import annotations

import itertools
import re

from archmax.views.graph import layout, render_svg
from archmax.views.story import GraphEdge, GraphState

STATES = [
    GraphState(slug="intake", type="agent", terminal=False, visited=True),
    GraphState(slug="clarify", type="agent", terminal=False, visited=True, current=True),
    GraphState(slug="review", type="human", terminal=False),
    GraphState(slug="answer", type="agent", terminal=True),
    GraphState(slug="island", type="agent", terminal=True),  # reachable from nowhere: its own component
]
EDGES = [
    GraphEdge(source="intake", target="clarify", taken=True),
    GraphEdge(source="clarify", target="review"),
    GraphEdge(source="review", target="clarify", type="refine"),  # a cycle
    GraphEdge(source="review", target="answer", type="approve"),
    GraphEdge(source="clarify", target="clarify"),  # a self-loop
]


def test_every_state_gets_a_box_and_no_two_boxes_overlap():
    boxes, routes, width, height = layout(STATES, EDGES)
    assert set(boxes) == {s.slug for s in STATES}
    for a, b in itertools.combinations(boxes.values(), 2):
        apart_x = abs(a.xy[0] - b.xy[0]) >= (a.w + b.w) / 2
        apart_y = abs(a.xy[1] - b.xy[1]) >= (a.h + b.h) / 2
        assert apart_x or apart_y
    for box in boxes.values():
        assert 0 <= box.xy[0] - box.w / 2 and box.xy[0] + box.w / 2 <= width
        assert 0 <= box.xy[1] - box.h / 2 and box.xy[1] + box.h / 2 <= height
    assert boxes["intake"].xy[1] < boxes["clarify"].xy[1] < boxes["answer"].xy[1]  # layered top to bottom
    assert all(len(routes[i].points) >= 2 for i in range(4))


def test_the_svg_marks_the_current_state_human_and_terminal_states_and_the_taken_edge():
    svg = render_svg(STATES, EDGES)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert len(re.findall(r'aria-current="step"', svg)) == 1
    assert re.search(r'<g class="state agent visited current" data-state="clarify" aria-current="step">', svg)
    assert '<g class="state human" data-state="review">' in svg
    assert '<g class="state agent terminal" data-state="answer">' in svg
    assert len(re.findall(r'<g class="edge taken"', svg)) == 1
    assert '<g class="edge taken" data-from="intake" data-to="clarify">' in svg
    assert svg.count('<g class="edge') == len(EDGES)
    assert "http://" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_no_states_draws_nothing():
    assert render_svg([], []) == ""


def test_slugs_are_escaped():
    svg = render_svg([GraphState(slug='a"<b', type="agent", terminal=True)], [])
    assert 'data-state="a&quot;&lt;b"' in svg and '<b"' not in svg


def test_a_first_state_that_another_state_leads_into_is_drawn_below_it():
    # The demo's workflow: `s` first in the document, `triage -> s`. Grandalf used to crash ranking it.
    states = [
        GraphState(slug="s", type="agent", terminal=True),
        GraphState(slug="triage", type="agent", terminal=False),
    ]
    boxes, _, _, _ = layout(states, [GraphEdge(source="triage", target="s")])
    assert boxes["triage"].xy[1] < boxes["s"].xy[1]


def test_a_loop_that_leads_into_the_first_state_is_drawn_in_full():
    states = [
        GraphState(slug="done", type="agent", terminal=True),
        GraphState(slug="ask", type="agent", terminal=False),
        GraphState(slug="check", type="agent", terminal=False),
    ]
    edges = [
        GraphEdge(source="ask", target="check"),
        GraphEdge(source="check", target="ask"),
        GraphEdge(source="check", target="done"),
    ]
    svg = render_svg(states, edges)
    assert {m for m in re.findall(r'data-state="([^"]+)"', svg)} == {"done", "ask", "check"}
