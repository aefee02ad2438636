"""Inbound event adapters: API Gateway, raw email and SES, EventBridge → :class:`~archmax.session.firing.Firing`.

Each adapter turns one untrusted event into a firing for the hosting layer (DESIGN.md §4), refusing
what it cannot use or, for real-world mail, reading broken headers defensively; none of them runs a turn.
"""
