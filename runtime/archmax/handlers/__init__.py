"""The logic of the four Lambda handlers (send, deliver, resolve, timer), shared with ``archmax serve``.

``functions/<name>/app.py`` builds collaborators from the environment (:mod:`archmax.hosting.wiring`),
calls ``build(collaborators)`` once at import, and wraps the result in Powertools' logger,
metrics and tracer. Rule source: DESIGN.md §4, CONVENTIONS.md "Thin handlers".
"""
