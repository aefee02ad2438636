"""The engine: the turn loop and the firing operations that drive it (DESIGN.md §2).

A firing reaches a session through :mod:`archmax.engine.operations` (send, deliver, reply, decide,
invoke, resolve_session; BEHAVIOUR.md §3), which runs :mod:`archmax.engine.loop` (model call →
governed tool calls → model call … until the session finishes or parks; BEHAVIOUR.md §5, §8). The
engine never imports boto3 (DESIGN.md §1).
"""
